"""Time (or bandwidth) vs message size, log axes, one line per parameter value."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from commstack.report.tables import Section, units  # noqa: E402


def plot_section(section: Section, path: Path) -> Path:
    table = section.table
    data = table[table.index > 0]  # 0 bytes has no place on a log axis
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for label in data.columns:
        series = data[label].dropna()
        ax.plot(series.index, series.values, marker="o", markersize=3, label=str(label))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size [bytes]")
    ax.set_ylabel(units(section.metric) + " (trimmed mean over repeats)")
    ax.set_title(section.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
