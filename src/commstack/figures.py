"""Figures of merit of a campaign's records, and the dimensions that identify them.

A record's :func:`dimensions` are its parameters plus those derived for cartex sweeps, so that
swept and imported records line up; a :class:`Figure` is one result row of one point over its
repeats. Comparisons (:mod:`commstack.compare`) and reports (:mod:`commstack.report`) both build
on these; this module imports neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from commstack import stats
from commstack.aggregate import is_subrun, metric_of
from commstack.benchmarks import registry
from commstack.errors import CampaignError
from commstack.simulated import platform
from commstack.store.campaign import Campaign
from commstack.store.record import Record


def dimensions(record: Record) -> Dict[str, Any]:
    """A record's parameters plus dimensions derived for cartex sweeps, so that swept and
    imported records line up: ``toolchain`` (ompi/impi from the MPI flavour, else the stack
    name), ``decomposition`` (mpicart when ``mpicart`` is set, else hwcart), ``order`` (XYZ,
    cartex's default)."""
    spec = registry.BENCHMARKS.get(record.benchmark)
    if spec is None or spec.dimensions is None:
        return dict(record.params)
    return spec.dimensions(record.params, record)


@dataclass
class Figure:
    """One aggregated figure of merit: a point's result row over its repeats."""

    params: Dict[str, Any]
    row: Dict[str, Any]
    metric: str
    lower_is_better: bool
    samples: List[float] = field(default_factory=list)
    repeats: List[int] = field(default_factory=list)  # the repeat of each sample
    oversubscribed: bool = False  # a run had more processes than cores
    subrun: bool = False  # IMB ran this row at a smaller process count inside a larger job
    # Simulated, not measured: the record's ``simulation`` (simulator, platform, model; the
    # first of the point's records), None for a run on real nodes (commstack.simulated).
    simulation: Optional[Dict[str, Any]] = None

    @property
    def simulated(self) -> Optional[str]:
        """The platform a simulator ran these numbers on; None: measured."""
        return platform(self.simulation)

    @property
    def center(self) -> float:
        """The median over the repeats (of a rate: the rate of the median time)."""
        return stats.median(self.samples, rate=not self.lower_is_better)

    def describe(self, names: Optional[Sequence[str]] = None) -> str:
        items = {**self.row, **self.params}
        keys = names if names is not None else sorted(items)
        return ", ".join(f"{k}={items[k]}" for k in keys if k in items)


def figures(records: Iterable[Record], metric: Optional[str] = None) -> List[Figure]:
    """Figures of every successful record, grouped by point and result row."""
    groups: Dict[Tuple, Figure] = {}
    for rec in records:
        if not rec.ok:
            continue
        for item in rec.parsed:
            if item.get("status", "ok") != "ok":
                continue
            name = metric or ("time_10000_calls_s" if "time_10000_calls_s" in item
                              else (metric_of(item, rec.benchmark) or (None,))[0])
            value = item.get(name) if name else None
            if not isinstance(value, (int, float)) or math.isnan(value):
                continue
            row = {k: item[k] for k in registry.row_keys(rec.benchmark) if item.get(k) is not None}
            key = (rec.point_id, tuple(sorted(row.items())), name)
            if key not in groups:
                groups[key] = Figure(dimensions(rec), row, name,
                                     registry.lower_is_better(name))
            figure = groups[key]
            figure.samples.append(float(value))
            figure.repeats.append(rec.repeat)
            figure.oversubscribed = figure.oversubscribed or bool(rec.oversubscribed)
            figure.subrun = figure.subrun or is_subrun(rec, item)
            figure.simulation = figure.simulation or rec.simulation
    return list(groups.values())


def load_figures(root: Path, metric: Optional[str] = None) -> List[Figure]:
    campaign = Campaign(Path(root))
    if not (campaign.root / "campaign.json").is_file():
        raise CampaignError(f"{root} is not a campaign directory (no campaign.json)")
    found = figures(campaign.records(), metric)
    if not found:
        raise CampaignError(f"{root}: no successful results to compare")
    return found


def varying(figs: List[Figure]) -> List[str]:
    """Parameters and row fields that differ between figures (they identify a line)."""
    names: List[str] = []
    for f in figs:
        names += [k for k in {**f.row, **f.params} if k not in names]
    return [n for n in names
            if len({str({**f.row, **f.params}.get(n)) for f in figs}) > 1]
