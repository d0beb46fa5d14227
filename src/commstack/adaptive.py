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
(``repeats_stopped``). A round is decided from the records of the repeats before it, so a resumed
sweep, ``status`` and ``submit`` take the decisions the first sweep took.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from commstack import stats
from commstack.benchmarks import registry
from commstack.matrix.model import Adaptive, Matrix, Point
from commstack.store.campaign import PENDING, RUNNING, Campaign
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


def stop_before(campaign: Campaign, point: Point, matrix: Matrix, repeat: int) -> Optional[str]:
    """Why ``point`` takes no repeat ``repeat`` (None: it takes it), judged on its records of the
    repeats before it."""
    assert matrix.adaptive is not None
    return stop_reason(_records_before(campaign, point.id, repeat), matrix.benchmark.name,
                       matrix.adaptive, repeat - 1)


def needs_repeat(campaign: Campaign, point: Point, matrix: Matrix, repeat: int) -> bool:
    return stop_before(campaign, point, matrix, repeat) is None


def stopped_after(campaign: Campaign, record: Record, matrix: Matrix) -> Optional[str]:
    """Why the point of ``record`` takes no repeat after it (None: it takes the next one), judged
    on its records of the repeats before and ``record`` itself (not written yet)."""
    assert matrix.adaptive is not None
    earlier = _records_before(campaign, record.point_id, record.repeat)
    return stop_reason(earlier + [record], matrix.benchmark.name, matrix.adaptive, record.repeat)


def adaptive_states(campaign: Campaign, point: Point, matrix: Matrix,
                    state: Callable[[str, int], str]) -> Tuple[List[str], Optional[str]]:
    """The states (``state(point id, repeat)``) of the repeats a point has taken or takes next,
    and why it stopped (None while it still takes repeats): its ``min`` repeats, then each later
    one run or started, then one pending when the point needs another (decided once the repeats
    before it are over)."""
    rule = matrix.adaptive
    assert rule is not None
    states = [state(point.id, r) for r in range(1, rule.min + 1)]
    for repeat in range(rule.min + 1, rule.max + 2):
        seen = state(point.id, repeat) if repeat <= rule.max else PENDING
        if seen != PENDING:
            states.append(seen)
            continue
        if PENDING in states or RUNNING in states:
            return states, None  # the rounds before are not over: the next one is not decided
        why = stop_before(campaign, point, matrix, repeat)
        if why is None:
            states.append(PENDING)
        return states, why
    return states, None


def _records_before(campaign: Campaign, point_id: str, repeat: int) -> List[Record]:
    return [r for a in campaign.attempts(point_id) if a.repeat < repeat
            for r in [a.record()] if r is not None]


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
