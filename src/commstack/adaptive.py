"""Adaptive repeats: when a point has been repeated often enough.

``repeats: {min: 6, max: 30, ci: 0.05}`` runs every point ``min`` times, then in rounds (repeat
``min + 1``, ``min + 2``, ... interleaved over the points, each round in its own shuffled order)
only the points not yet precise, until ``max``. A point is precise when, at EVERY result row it
has (message size, process count, ...), the distribution-free 95 % interval of the median of its
figure of merit (commstack.stats.describe; the benchmark registry's figure, a rate's median taken
as a rate) lies within +-``ci`` of the median (Hoefler & Belli, SC15, section 4.2.2: choose the
number of measurements by the interval's width).

The decision reads only the point's records (the successful ones give the samples) and is pure
Python: it runs on a compute node. The record of the repeat after which a point stops says why
(``repeats_stopped``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from commstack import stats
from commstack.benchmarks import registry
from commstack.matrix.model import Adaptive
from commstack.store.record import Record


@dataclass(frozen=True)
class Precision:
    """The widest interval of a point's result rows, relative to its median."""

    halfwidth: float  # inf: some row has no interval (too few samples, or a zero median)
    row: str          # that row, as "Allreduce np=4 1024 B"
    samples: int      # successful repeats behind it

    def text(self) -> str:
        if not self.row:
            return "no result row with a figure of merit"
        width = (f"no interval yet ({self.samples} samples)" if math.isinf(self.halfwidth)
                 else f"±{self.halfwidth * 100:.1f} %")
        return f"{width} at {self.row}"


def precision(records: Iterable[Record], benchmark: str) -> Precision:
    """The worst relative half-width over the result rows of the successful ``records``."""
    keys = registry.row_keys(benchmark)
    samples: Dict[Tuple, List[float]] = {}
    rates: Dict[Tuple, bool] = {}
    labels: Dict[Tuple, str] = {}
    runs = 0
    for record in records:
        if not record.ok:
            continue
        runs += 1
        for row in record.parsed:
            if row.get("status", "ok") != "ok":
                continue
            figure = registry.metric_of(row, benchmark)
            if figure is None:
                continue
            key = (figure.key,) + tuple(row.get(k) for k in keys)
            samples.setdefault(key, []).append(float(row[figure.key]))
            rates[key] = not figure.lower_is_better
            labels.setdefault(key, _label(row, keys))
    worst = Precision(-1.0, "", runs)
    for key, values in samples.items():
        width = stats.describe(values, rate=rates[key]).relative_halfwidth
        if width > worst.halfwidth:
            worst = Precision(width, labels[key], runs)
    return worst if samples else Precision(math.inf, "", runs)


def stop_reason(records: Iterable[Record], benchmark: str, rule: Adaptive, last_repeat: int
                ) -> Optional[str]:
    """Why a point takes no repeat after ``last_repeat`` (None: it takes the next one), from its
    ``records`` up to that repeat."""
    worst = precision(records, benchmark)
    if worst.samples >= rule.min and worst.halfwidth <= rule.ci:
        return f"precise: {worst.text()} (the worst row) after {worst.samples} repeats"
    if last_repeat >= rule.max:
        return f"max reached: {worst.text()} after {worst.samples} successful repeats"
    return None


def within(rule: Adaptive) -> str:
    """``±5 %`` for ``ci: 0.05``."""
    return f"±{rule.ci * 100:g} %"


def _label(row: dict, keys: Tuple[str, ...]) -> str:
    parts = []
    for k in keys:
        value = row.get(k)
        if value is None:
            continue
        parts.append(f"{value} B" if k == "bytes" else str(value) if k == "benchmark"
                     else f"{k}={value}")
    return " ".join(parts) or "its one row"
