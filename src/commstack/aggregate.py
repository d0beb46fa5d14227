"""Aggregate repeats per point and result row (message size, process count, ...): the median
with its distribution-free 95 % interval (``ci_low``/``ci_high``, from order statistics; none below
six repeats; :mod:`commstack.stats`), the count, min and max, and the trimmed mean (one min and one
max dropped, as the Oracle study reports) for readers of ``summary.csv`` that want it. A rate's
median with an even count is the harmonic mean of the middle pair (the rate of the median time).

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
from typing import TYPE_CHECKING, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from commstack import stats
from commstack.benchmarks import registry
from commstack.store.record import Record

if TYPE_CHECKING:
    from commstack.sample_codes import Coded

# Columns of a summary row that are not parameters of the point.
SUMMARY_FIELDS = ("point_id", "metric", "lower_is_better", "n", "trimmed_mean", "median", "ci_low",
                  "ci_high", "min", "max", "quantum", "oversubscribed", "job_ranks", "subrun",
                  "samples", "simulated")


@dataclass
class Summary:
    n: int
    trimmed_mean: float
    median: float
    min: float
    max: float
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None


def trimmed_mean(values: Sequence[float]) -> float:
    """Mean without one minimum and one maximum; the plain mean below three values."""
    ordered = sorted(values)
    if len(ordered) >= 3:
        ordered = ordered[1:-1]
    return statistics.fmean(ordered)


def summarize(values: Sequence[float], rate: bool = False) -> Summary:
    center = stats.describe(values, rate=rate)
    return Summary(len(values), trimmed_mean(values), center.median, min(values), max(values),
                   center.low, center.high)


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


def is_subrun(record: Record, row: Dict[str, object]) -> bool:
    """IMB measured this row at a smaller process count inside the record's larger job."""
    ranks, np_ = record.ranks, row.get("np")
    return bool(ranks and np_ and int(np_) < int(ranks))  # type: ignore[call-overload]


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
                "subrun": is_subrun(rec, item),
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
        s = summarize(samples[key], rate=not row["lower_is_better"])
        out.append({**row, "n": s.n, "trimmed_mean": s.trimmed_mean, "median": s.median,
                    "ci_low": s.ci_low, "ci_high": s.ci_high,
                    "min": s.min, "max": s.max, "quantum": quantum[str(row["metric"])],
                    **({"samples": samples[key]} if with_samples else {})})
    return out


def summary_frame(point_ids: Sequence[str], key_names: Sequence[Tuple[str, ...]],
                  keys: Sequence[tuple], metrics: Sequence[str], values: Sequence[float],
                  oversubscribed: Sequence[bool],
                  points: Dict[str, Tuple[Dict[str, object], Optional[str], Optional[int]]]):
    """The rows of :func:`aggregate` as a pandas DataFrame, computed column-wise: one entry per
    sample (a result row of a successful record: its point, the names and values of its row
    keys, metric and value, whether its run was oversubscribed) and per point its parameters,
    benchmark and job size. 240,000 samples take about a second instead of ten."""
    from commstack.sample_codes import Coded

    return coded_summary_frame(Coded.of(point_ids, key_names, keys, metrics, values,
                                        oversubscribed), points)


def coded_summary_frame(samples: "Coded",
                        points: Dict[str, Tuple[Dict[str, object], Optional[str], Optional[int]]]):
    """:func:`summary_frame` of samples given as codes (:mod:`commstack.sample_codes`): they
    are grouped by those, never as a frame of one Python object per sample and key (at 2.4
    million samples that frame alone was 600 MB)."""
    import numpy as np
    import pandas as pd

    if not len(samples.value):
        return pd.DataFrame()
    from commstack.sample_codes import renumber

    _, names_here = renumber(samples.names)  # in order of first appearance
    frames = [_aggregate_part(samples if len(names_here) == 1 else
                              samples.take(np.flatnonzero(samples.names == n)),
                              list(samples.names_seen[n]), points)
              for n in names_here.tolist()]
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    quantum = {samples.metric_names[i]: print_quantum(np.unique(samples.value[
        samples.metric == i])) for i in np.unique(samples.metric).tolist()}
    out["quantum"] = out["metric"].map(quantum).astype(float)
    return out.reset_index(drop=True)


def _aggregate_part(part: "Coded", names: List[str], points) -> "object":
    import numpy as np
    import pandas as pd

    from commstack.sample_codes import objects, renumber

    # Groups: (point, key), numbered in order of first appearance.
    codes, _ = renumber(part.point.astype(np.int64) * len(part.keys) + part.key)
    value = part.value
    order = np.lexsort((value, codes))
    codes, value = codes[order], value[order]
    count = np.bincount(codes)
    start = np.r_[0, np.cumsum(count)[:-1]]
    first = np.r_[True, codes[1:] != codes[:-1]]
    last = np.r_[codes[1:] != codes[:-1], True]
    trim = (count[codes] >= 3) & (first | last)
    kept = np.bincount(codes, weights=np.where(trim, 0.0, value))
    kept_n = np.bincount(codes, weights=(~trim).astype(float))
    mid_a, mid_b = value[start + (count - 1) // 2], value[start + count // 2]
    median = (mid_a + mid_b) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        harmonic = np.where((mid_a > 0) & (mid_b > 0), 2 * mid_a * mid_b / (mid_a + mid_b), median)
    # The interval's order statistics depend on the count alone: one lookup per distinct count.
    lookup = np.zeros((int(count.max()) + 1, 2), dtype=np.int64)
    for n in np.unique(count):
        lookup[int(n)] = stats.order_statistic_ranks(int(n)) or (0, 0)
    low_rank, high_rank = lookup[count, 0], lookup[count, 1]
    has_ci = low_rank > 0
    ci_low = np.where(has_ci, value[start + np.maximum(low_rank, 1) - 1], np.nan)
    ci_high = np.where(has_ci, value[start + np.maximum(high_rank, 1) - 1], np.nan)
    over = np.bincount(codes, weights=part.over[order]) > 0
    # Each group's point, keys and metric: those of its smallest sample.
    smallest = order[start]
    head = pd.DataFrame({"point_id": objects(part.point_names)[part.point[smallest]]})
    key = part.key[smallest]
    used = np.unique(key)
    for j, column in enumerate(names):
        by_key = np.empty(len(part.keys), dtype=object)
        for u in used.tolist():
            by_key[u] = part.keys[u][j]
        # Keys that are None in every row are no column of the summary (as in :func:`aggregate`).
        if pd.notna(by_key[used]).any():
            head[column] = pd.Series(by_key[key], dtype=object)
    names = [n for n in names if n in head]
    head["metric"] = objects(part.metric_names)[part.metric[smallest]]
    head = head.assign(oversubscribed=over, n=count, trimmed_mean=kept / kept_n,
                       median=median, ci_low=ci_low, ci_high=ci_high, min=value[start],
                       max=value[start + count - 1])
    params = pd.DataFrame.from_dict({p: info[0] for p, info in points.items()}, orient="index")
    head = head.reset_index(drop=True)
    # Each row's point, as its position among the points: a parameter is taken from there.
    at, named = pd.factorize(head["point_id"])
    place = params.index.get_indexer(named)
    missing = place < 0
    for column in params.columns:  # a parameter wins over a row key of the same name
        by_point = params[column].to_numpy(dtype=object)[place]
        by_point[missing] = np.nan
        values = pd.Series(by_point[at], index=head.index, dtype=params[column].dtype)
        head[column] = values.where(values.notna(), head[column]) if column in head else values
    metric, metric_names = pd.factorize(head["metric"])
    lower = np.array([registry.lower_is_better(m) for m in metric_names], dtype=bool)
    head["lower_is_better"] = lower[metric]
    head["median"] = np.where(~lower[metric] & (count % 2 == 0), harmonic, median)
    job_ranks = pd.DataFrame({"job_ranks": {p: i[2] for p, i in points.items()}})["job_ranks"]
    ranks = pd.Series(job_ranks.reindex(named).to_numpy()[at], index=head.index)
    head["job_ranks"] = ranks
    np_ = pd.to_numeric(head["np"], errors="coerce") if "np" in head else None
    head["subrun"] = (False if np_ is None else
                      ((np_ < pd.to_numeric(ranks, errors="coerce")) & (np_ > 0)).to_numpy())
    tail = ["metric", "lower_is_better", "oversubscribed", "job_ranks", "subrun", "n",
            "trimmed_mean", "median", "ci_low", "ci_high", "min", "max"]
    first = ["point_id"] + [n for n in names if n in head and n not in params.columns]
    return head[first + [c for c in head.columns if c not in first and c not in tail] + tail]
