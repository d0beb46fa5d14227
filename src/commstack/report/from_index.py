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
    index does not hold every record on disk (an attempt finishing now): then from the records.
    The index's rows are grouped by record and chosen column-wise (NumPy); Python objects are
    made only for the samples and the records themselves."""
    try:
        tidy_index.ensure(root)
    except ImportError:
        return None
    import numpy as np

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
    size = table.num_rows
    point_names, point_codes = _codes(table.column("point_id"))
    repeat = _ints(table.column("repeat"))
    attempt = _ints(table.column("attempt"))
    # Each record's rows, in the index's order (a stable sort by the record's key).
    order = np.lexsort((attempt, repeat, point_codes))
    p, r, a = point_codes[order], repeat[order], attempt[order]
    breaks = np.flatnonzero((p[1:] != p[:-1]) | (r[1:] != r[:-1]) | (a[1:] != a[:-1])) + 1
    starts = np.r_[0, breaks]
    ends = np.r_[breaks, size]
    group_of = {(point_names[pc], rc, ac): g for g, (pc, rc, ac) in enumerate(zip(
        p[starts].tolist(), r[starts].tolist(), a[starts].tolist()))}
    if set(written) != set(group_of):
        return None
    heads = table.column("record").take(order[starts]).to_pylist()
    table = table.drop_columns(["record"])  # some kilobytes a record: not kept beside them
    records: List[Optional[Record]] = []
    chosen_groups: List[int] = []  # the groups of successful records, in the store's order
    chosen_records: List[Record] = []
    for point, repeat_, number, _folder in attempts:
        path = written.get((point, repeat_, number))
        if path is None:
            records.append(None)  # an attempt still running: no record yet
            continue
        g = group_of[(point, repeat_, number)]
        head, heads[g] = heads[g], None
        if head is None:  # not an index this code wrote: the records themselves
            return None
        record = Record.from_dict(dict(json.loads(head), parsed=None), path)
        if keep_rows(record):
            record = _load([path], keep_rows).records[0] or record
        if record.ok:
            chosen_groups.append(g)
            chosen_records.append(record)
        records.append(record)
    samples = Samples()
    _add_all(samples, table, order, starts, ends, chosen_groups, chosen_records,
             point_names, point_codes)
    return Loaded(records, samples, newest)


def _codes(column):
    """(distinct values as Python objects, each row's position among them as a NumPy array;
    -1 for a null)."""
    encoded = column.combine_chunks().dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return encoded.dictionary.to_pylist(), codes


def _ints(column):
    return column.combine_chunks().fill_null(0).to_numpy(zero_copy_only=False)


def _python(column, rows) -> list:
    """The column's values at ``rows`` as Python objects, equal values one object."""
    import pyarrow as pa

    values, codes = _codes(column.take(pa.array(rows)))
    values.append(None)  # code -1: null
    return [values[c] for c in codes.tolist()]


def _add_all(samples: Samples, table, order, starts, ends, groups: List[int],
             records: List[Record], point_names: list, point_codes) -> None:
    """``load.add_samples`` of every successful record (``groups``, in the store's order), from
    its index rows: the rows whose status is ok and that have a figure of merit."""
    import numpy as np
    import pyarrow.compute as pc

    if not groups:
        return
    size = len(order)
    rank = np.full(len(starts), -1, dtype=np.int64)
    rank[np.asarray(groups, dtype=np.int64)] = np.arange(len(groups))
    row_rank = np.empty(size, dtype=np.int64)
    row_rank[order] = np.repeat(rank, ends - starts)
    usable = pc.and_(pc.equal(table.column("row_status"), "ok"),
                     pc.is_valid(table.column("metric")))
    usable = usable.combine_chunks().fill_null(False).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero((row_rank >= 0) & usable)
    rows = rows[np.lexsort((rows, row_rank[rows]))]  # by record in the store's order, then row
    owner = row_rank[rows]
    counts = np.bincount(owner, minlength=len(groups)).tolist()
    owner_list = owner.tolist()
    names = [registry.row_keys(rec.benchmark) for rec in records]
    columns = {name: _python(table.column(column), rows) for name, column in _OWN.items()}
    extra = _python(table.column("row_key"), rows)
    samples.point_ids.extend(point_names[c] for c in point_codes[rows].tolist())
    samples.key_names.extend(names[k] for k in owner_list)
    by_names: Dict[Tuple[str, ...], List[int]] = {}
    for k, n in enumerate(names):
        by_names.setdefault(n, []).append(k)
    if len(by_names) == 1:
        samples.keys.extend(_keys(names[0], columns, extra, range(len(rows))))
    else:
        keys: List[tuple] = [()] * len(rows)
        for key_names in by_names:
            which = [i for i, k in enumerate(owner_list) if names[k] == key_names]
            for i, key in zip(which, _keys(key_names, columns, extra, which)):
                keys[i] = key
        samples.keys.extend(keys)
    samples.metrics.extend(_python(table.column("metric"), rows))
    samples.values.extend(table.column("value").take(rows).to_numpy(
        zero_copy_only=False).tolist())
    over = [bool(rec.oversubscribed) for rec in records]
    samples.oversubscribed.extend(over[k] for k in owner_list)
    start = 0
    for record, count in zip(records, counts):
        if not count:
            continue
        samples.spans[(record.point_id, record.repeat, record.attempt)] = (start, count)
        start += count
        if record.point_id not in samples.points:
            samples.points[record.point_id] = (record.params, record.benchmark, record.ranks)


def _keys(names: Tuple[str, ...], columns: Dict[str, list], extra: list, which) -> List[tuple]:
    """The row keys ``names`` of the chosen rows ``which`` (as ``tuple(map(row.get, names))``)."""
    which = list(which)
    own = [[columns[k][i] for i in which] if k in columns else None for k in names]
    nothing = [None] * len(which)
    out = list(zip(*(c if c is not None else nothing for c in own))) if names \
        else [()] * len(which)
    for j, i in enumerate(which):
        text = extra[i]
        if text:
            other = json.loads(text)
            out[j] = tuple(c[j] if c is not None else other.get(k) for c, k in zip(own, names))
    return out


def _table(root: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = tidy_index._parts(tidy_index.index_dir(root))
    tables = []
    for part in parts:
        tidy_index._checked_metadata(part)
        tables.append(pq.read_table(part, columns=_COLUMNS))
    return pa.concat_tables(tables) if tables else None
