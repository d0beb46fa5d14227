"""The log axes of commstack's figures: message sizes on base 2, times on base 10, plain tick
labels (``0.6``, ``2``, ``1K`` bytes, never ``6×10⁻¹``), and the alpha of the band of a median's
95 % interval. The report's plots, the studies' figures and a tune's tuned-vs-default plot draw
on them."""

from __future__ import annotations

import math
from typing import Iterable

import matplotlib
from matplotlib.artist import Artist
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D
from matplotlib.markers import TICKLEFT, TICKRIGHT
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from commstack.plain_number import plain

BAND_ALPHA = 0.18
GRID_ALPHA = 0.3


def size_label(value: float, _pos: object = None) -> str:
    """Bytes as 1, 2, ... 512, 1K, 2K ... 1M (K = 1024)."""
    for unit, factor in (("M", 2 ** 20), ("K", 2 ** 10)):
        if value >= factor:
            return f"{value / factor:g}{unit}"
    return f"{value:g}"


def plain_tick(value: float, _pos: object = None) -> str:
    return plain(value, 3) if value > 0 else ""


class _InViewLogLocator(LogLocator):
    """A LogLocator that returns only the ticks inside the view: matplotlib makes a tick (about
    a millisecond each) for every location, including the decade beyond each end it never
    draws."""

    def __call__(self):
        vmin, vmax = sorted(self.axis.get_view_interval())
        locs = self.tick_values(vmin, vmax)
        if vmin <= 0 or not len(locs):
            return locs
        slack = (vmax / vmin) ** 1e-6
        return locs[(locs >= vmin / slack) & (locs <= vmax * slack)]


def plain_log_axes(ax, values: Iterable[float], xbase: int = 2) -> None:
    """Log axes (x: message size, base 2; y: base 10) with plain tick labels; the y axis labels
    minor ticks too when the data span less than two decades, so that a narrow range is read."""
    ax.set_xscale("log", base=xbase)
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(_InViewLogLocator(base=xbase, numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(_InViewLogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(plain_tick))
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    decades = math.log10(max(positive) / min(positive)) if positive else 3.0
    if decades < 1:
        subs = (2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    elif decades < 2:
        subs = (2.0, 5.0)
    else:
        subs = ()
    if subs:
        ax.yaxis.set_minor_locator(_InViewLogLocator(base=10, subs=subs, numticks=12))
        ax.yaxis.set_minor_formatter(FuncFormatter(plain_tick))
        ax.tick_params(axis="y", which="minor", labelsize=7)
    else:  # unlabelled: the same marks and grid lines, drawn without a tick object each
        ax.yaxis.set_minor_locator(NullLocator())
        ax.add_artist(_MinorLogTicks(ax, GRID_ALPHA))
    ax.grid(True, which="both", alpha=GRID_ALPHA)


class _MinorLogTicks(Artist):
    """The unlabelled minor ticks of a log y axis (2 to 9 times each power of ten, none when
    the axis spans ten decades or more): their marks and grid lines, placed when drawn, as
    two artists in all where matplotlib would make a tick of five artists for each."""

    def __init__(self, ax, grid_alpha: float):
        super().__init__()
        self.set_zorder(ax.yaxis.get_zorder())
        self.set_in_layout(False)  # as the axis's own ticks: inside its tick labels
        self.locator = LogLocator(base=10, subs="auto", numticks=12)
        along = ax.get_yaxis_transform()  # x: axes fraction; y: data
        self.grid = LineCollection([], colors=matplotlib.rcParams["grid.color"],
                                   linewidths=matplotlib.rcParams["grid.linewidth"],
                                   linestyles=matplotlib.rcParams["grid.linestyle"],
                                   alpha=grid_alpha, transform=along)
        self.grid.set_clip_path(ax.patch)
        marker = {"out": TICKLEFT, "in": TICKRIGHT}.get(matplotlib.rcParams["ytick.direction"],
                                                         "_")  # as matplotlib's ticks
        self.marks = Line2D([], [], linestyle="none", transform=ax.get_yaxis_transform("tick1"),
                            clip_on=False, marker=marker,
                            markersize=matplotlib.rcParams["ytick.minor.size"],
                            markeredgewidth=matplotlib.rcParams["ytick.minor.width"],
                            color=matplotlib.rcParams["ytick.color"])
        for part in (self.grid, self.marks):
            part.set_figure(ax.figure)

    def draw(self, renderer) -> None:
        if not self.get_visible():
            return
        low, high = sorted(self.axes.get_ylim())
        locs = self.locator.tick_values(low, high) if low > 0 else []
        slack = (high / low) ** 1e-6 if low > 0 else 1.0
        locs = [y for y in locs if low / slack <= y <= high * slack]
        self.grid.set_segments([[(0.0, y), (1.0, y)] for y in locs])
        self.marks.set_data([0.0] * len(locs), locs)
        self.grid.draw(renderer)
        self.marks.draw(renderer)
        self.stale = False
