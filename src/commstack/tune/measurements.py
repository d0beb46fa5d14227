"""A step's measurements read from its campaigns: per candidate and message size, the metric
of every repeat; a carried incumbent's where they were made, refined sizes beside the coarse."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

from commstack.aggregate import metric_of, result_rows
from commstack.store.campaign import Campaign
from commstack.tune import sizes as coarse_sizes
from commstack.tune.carry import Carried
from commstack.tune.plan import TunePlan

REFINE = "refine"  # a step's campaign of the sizes between coarse ones (commstack.tune.sizes)


def single_benchmark(plan: TunePlan, case: Dict[str, Any]) -> Optional[str]:
    benchmark = case.get("benchmarks", (plan.base.get("parameters") or {}).get("benchmarks"))
    return benchmark if isinstance(benchmark, str) and " " not in benchmark else None


def step_data(step_dir: Path, axes: List[str], benchmark: Optional[str],
              carried: Optional[Carried], processes: Optional[Set[int]] = None,
              repeats: Optional[int] = None, refined: bool = True
              ) -> Dict[Tuple, Dict[Optional[int], List[float]]]:
    """A step's measurements (:func:`measurements`), its carried incumbent's read where they
    were made, and (``refined``) those of the sizes it refined."""
    parts = []
    if carried is not None:  # its repeats there, and those it lacked, run here
        upto = carried.repeats if repeats is None else min(repeats, carried.repeats)
        parts.append(measurements(carried.directory, axes, benchmark, processes, upto,
                                  carried.points))
    parts.append(measurements(step_dir, axes, benchmark, processes, repeats))
    refine = step_dir / REFINE
    if refined and (refine / "matrix.yaml").exists():
        parts.append(measurements(refine, axes, benchmark, processes, repeats))
    return coarse_sizes.merged(*parts)


def launched(step_dir: Path) -> int:
    """Every attempt the step's campaign holds (a run launched, whatever became of it)."""
    return sum(1 for _ in step_dir.glob("points/*/rep*.try*/record.json"))


def measurements(campaign_dir: Path, axes: List[str], benchmark: Optional[str],
                 processes: Optional[Set[int]] = None, repeats: Optional[int] = None,
                 points: Optional[FrozenSet[str]] = None
                 ) -> Dict[Tuple, Dict[Optional[int], List[float]]]:
    """Per candidate (tuple of axis values) and message size: the metric of every repeat (of
    repeats 1 to ``repeats`` when given: a race's round), taken from the rows at the largest
    process count of the case's benchmark (each record's such count is added to ``processes``
    when given); ``points``: of these points only (a carried incumbent's)."""
    found: Dict[Tuple, Dict[Optional[int], List[float]]] = {}
    by_record: Dict[str, Tuple[dict, List[dict]]] = {}
    records = Campaign(campaign_dir).records()
    if repeats is not None:
        records = (r for r in records if r.repeat <= repeats)
    if points is not None:
        records = (r for r in records if r.point_id in points)
    for rec, row in result_rows(records):
        if row.get("status", "ok") == "ok" and (
                benchmark is None or row.get("benchmark", benchmark).lower() == benchmark.lower()):
            by_record.setdefault(id(rec), (rec, []))[1].append(row)
    for rec, rows in by_record.values():
        top = max((r.get("np") or 0) for r in rows)
        if processes is not None and top:
            processes.add(top)
        key = tuple(rec.params.get(ax) for ax in axes)
        for row in rows:
            metric = metric_of(row, rec.benchmark)
            if metric is None or (row.get("np") or 0) != top:
                continue
            value = float(row[metric[0]])
            found.setdefault(key, {}).setdefault(row.get("bytes"), []).append(
                value if metric[1] else 1.0 / value)  # bandwidth: lower 1/bw is better
    return found

