"""Aggregate repeats: trimmed mean (drop one min and one max, as the Oracle study does),
median, min, max and count, per point and result row (message size, process count, ...).

Each summary row also says how clean its runs were: ``oversubscribed`` (more processes than
cores in any of its runs), ``job_ranks`` (the job's size) and ``subrun`` (IMB ran this row at a
smaller process count inside that larger job: its idle ranks still share the cores), and the
printed resolution of its metric (``quantum``, the unit of the last digit the benchmark printed).
"""

from __future__ import annotations

import decimal
import math
import statistics
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from commstack.benchmarks import registry
from commstack.store.record import Record

# Columns of a summary row that are not parameters of the point.
SUMMARY_FIELDS = ("point_id", "metric", "lower_is_better", "n", "trimmed_mean", "median", "min",
                  "max", "quantum", "oversubscribed", "job_ranks", "subrun", "samples")


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


def print_quantum(values: Iterable[float]) -> float:
    """The unit of the last printed digit: the finest decimal step among the values (0.01 for
    IMB's "0.03"; tiny for computed values)."""
    exponents = [decimal.Decimal(repr(float(v))).as_tuple().exponent for v in values
                 if math.isfinite(v)]
    return 10.0 ** min(exponents) if exponents else 0.0


def metric_of(row: Dict[str, object], benchmark: Optional[str]) -> Optional[Tuple[str, bool]]:
    """(row key, lower is better) of the figure of merit of a result row of ``benchmark``: the
    first of the benchmark's figures present (commstack.benchmarks.registry)."""
    figure = registry.metric_of(row, benchmark)
    return (figure.key, figure.lower_is_better) if figure else None


def result_rows(records: Iterable[Record]) -> Iterator[Tuple[Record, dict]]:
    """(record, parsed row) for every row of every successful record (cartex has one row)."""
    for rec in records:
        if rec.ok:
            for item in rec.parsed:
                yield rec, item


def aggregate(records: Iterable[Record], with_samples: bool = False) -> List[Dict[str, object]]:
    """One row per (point, result row) over the successful repeats; ``with_samples`` keeps the
    repeats' values (``samples``) for decisions that need them."""
    groups: Dict[tuple, Dict[str, object]] = {}
    samples: Dict[tuple, List[float]] = {}
    by_metric: Dict[str, List[float]] = {}
    for rec, item in result_rows(records):
        if item.get("status", "ok") != "ok":
            continue
        metric = metric_of(item, rec.benchmark)
        row_keys = registry.row_keys(rec.benchmark)
        if metric is None:
            continue
        key = (rec.point_id,) + tuple(item.get(k) for k in row_keys)
        if key not in groups:
            ranks = rec.ranks
            groups[key] = {
                "point_id": rec.point_id,
                **{k: item.get(k) for k in row_keys if item.get(k) is not None},
                **rec.params,
                "metric": metric[0],
                "lower_is_better": metric[1],
                "oversubscribed": False,
                "job_ranks": ranks,
                "subrun": bool(ranks and item.get("np") and int(item["np"]) < int(ranks)),
            }
            samples[key] = []
        groups[key]["oversubscribed"] = bool(groups[key]["oversubscribed"]
                                             or rec.oversubscribed)
        value = float(item[metric[0]])
        samples[key].append(value)
        by_metric.setdefault(metric[0], []).append(value)
    quantum = {name: print_quantum(values) for name, values in by_metric.items()}
    out = []
    for key, row in groups.items():
        s = summarize(samples[key])
        out.append({**row, "n": s.n, "trimmed_mean": s.trimmed_mean, "median": s.median,
                    "min": s.min, "max": s.max, "quantum": quantum[str(row["metric"])],
                    **({"samples": samples[key]} if with_samples else {})})
    return out
