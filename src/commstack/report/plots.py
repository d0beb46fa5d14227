"""Time (or bandwidth) vs message size, log axes, one line per parameter value: the line is the
median over the repeats, the band around it its 95 % interval (none below six repeats). Tables of unclean runs
(oversubscribed, IMB sub-runs) are drawn dashed, with the condition in the title.

A plot never has more than :data:`MAX_LINES` lines: with more settings it draws the best few
(by the median over the message sizes of each one's ratio to the best at that size) and
the defaults, and below them a heat map of every setting per message size, with a colorbar.
Its rows are the settings, best first, each named when there are at most 60, else numbered by
rank at six even steps (#1, #21, ... of 120); its columns are the message sizes, at most 12
of them labelled.

A line of simulated numbers (its label ends ``(simulated)``, :mod:`commstack.simulated`) is
dotted, its legend entry saying so.

Tick labels are plain numbers (``0.6``, ``2``, ``1K`` bytes), never ``6×10⁻¹``
(:mod:`commstack.log_axes`)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg")
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colorbar import Colorbar  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    FixedLocator,
    FuncFormatter,
    NullLocator,
)

from commstack.benchmarks import registry  # noqa: E402
from commstack.log_axes import BAND_ALPHA, plain_log_axes, plain_tick, size_label  # noqa: E402
from commstack.report.defaults import has_default, is_default  # noqa: E402
from commstack.report.tables import BEST, MAX_LINES, Section, units  # noqa: E402
from commstack.simulated import MARK, unmarked  # noqa: E402

RANK_LABELS = 6  # rank labels (#1, #21, ...) of a heat map with too many rows to name each
# Text without FreeType's hinting: a third cheaper to lay out and draw (text is most of a
# figure's time), and as readable at these sizes.
RC = {"text.hinting": "no_hinting"}


@dataclass
class Choice:
    """Which settings (columns) a plot draws as lines, and the order of all of them."""

    shown: List[object]
    defaults: List[object]
    ranked: List[object]          # every setting, best first
    ratio: Optional[pd.DataFrame]  # per size: how far each setting is from the best (>= 1)


def label_pairs(label: object) -> List[Tuple[str, str]]:
    """``name=value`` pairs of a line label (``UCX_TLS=all, stack=ompi``)."""
    pairs = []
    for part in str(label).split(", "):
        name, eq, value = part.partition("=")
        if eq:
            pairs.append((name, value))
        elif pairs:  # a value with ", " in it
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + ", " + part)
    return pairs


def is_default_label(label: object) -> bool:
    """Every parameter of the label that has a known default is at it (others, such as the
    stack, do not count); at least one has one."""
    known = [(n, v) for n, v in label_pairs(unmarked(str(label))) if has_default(n)]
    return bool(known) and all(is_default(n, v) for n, v in known)


def choose(section: Section) -> Choice:
    """All settings when they are few; else the best :data:`BEST` by the median over the
    message sizes of the ratio to the best setting at each size, and the defaults. (Which lines
    to draw, not a verdict: no setting is called better here.)"""
    mean = section.mean[section.mean.index > 0] if section.mean.index.name == "bytes" \
        else section.mean
    columns = list(mean.columns)
    lower = registry.lower_is_better(section.metric)
    values = mean.where(mean > 0)
    best = values.min(axis=1) if lower else values.max(axis=1)
    ratio = (values.div(best, axis=0) if lower else values.rdiv(best, axis=0))
    score = ratio.median(axis=0).fillna(np.inf)
    ranked = sorted(columns, key=lambda c: (score[c], str(c)))
    if len(columns) <= MAX_LINES:
        return Choice(columns, [c for c in columns if is_default_label(c)], ranked, None)
    defaults = [c for c in ranked if is_default_label(c)][:MAX_LINES - BEST]
    shown = [c for c in ranked if c not in defaults][:MAX_LINES - len(defaults)]
    shown = shown[:max(BEST, MAX_LINES - len(defaults))]
    return Choice([c for c in ranked if c in shown or c in defaults], defaults, ranked,
                  ratio[ranked])


def compact(labels: List[object]) -> Tuple[str, List[str]]:
    """(``name, name``, [``value, value``, ...]) when every label names the same parameters in
    the same order, else ("", the labels): legends and heat-map rows name the parameters once."""
    pairs = [label_pairs(label) for label in labels]
    names = [tuple(n for n, _ in p) for p in pairs]
    if not pairs or not names[0] or len(set(names)) != 1:
        return "", [str(label) for label in labels]
    return ", ".join(names[0]), [", ".join(v for _, v in p) for p in pairs]


def plot_section(section: Section, path: Path) -> Path:
    """Lines of at most :data:`MAX_LINES` settings; with more, a heat map of every setting per
    message size below them."""
    with matplotlib.rc_context(RC):
        return _plot_section(section, path)


@dataclass
class _Kept:
    """A plot's figure and axes, emptied for the next plot of the same layout.

    A worker draws one plot after another, most of them alike: making the axes (with their
    ticks, about a millisecond each) and the colorbar anew would be a fifth of the time, and the
    renderer remembers the sizes of the texts it has laid out. What a plot adds is removed
    before the next (lines, bands, images, legend; limits and the colour cycle start again);
    what it sets (scales, tick locations and labels, texts) it sets every time, so that a plot
    looks the same whatever was drawn before it."""

    layout: Tuple[float, ...]
    fig: Figure
    ax: Axes
    hax: Optional[Axes]  # the heat map's
    bar: Optional[Colorbar] = None  # the heat map's colorbar, made with the first

    def empty(self) -> None:
        for ax in (self.ax, self.hax):
            if ax is None:
                continue
            for artist in (*ax.lines, *ax.collections, *ax.images, *ax.artists, *ax.patches,
                           *ax.texts):
                artist.remove()
            if ax.get_legend() is not None:
                ax.get_legend().remove()
            ax.set_prop_cycle(None)
            ax.relim()  # no data: the next plot's alone sets the limits
        self.fig.subplotpars.reset()
        self.fig.subplots_adjust()  # the axes where a new figure has them (tight_layout's start)


_THREAD = threading.local()  # each thread's last plot (a worker process has one thread)


def _figure(heat_height: Optional[float]) -> _Kept:
    """This thread's last figure, emptied, if its layout is this one; else a new one."""
    layout = (heat_height,) if heat_height else ()
    kept = getattr(_THREAD, "kept", None)
    _THREAD.kept = None  # until this plot is saved: one that failed half-way is not reused
    if kept is not None and kept.layout == layout:
        kept.empty()
        return kept
    if heat_height:
        fig = Figure(figsize=(10, 4.6 + heat_height), dpi=100)
        ax, hax = fig.subplots(2, 1, gridspec_kw={"height_ratios": [4.6, heat_height]})
    else:
        fig = Figure(figsize=(7, 4.5), dpi=110)
        ax, hax = fig.subplots(), None
    FigureCanvasAgg(fig)
    return _Kept(layout, fig, ax, hax)


def _plot_section(section: Section, path: Path) -> Path:
    keep = section.mean.index > 0  # 0 bytes has no place on a log axis
    mean, low, high = (f[keep] for f in (section.mean, section.low, section.high))
    dashed = not section.condition.clean
    choice = choose(section)
    heat = choice.ratio is not None
    rows = len(choice.ranked)
    kept = _figure(min(9.0, max(2.5, 0.1 * min(rows, 60) + 1.2)) if heat else None)
    fig, ax = kept.fig, kept.ax
    names, labels = compact(choice.shown) if heat else ("", [str(c) for c in choice.shown])
    shown = []
    for column, label in zip(choice.shown, labels):
        series = mean[column].dropna()
        default = column in choice.defaults
        line, = ax.plot(series.index, series.values, marker="o", markersize=3,
                        linestyle="--" if dashed else (":" if _simulated(column) else "-"),
                        linewidth=2.2 if default and heat else 1.5,
                        label=label + (" (default)" if default else ""))
        lo, hi = low[column].loc[series.index], high[column].loc[series.index]
        if (lo.notna() & hi.notna()).any():  # no interval (too few repeats): nothing to fill
            ax.fill_between(series.index, lo.values, hi.values, color=line.get_color(),
                            alpha=BAND_ALPHA, linewidth=0)
        shown += list(series.values) + [v for v in (*lo.values, *hi.values) if v == v]
    plain_log_axes(ax, shown)
    ax.set_xlabel("message size [bytes; K = 1024]")
    ax.set_ylabel(units(section.metric))
    title = section.title.replace(" — ", "\n")
    which = ""
    if choice.shown and all(_simulated(c) for c in choice.shown):
        which = "\nsimulated, not measured (dotted lines)"
    if heat:
        which += (f"\n{len(choice.shown)} of {len(choice.ranked)} settings: the best by the "
                  "median over the sizes, and the defaults")
    ax.set_title(f"{title}\nline: median; band: its 95 % interval over up to {section.repeats} "
                 f"repeats{which}", fontsize=9, color="tab:red" if dashed else "black",
                 y=1.0, pad=6)  # a fixed place: matplotlib's own search measures every tick
    if heat:
        ax.legend(fontsize=7, title=names or None, title_fontsize=7, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        _heat_map(kept, choice, section)
        fig.subplots_adjust(left=0.08, right=0.70, top=0.93, bottom=0.06, hspace=0.35)
    else:
        ax.legend(fontsize=7)
        fig.tight_layout()
    # zlib's fastest level: a third of the time of its default, files a tenth larger
    fig.savefig(path, pil_kwargs={"compress_level": 1})
    _THREAD.kept = kept
    return path


def _simulated(column: object) -> bool:
    return str(column).endswith(" " + MARK)


def _heat_map(kept: _Kept, choice: Choice, section: Section) -> None:
    ax = kept.hax
    ratio = choice.ratio
    data = ratio.to_numpy(dtype=float).T  # rows: settings, best first; columns: sizes
    top = max(float(np.nanmax(data)) if np.isfinite(data).any() else 2.0, 1.01)
    # Coloured here (missing cells transparent), not by imshow on every draw.
    colours = ScalarMappable(norm=LogNorm(vmin=1.0, vmax=top), cmap="viridis_r")
    ax.imshow(colours.to_rgba(data, bytes=True), aspect="auto", interpolation="nearest")
    sizes = list(ratio.index)
    step = max(1, math.ceil(len(sizes) / 12))  # at most 12 labels, which do not overlap
    ax.set_xticks(range(0, len(sizes), step))
    ax.set_xticklabels([size_label(s) for s in sizes[::step]], fontsize=7)
    rows = len(choice.ranked)
    names, labels = compact(choice.ranked)
    if rows <= 60:
        ax.set_yticks(range(rows))
        ax.set_yticklabels(labels, fontsize=max(4, 7 - rows // 15))
        ax.set_ylabel(names or "setting", fontsize=7)
    else:
        ticks = list(range(0, rows, math.ceil(rows / RANK_LABELS)))
        ax.set_yticks(ticks)
        ax.set_yticklabels([f"#{t + 1}" for t in ticks], fontsize=7)
        ax.set_ylabel("settings ranked by the median ratio\nover the sizes (#1: the best)", fontsize=7)
    ax.yaxis.set_label_position("right")
    ax.yaxis.tick_right()
    worse = "slower" if registry.lower_is_better(section.metric) else "lower"
    ax.set_xlabel("message size [bytes]")
    ax.set_title(f"every setting ({rows}) per message size: times {worse} than the best at that "
                 "size (1 = the best)", fontsize=8, y=1.0, pad=6)
    if kept.bar is None:
        kept.bar = ax.figure.colorbar(colours, ax=ax, location="left", fraction=0.04, pad=0.02)
    else:
        kept.bar.update_normal(colours)
    bar = kept.bar
    # rounded down: a top label rounded up would fall beyond the bar and not be drawn
    ticks = sorted({1.0, *(math.floor(top ** (k / 4) * 100) / 100 for k in range(1, 5))})
    bar.ax.yaxis.set_major_locator(FixedLocator(ticks))
    bar.ax.yaxis.set_minor_locator(NullLocator())
    bar.ax.yaxis.set_major_formatter(FuncFormatter(plain_tick))
    bar.ax.tick_params(labelsize=6)
