"""Read a campaign's records once for a report: the records (through ``Record.load``) and, in the
same pass, every figure of merit as one compact table of samples.

A campaign of 10,000 IMB records holds 240,000 result rows; kept as dicts in every record they
take a few hundred MB. The tables and plots need only the samples, so a record keeps its rows
only when a study section reads them (``keep_rows``: a tuning step's campaign, cartex, GASNet-EX
and the benchmarks of the GASNet-EX paper's figure); the samples of every record are in
:class:`Samples`.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from commstack.benchmarks import registry
from commstack.store.record import Record


@dataclass
class Samples:
    """One entry per result row of a successful record: its point, row keys, metric, value."""

    point_ids: List[str] = field(default_factory=list)
    key_names: List[Tuple[str, ...]] = field(default_factory=list)  # the row keys' names
    keys: List[Tuple] = field(default_factory=list)       # the row keys' values
    metrics: List[str] = field(default_factory=list)
    values: List[float] = field(default_factory=list)
    oversubscribed: List[bool] = field(default_factory=list)
    # Per point: its parameters, benchmark and job size (the first successful record's).
    points: Dict[str, Tuple[Dict[str, object], Optional[str], Optional[int]]] = field(
        default_factory=dict)


@dataclass
class Loaded:
    records: List[Record]
    samples: Samples
    newest: float  # mtime of the newest record.json (0: none)


def record_paths(root: Path) -> List[str]:
    """Every attempt's record.json in the store's order (point folder, repeat, attempt)."""
    from commstack.store.campaign import Campaign

    return [os.path.join(folder, "record.json") for *_, folder in Campaign(Path(root)).attempt_folders()]


def load(root: Path, keep_rows: Callable[[Record], bool]) -> Loaded:
    """Every record of the campaign, read in worker processes when there are many (JSON
    decoding is most of the time; the parts come back in the store's order)."""
    paths = record_paths(root)
    workers = min(os.cpu_count() or 1, len(paths) // PER_WORKER)
    if workers < 2 or os.name != "posix":
        return _load(paths, keep_rows)
    global _KEEP
    _KEEP = keep_rows  # forked workers see it; a lambda does not pickle
    chunks = [paths[i::workers] for i in range(workers)]  # interleaved: equal work
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        parts = list(pool.map(_load_chunk, chunks))
    order = {path: i for i, path in enumerate(paths)}
    return _merge(parts, [[order[p] for p in chunk] for chunk in chunks])


PER_WORKER = 2000  # records; fewer are read in this process
_KEEP: Callable[[Record], bool] = lambda record: True  # noqa: E731


def _load_chunk(paths: List[str]) -> "Loaded":
    return _load(paths, _KEEP)


def _load(paths: List[str], keep_rows: Callable[[Record], bool]) -> Loaded:
    samples = Samples()
    records: List[Optional[Record]] = []
    newest = 0.0
    for path in paths:
        try:
            newest = max(newest, os.stat(path).st_mtime)
            record = Record.load(Path(path))
        except FileNotFoundError:
            records.append(None)  # an attempt still running: no record yet
            continue
        add_samples(samples, record)
        if not keep_rows(record):
            record.parsed = []  # its numbers are in `samples`
        records.append(record)
    return Loaded(records, samples, newest)


def _merge(parts: List[Loaded], positions: List[List[int]]) -> Loaded:
    """One Loaded from the workers' parts, records in the store's order."""
    slots: List[Optional[Record]] = [None] * sum(len(p) for p in positions)
    for part, where in zip(parts, positions):
        for index, record in zip(where, part.records):
            slots[index] = record
    samples = Samples()
    for part in parts:
        for name in ("point_ids", "key_names", "keys", "metrics", "values", "oversubscribed"):
            getattr(samples, name).extend(getattr(part.samples, name))
        for point, info in part.samples.points.items():
            samples.points.setdefault(point, info)
    return Loaded(slots, samples, max((p.newest for p in parts), default=0.0))


def add_samples(samples: Samples, record: Record) -> None:
    if not record.ok or not record.parsed:
        return
    row_keys = registry.row_keys(record.benchmark)
    family = registry.BENCHMARKS.get(record.benchmark)
    figures = family.figures if family else None
    number = (int, float)
    over = bool(record.oversubscribed)
    seen = False
    for item in record.parsed:
        if item.get("status", "ok") != "ok":
            continue
        if figures is not None:  # registry.metric_of, without a call per row
            key = next((f.key for f in figures if isinstance(item.get(f.key), number)), None)
        else:
            figure = registry.metric_of(item, record.benchmark)
            key = figure.key if figure else None
        if key is None:
            continue
        samples.point_ids.append(record.point_id)
        samples.key_names.append(row_keys)
        samples.keys.append(tuple(map(item.get, row_keys)))
        samples.metrics.append(key)
        samples.values.append(float(item[key]))
        samples.oversubscribed.append(over)
        seen = True
    if seen and record.point_id not in samples.points:
        samples.points[record.point_id] = (record.params, record.benchmark, record.ranks)
