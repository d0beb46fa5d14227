"""Read a campaign's records once for a report: the records (through ``Record.from_dict``) and,
in the same pass, every figure of merit as one compact table of samples.

A campaign of 10,000 IMB records holds 240,000 result rows; kept as dicts in every record they
take a few hundred MB. The tables and plots need only the samples, so a record keeps its rows
only when a study section reads them (``keep_rows``: a tuning step's campaign, cartex, GASNet-EX
and the benchmarks of the GASNet-EX paper's figure); the samples of every record are in
:class:`Samples`. A schema-3 record's rows are stored as a table (``rows_table``); its samples
are read from the table's columns without making the rows.
"""

from __future__ import annotations

import contextlib
import gc
import operator
import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Hashable, Iterator, List, MutableSequence, Optional, Tuple

from commstack.benchmarks import registry
from commstack.store.record import Record, RecordError, read_json, resolved_table, table_rows

if TYPE_CHECKING:
    from commstack.sample_codes import Coded


@dataclass
class Samples:
    """One entry per result row of a successful record: its point, row keys, metric, value."""

    point_ids: List[str] = field(default_factory=list)
    key_names: List[Tuple[str, ...]] = field(default_factory=list)  # the row keys' names
    keys: List[Tuple] = field(default_factory=list)       # the row keys' values
    metrics: List[str] = field(default_factory=list)
    # The values as C doubles (array('d'): 8 bytes each, not a float object): indexed, sliced,
    # zipped and np.asarray'd as a list is.
    values: MutableSequence[float] = field(default_factory=lambda: array("d"))
    oversubscribed: List[bool] = field(default_factory=list)
    # Per point: its parameters, benchmark and job size (the first successful record's).
    points: Dict[str, Tuple[Dict[str, object], Optional[str], Optional[int]]] = field(
        default_factory=dict)
    # Per record (point, repeat, attempt): where its entries start and how many there are.
    spans: Dict[Tuple[str, int, int], Tuple[int, int]] = field(default_factory=dict)
    _coded: Optional["Coded"] = field(default=None, init=False, repr=False, compare=False)

    def coded(self) -> "Coded":
        """The samples as codes (:mod:`commstack.sample_codes`), made once when first asked
        for: ask only when every sample has been added (their values are then read in place,
        and ``values`` takes no more)."""
        from commstack.sample_codes import Coded

        if self._coded is None:
            self._coded = Coded.of(self.point_ids, self.key_names, self.keys, self.metrics,
                                   self.values, self.oversubscribed)
        return self._coded

    def mark(self, record: Record, count: int) -> None:
        """Note that the last ``count`` entries are ``record``'s (call after adding them)."""
        self.spans[run_key(record)] = (len(self.values) - count, count)

    def layout(self, record: Record) -> Optional[Tuple[Hashable, MutableSequence[float]]]:
        """The record's entries' row keys (names and values) as one key, equal for records
        whose entries have the same row keys in the same order, and their values; None when it
        added no samples."""
        span = self.spans.get(run_key(record))
        if span is None:
            return None
        start, count = span
        coded = self.coded()
        end = start + count
        return ((coded.names[start:end].tobytes(), coded.key[start:end].tobytes()),
                self.values[start:end])

    def entries(self, record: Record, names: Tuple[str, ...]) -> Optional[List[tuple]]:
        """The record's entries as tuples of the row keys ``names`` (None where an entry has
        no such key) and the figure's value last, without making rows; None when it added no
        samples."""
        span = self.spans.get(run_key(record))
        if span is None:
            return None
        start, count = span
        end = start + count
        kinds = self.key_names[start:end]
        if kinds.count(kinds[0]) == count:  # one benchmark's row keys: positions once
            where = [kinds[0].index(n) if n in kinds[0] else None for n in names]
            keys, values = self.keys[start:end], self.values[start:end]
            if None not in where and len(where) > 1:
                pick = operator.itemgetter(*where)
                return [(*pick(k), v) for k, v in zip(keys, values)]
            return [(*(None if j is None else k[j] for j in where), v)
                    for k, v in zip(keys, values)]
        out, positions = [], {}
        for i in range(start, end):
            key_names = self.key_names[i]
            where = positions.get(key_names)
            if where is None:
                where = positions[key_names] = [key_names.index(n) if n in key_names else None
                                                for n in names]
            keys = self.keys[i]
            out.append((*(None if j is None else keys[j] for j in where), self.values[i]))
        return out


def run_key(record: Record) -> Tuple[str, int, int]:
    """A record's key among the samples' spans: its point, repeat and attempt."""
    return (record.point_id, record.repeat, record.attempt)


@dataclass
class Loaded:
    records: List[Record]
    samples: Samples


def record_paths(root: Path) -> List[str]:
    """Every attempt's record.json in the store's order (point folder, repeat, attempt)."""
    from commstack.store.campaign import Campaign

    return [os.path.join(folder, "record.json") for *_, folder in Campaign(Path(root)).attempt_folders()]


def load(root: Path, keep_rows: Callable[[Record], bool]) -> Loaded:
    """Every record of the campaign, in the store's order. (Read in one process: worker
    processes were tried and sending 10,000 records back cost as much as reading them.)"""
    with collector_paused():
        return _load(record_paths(root), keep_rows)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a report's records and samples are made.
    They hold no reference cycles (reference counting frees them), but each of the collector's
    passes over its oldest generation walks every object made so far: reading 100,000 records
    spent 13 s of 30 in them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load(paths: List[str], keep_rows: Callable[[Record], bool]) -> Loaded:
    samples = Samples()
    records: List[Optional[Record]] = []
    for path in paths:
        try:
            data = read_json(path)
        except FileNotFoundError:
            records.append(None)  # an attempt still running: no record yet
            continue
        table = data.get("parsed") if isinstance(data, dict) else None
        if isinstance(table, dict) and "blocks" in table:
            # Schema 3's table of rows: samples straight from its columns; the rows are made
            # only for a record a study section reads.
            record = Record.from_dict(dict(data, parsed=None), path)
            table = resolved_table(table, Path(path).parent, f"{path}: parsed")
            add_table_samples(samples, record, table, f"{path}: parsed")
            if keep_rows(record):
                record.parsed = table_rows(table, f"{path}: parsed")
        else:
            record = Record.from_dict(data, path)
            add_samples(samples, record)
            if not keep_rows(record):
                record.parsed = []  # its numbers are in `samples`
        records.append(record)
    return Loaded(records, samples)


def add_samples(samples: Samples, record: Record) -> None:
    if not record.ok or not record.parsed:
        return
    row_keys = registry.row_keys(record.benchmark)
    family = registry.BENCHMARKS.get(record.benchmark)
    figures = [f.key for f in family.figures] if family else None
    number = (int, float)
    chosen = []  # (row keys' values, figure, value) of the rows that count
    for item in record.parsed:
        if item.get("status", "ok") != "ok":
            continue
        if figures is not None:  # registry.metric_of, without a call per row
            key = next((k for k in figures if isinstance(item.get(k), number)), None)
        else:
            figure = registry.metric_of(item, record.benchmark)
            key = figure.key if figure else None
        if key is not None:
            chosen.append((tuple(map(item.get, row_keys)), key, item[key]))
    _extend(samples, record, row_keys, chosen)


def _extend(samples: Samples, record: Record, row_keys: Tuple[str, ...],
            chosen: List[Tuple[tuple, str, float]]) -> None:
    if not chosen:
        return
    count = len(chosen)
    samples.point_ids.extend([record.point_id] * count)
    samples.key_names.extend([row_keys] * count)
    samples.keys.extend([keys for keys, _, _ in chosen])
    samples.metrics.extend([key for _, key, _ in chosen])
    samples.values.extend([float(value) for _, _, value in chosen])
    samples.oversubscribed.extend([bool(record.oversubscribed)] * count)
    samples.mark(record, count)
    if record.point_id not in samples.points:
        samples.points[record.point_id] = (record.params, record.benchmark, record.ranks)


def add_table_samples(samples: Samples, record: Record, table: dict, where: str) -> None:
    """:func:`add_samples` of a record whose rows are still a ``rows_table`` (schema 3): the
    same samples, read column by column."""
    family = registry.BENCHMARKS.get(record.benchmark)
    if family is None:  # a benchmark no module defines any more: by rows
        record.parsed = table_rows(table, where)
        add_samples(samples, record)
        record.parsed = []
        return
    if not record.ok:
        table_rows(table, where)  # no samples, but a broken table is still named
        return
    row_keys = family.row_keys
    figures = [f.key for f in family.figures]
    chosen = []  # (row keys' values, figure, value) of the rows that count
    try:
        shared = table.get("same", {})
        for block in table["blocks"]:
            columns, rows = block["columns"], block["rows"]
            same = dict(shared, **block["same"])
            if any(len(values) != len(columns) for values in rows):
                raise ValueError(f"a row has a number of values other than {len(columns)}")
            position = {name: i for i, name in enumerate(columns)}
            status = _column(rows, position, same, "status", "ok")
            figure_columns = [(key, _column(rows, position, same, key)) for key in figures]
            keys = list(zip(*[_column(rows, position, same, k) for k in row_keys])) \
                if row_keys else [()] * len(rows)
            for j, state in enumerate(status):
                if state != "ok":
                    continue
                for key, values in figure_columns:
                    if isinstance(values[j], (int, float)):
                        chosen.append((keys[j], key, values[j]))
                        break
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordError(f"{where}: not a table of rows ({exc})") from None
    _extend(samples, record, row_keys, chosen)


def _column(rows: List[list], position: Dict[str, int], same: dict, name: str,
            absent: object = None) -> list:
    """One key's value in every row of a table block (``absent`` where no row has the key)."""
    if name in position:
        i = position[name]
        return [values[i] for values in rows]
    return [same.get(name, absent)] * len(rows)
