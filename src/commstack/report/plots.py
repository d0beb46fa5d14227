"""Time (or bandwidth) vs message size, log axes, one line per parameter value: the line is the
trimmed mean over the repeats, the band around it their range (min..max). Tables of unclean runs
(oversubscribed, IMB sub-runs) are drawn dashed, with the condition in the title.

Tick labels are plain numbers (``0.6``, ``2``, ``1K`` bytes), never ``6×10⁻¹``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from commstack.report.numbers import plain  # noqa: E402
from commstack.report.tables import Section, units  # noqa: E402

BAND_ALPHA = 0.18


def size_label(value: float, _pos: object = None) -> str:
    """Bytes as 1, 2, ... 512, 1K, 2K ... 1M (K = 1024)."""
    for unit, factor in (("M", 2 ** 20), ("K", 2 ** 10)):
        if value >= factor:
            return f"{value / factor:g}{unit}"
    return f"{value:g}"


def _plain_tick(value: float, _pos: object = None) -> str:
    return plain(value, 3) if value > 0 else ""


def plain_log_axes(ax, values: Iterable[float], xbase: int = 2) -> None:
    """Log axes (x: message size, base 2; y: base 10) with plain tick labels; the y axis labels
    minor ticks too when the data span less than two decades, so that a narrow range is read."""
    ax.set_xscale("log", base=xbase)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=xbase, numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(_plain_tick))
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    decades = math.log10(max(positive) / min(positive)) if positive else 3.0
    if decades < 1:
        subs = (2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    elif decades < 2:
        subs = (2.0, 5.0)
    else:
        subs = ()
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=subs or "auto", numticks=12))
    ax.yaxis.set_minor_formatter(FuncFormatter(_plain_tick) if subs else NullFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.grid(True, which="both", alpha=0.3)


def plot_section(section: Section, path: Path) -> Path:
    keep = section.mean.index > 0  # 0 bytes has no place on a log axis
    mean, low, high = (f[keep] for f in (section.mean, section.low, section.high))
    dashed = not section.condition.clean
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    shown = []
    for label in mean.columns:
        series = mean[label].dropna()
        line, = ax.plot(series.index, series.values, marker="o", markersize=3,
                        linestyle="--" if dashed else "-", label=str(label))
        lo, hi = low[label].loc[series.index], high[label].loc[series.index]
        ax.fill_between(series.index, lo.values, hi.values, color=line.get_color(),
                        alpha=BAND_ALPHA, linewidth=0)
        shown += list(lo.values) + list(hi.values)
    plain_log_axes(ax, shown)
    ax.set_xlabel("message size [bytes; K = 1024]")
    ax.set_ylabel(units(section.metric))
    title = section.title.replace(" — ", "\n")
    ax.set_title(f"{title}\nline: trimmed mean; band: min–max over up to {section.repeats} "
                 "repeats", fontsize=9, color="tab:red" if dashed else "black")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
