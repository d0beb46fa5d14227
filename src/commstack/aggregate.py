"""Aggregate repeats: trimmed mean (drop one min and one max, as the Oracle study does),
median, min, max and count, per point and result row (message size, process count, ...)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

# Which parsed field is "the" figure of merit, first present wins; and whether lower is better.
METRICS: Sequence[Tuple[str, bool]] = (
    ("t_avg_us", True), ("t_us", True), ("t_ovrl_us", True), ("t_pure_us", True),
    ("mbytes_per_s", False), ("mean_s", True),
)
# Fields that identify a result row within one record (besides the point).
ROW_KEYS = ("benchmark", "np", "groups", "mode", "group", "bytes", "threads", "node")


@dataclass
class Summary:
    n: int
    trimmed_mean: float
    median: float
    min: float
    max: float


def trimmed_mean(values: Sequence[float]) -> float:
    """Mean without one minimum and one maximum; the plain mean below three values."""
    ordered = sorted(values)
    if len(ordered) >= 3:
        ordered = ordered[1:-1]
    return statistics.fmean(ordered)


def summarize(values: Sequence[float]) -> Summary:
    return Summary(len(values), trimmed_mean(values), statistics.median(values),
                   min(values), max(values))


def metric_of(row: Dict[str, object]) -> Optional[Tuple[str, bool]]:
    for name, lower_is_better in METRICS:
        if isinstance(row.get(name), (int, float)):
            return name, lower_is_better
    return None


def result_rows(records: Iterable[dict]) -> Iterator[Tuple[dict, dict]]:
    """(record, parsed row) for every row of every successful record (cartex has one row)."""
    for rec in records:
        if rec.get("status") != "ok":
            continue
        parsed = rec.get("parsed")
        for item in [parsed] if isinstance(parsed, dict) else (parsed or []):
            yield rec, item


def aggregate(records: Iterable[dict]) -> List[Dict[str, object]]:
    """One row per (point, result row) over the successful repeats."""
    groups: Dict[tuple, Dict[str, object]] = {}
    samples: Dict[tuple, List[float]] = {}
    for rec, item in result_rows(records):
        if item.get("status", "ok") != "ok":
            continue
        metric = metric_of(item)
        if metric is None:
            continue
        key = (rec["point_id"],) + tuple(item.get(k) for k in ROW_KEYS)
        if key not in groups:
            groups[key] = {
                "point_id": rec["point_id"],
                **{k: item.get(k) for k in ROW_KEYS if item.get(k) is not None},
                **rec.get("params", {}),
                "metric": metric[0],
                "lower_is_better": metric[1],
            }
            samples[key] = []
        samples[key].append(float(item[metric[0]]))
    out = []
    for key, row in groups.items():
        s = summarize(samples[key])
        out.append({**row, "n": s.n, "trimmed_mean": s.trimmed_mean, "median": s.median,
                    "min": s.min, "max": s.max})
    return out
