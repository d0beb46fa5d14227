"""A report's records and samples from the campaign's Parquet index instead of every record.json.

The index is made complete from the records first (``tidy_index.ensure``: the records stay the
truth). Each record comes back from the index's ``record`` column (its record.json form without
its rows) and its samples from the index's value columns, in the store's order, so the report
reads the same :class:`~commstack.report.load.Loaded` as from the records. Only the records a
study section needs the rows of (``keep_rows``) are read from their record.json. Without pyarrow
``load`` returns None and the report reads every record (:func:`commstack.report.load.load`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from commstack.benchmarks import registry
from commstack.report.load import Loaded, Samples, _load
from commstack.store import tidy_index
from commstack.store.campaign import Campaign
from commstack.store.record import Record

_COLUMNS = ["point_id", "repeat", "attempt", "status", "test", "np", "bytes", "mode", "row_key",
            "row_status", "metric", "value", "record"]
_OWN = {"benchmark": "test", "np": "np", "bytes": "bytes", "mode": "mode"}


def load(root: Path, keep_rows: Callable[[Record], bool]) -> Optional[Loaded]:
    """The campaign's records and samples from its index; None without pyarrow, or when the
    index does not hold every record on disk (an attempt finishing now): then from the records."""
    try:
        tidy_index.ensure(root)
    except ImportError:
        return None
    attempts = Campaign(Path(root)).attempt_folders()
    newest, written = 0.0, {}
    for point, repeat, number, folder in attempts:
        path = os.path.join(folder, "record.json")
        try:
            newest = max(newest, os.stat(path).st_mtime)
        except FileNotFoundError:
            continue
        written[(point, repeat, number)] = path
    table = _table(root)
    if table is None or table.num_rows == 0:
        return None
    by_key: Dict[Tuple[str, int, int], List[int]] = {}
    for i, key in enumerate(zip(*(_shared(table.column(k)) for k in tidy_index.KEY))):
        by_key.setdefault(key, []).append(i)
    if set(written) != set(by_key):
        return None
    columns = {name: table.column(name).to_pylist() if name in ("value", "record")
               else _shared(table.column(name)) for name in _COLUMNS[3:]}
    keys_by: Dict[Tuple[str, ...], List[tuple]] = {}  # each row's row keys, per benchmark's names
    samples = Samples()
    records: List[Optional[Record]] = []
    for point, repeat, number, _folder in attempts:
        path = written.get((point, repeat, number))
        if path is None:
            records.append(None)  # an attempt still running: no record yet
            continue
        rows = by_key[(point, repeat, number)]
        head = columns["record"][rows[0]]
        if head is None:  # not an index this code wrote: the records themselves
            return None
        record = Record.from_dict(dict(json.loads(head), parsed=None), path)
        if keep_rows(record):
            record = _load([path], keep_rows).records[0] or record
        _add(samples, record, rows, columns, keys_by)
        records.append(record)
    return Loaded(records, samples, newest)


def _shared(column) -> list:
    """A column as a list whose equal values are one Python object (a million rows repeat a few
    point ids, tests and sizes: one object each, not one per row)."""
    encoded = column.combine_chunks().dictionary_encode()
    values = encoded.dictionary.to_pylist()
    return [None if i is None else values[i] for i in encoded.indices.to_pylist()]


def _table(root: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = tidy_index._parts(tidy_index.index_dir(root))
    tables = []
    for part in parts:
        tidy_index._checked_metadata(part)
        tables.append(pq.read_table(part, columns=_COLUMNS))
    return pa.concat_tables(tables) if tables else None


def _row_keys(names: Tuple[str, ...], columns: Dict[str, list]) -> List[tuple]:
    """Every index row's values of the row keys ``names`` (as ``tuple(map(row.get, names))``)."""
    extra = columns["row_key"]
    own = [columns[_OWN[k]] if k in _OWN else [None] * len(extra) for k in names]
    keys = list(zip(*own)) if names else [()] * len(extra)
    for i, text in enumerate(extra):
        if text:
            other = json.loads(text)
            keys[i] = tuple(c[i] if k in _OWN else other.get(k) for c, k in zip(own, names))
    return keys


def _add(samples: Samples, record: Record, rows: List[int], columns: Dict[str, list],
         keys_by: Dict[Tuple[str, ...], List[tuple]]) -> None:
    """``load.add_samples`` of one record, from its index rows."""
    if not record.ok:
        return
    metric, status = columns["metric"], columns["row_status"]
    chosen = [i for i in rows if status[i] == "ok" and metric[i] is not None]
    if not chosen:
        return
    row_keys = registry.row_keys(record.benchmark)
    if row_keys not in keys_by:
        keys_by[row_keys] = _row_keys(row_keys, columns)
    keys, value = keys_by[row_keys], columns["value"]
    count = len(chosen)
    samples.point_ids.extend([record.point_id] * count)
    samples.key_names.extend([row_keys] * count)
    samples.keys.extend([keys[i] for i in chosen])
    samples.metrics.extend([metric[i] for i in chosen])
    samples.values.extend([float(value[i]) for i in chosen])
    samples.oversubscribed.extend([bool(record.oversubscribed)] * count)
    samples.mark(record, count)
    if record.point_id not in samples.points:
        samples.points[record.point_id] = (record.params, record.benchmark, record.ranks)
