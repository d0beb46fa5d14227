"""A report's records and samples from the campaign's Parquet index instead of every record.json.

The index is made complete from the records first (``tidy_index.ensure``: the records stay the
truth). Each record comes back from the index's ``record`` column (its record.json form without
its rows) and its samples from the index's value columns, in the store's order, so the report
reads the same :class:`~commstack.report.load.Loaded` as from the records. Only the records a
study section needs the rows of (``keep_rows``) are read from their record.json. Without pyarrow
``load`` returns None and the report reads every record (:func:`commstack.report.load.load`).

At 10^5 records (some 2.4 million result rows) what is made is what is kept: the records share
their equal parts (:class:`~commstack.store.record.HeadReader`: a point's launch line and
parameters are one object for all its repeats) and keep no per-rank placement rows; the samples
hold one key tuple per distinct row key and their values as C doubles; the ``record`` column is
decoded a batch of rows at a time, never held whole beside the records it makes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from commstack.benchmarks import registry
from commstack.report.load import Loaded, Samples, _load, collector_paused, run_key
from commstack.store import tidy_index
from commstack.store.campaign import Campaign
from commstack.store.record import HeadReader, Record

_COLUMNS = ["point_id", "repeat", "attempt", "test", "np", "bytes", "mode", "row_key",
            "row_status", "metric", "value"]
# Text columns read as Parquet stores them, one dictionary of values and a code per row.
_DICTIONARY = ["point_id", "test", "mode", "row_key", "row_status", "metric"]
_OWN = {"benchmark": "test", "np": "np", "bytes": "bytes", "mode": "mode"}
_BATCH = 1 << 16  # rows of the index read at a time for the records' heads
_CHUNK = 1 << 18  # samples made into Python objects at a time

Key = Tuple[str, int, int]


def load(root: Path, keep_rows: Callable[[Record], bool]) -> Optional[Loaded]:
    """The campaign's records and samples from its index; None without pyarrow, or when the
    index does not hold every record on disk (an attempt finishing now): then from the records.
    The index's rows are grouped by record and chosen column-wise (NumPy); Python objects are
    made only for the samples and the records themselves."""
    try:
        tidy_index._arrow()
    except ImportError:
        return None
    import pyarrow as pa

    try:
        with collector_paused():
            return _from_index(Path(root), keep_rows)
    finally:
        # Arrow keeps the memory its tables had for the next ones (some 250 MB at 10^5
        # records); the report makes few: back to the system.
        pa.default_memory_pool().release_unused()


def _from_index(root: Path, keep_rows: Callable[[Record], bool]) -> Optional[Loaded]:
    import numpy as np
    import pyarrow as pa

    # One listing of the attempts for the index and the report: the records on disk, with
    # the time each was written.
    campaign = Campaign(root)
    attempts = campaign.attempt_folders()
    written = tidy_index.records_on_disk(campaign, attempts)
    tidy_index.ensure(root, on_disk=written)
    pa.default_memory_pool().release_unused()  # what reading the index's keys took
    parts = tidy_index._parts(tidy_index.index_dir(root))
    table = _table(parts)
    if table is None or table.num_rows == 0:
        return None
    size = table.num_rows
    # The columns by name, each let go once read (some 130 MB at 2.4 million rows).
    columns = {name: table.column(name) for name in table.column_names}
    del table
    point_names, point_codes = _codes(columns.pop("point_id"))
    repeat = _ints(columns.pop("repeat"))
    attempt = _ints(columns.pop("attempt"))
    # Each record's rows, in the index's order (a stable sort by the record's key).
    order = np.lexsort((attempt, repeat, point_codes))
    p, r, a = point_codes[order], repeat[order], attempt[order]
    breaks = np.flatnonzero((p[1:] != p[:-1]) | (r[1:] != r[:-1]) | (a[1:] != a[:-1])) + 1
    starts = np.r_[0, breaks]
    ends = np.r_[breaks, size]
    group_of = {(point_names[pc], rc, ac): g for g, (pc, rc, ac) in enumerate(zip(
        p[starts].tolist(), r[starts].tolist(), a[starts].tolist()))}
    del p, r, a, repeat, attempt
    # A record the index lacks: its runner appends it now. (One the index holds that was not
    # listed finished after the listing: it is not in this report.)
    if any(key not in group_of for key in written):
        return None
    heads = _heads(parts, written)
    if heads is None:  # not an index this code wrote: the records themselves
        return None
    records: List[Optional[Record]] = []
    chosen_groups: List[int] = []  # the groups of successful records, in the store's order
    chosen_records: List[Record] = []
    for point, repeat_, number, _folder in attempts:
        key = (point, repeat_, number)
        record = heads.pop(key, None)
        if record is None:
            records.append(None)  # an attempt still running: no record yet
            continue
        if keep_rows(record):
            record = _load([written[key][0]], keep_rows).records[0] or record
        if record.ok:
            chosen_groups.append(group_of[key])
            chosen_records.append(record)
        records.append(record)
    del heads, group_of
    samples = Samples()
    _add_all(samples, columns, order, starts, ends, chosen_groups, chosen_records,
             point_names, point_codes)
    return Loaded(records, samples)


def _heads(parts, wanted: Dict[Key, Tuple[str, float]]) -> Optional[Dict[Key, Record]]:
    """The records ``wanted`` (key: record.json and its time) from the index's ``record``
    column, read a batch of rows at a time; None when one has none there."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    reader = HeadReader()
    found: Dict[Key, Record] = {}
    for part in parts:
        with pq.ParquetFile(part) as parquet:
            for batch in parquet.iter_batches(batch_size=_BATCH, use_threads=False, columns=[
                    "point_id", "repeat", "attempt", "record"]):
                batch = batch.filter(pc.is_valid(batch.column("record")))
                for point, repeat, number, text in zip(*(batch.column(name).to_pylist() for name in (
                        "point_id", "repeat", "attempt", "record"))):
                    key = (point, repeat, number)
                    entry = wanted.get(key)
                    if entry is None or key in found:
                        continue
                    found[key] = reader.record(text, entry[0])
    return found if len(found) == len(wanted) else None


def _codes(column):
    """(distinct values as Python objects, each row's position among them as a NumPy array;
    -1 for a null)."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        if isinstance(column, pa.ChunkedArray):
            column = column.unify_dictionaries().combine_chunks() if column.num_chunks \
                else pa.array([], type=column.type)
        encoded = column
    else:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        encoded = column.dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    return encoded.dictionary.to_pylist(), codes


def _ints(column):
    return column.combine_chunks().fill_null(0).to_numpy(zero_copy_only=False)


def _extend(target: list, values: list, codes) -> None:
    """``target.extend(values[c] for c in codes)`` (codes a NumPy array), a chunk at a time:
    no list of millions of Python ints beside the samples."""
    pick = values.__getitem__
    for at in range(0, len(codes), _CHUNK):
        target.extend(map(pick, codes[at:at + _CHUNK].tolist()))


def _add_all(samples: Samples, columns: dict, order, starts, ends, groups: List[int],
             records: List[Record], point_names: list, point_codes) -> None:
    """``load.add_samples`` of every successful record (``groups``, in the store's order), from
    its index rows: the rows whose status is ok and that have a figure of merit. ``columns``:
    the index's, by name, each taken out once read."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not groups:
        return
    # The chosen records' rows, record after record in the store's order, each record's in the
    # index's: positions in ``order`` from each group's start.
    chosen = np.asarray(groups, dtype=np.int64)
    lengths = (ends - starts)[chosen]
    before = np.cumsum(lengths) - lengths  # rows of the chosen records before each
    rows = order[np.repeat(starts[chosen] - before, lengths) + np.arange(int(lengths.sum()))]
    owner = np.repeat(np.arange(len(chosen)), lengths)
    del chosen, lengths, before
    usable = pc.and_(pc.equal(columns.pop("row_status"), "ok"),
                     pc.is_valid(columns["metric"]))
    usable = usable.combine_chunks().fill_null(False).to_numpy(zero_copy_only=False)[rows]
    rows, owner = rows[usable], owner[usable]
    del usable
    counts = np.bincount(owner, minlength=len(groups)).tolist()
    # Each record's row keys (its benchmark's), one code per distinct tuple of names.
    by_benchmark: Dict[Optional[str], int] = {}
    names: List[Tuple[str, ...]] = []
    codes_of: Dict[Tuple[str, ...], int] = {}
    record_names = np.empty(len(records), dtype=np.int64)
    for k, rec in enumerate(records):
        code = by_benchmark.get(rec.benchmark)
        if code is None:
            key_names = registry.row_keys(rec.benchmark)
            code = by_benchmark[rec.benchmark] = codes_of.setdefault(key_names, len(codes_of))
            if code == len(names):
                names.append(key_names)
        record_names[k] = code
    row_names = record_names[owner]
    taken = pa.array(rows)
    _extend(samples.point_ids, point_names, point_codes[rows])
    _extend(samples.key_names, names, row_names)
    keys, key_codes = _keys(columns, taken, row_names, names)
    _extend(samples.keys, keys, key_codes)
    del keys, key_codes
    metric_names, metric_codes = _codes(columns.pop("metric").take(taken))
    _extend(samples.metrics, metric_names, metric_codes)
    values = columns.pop("value").take(taken).to_numpy(zero_copy_only=False)
    samples.values.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    over = np.asarray([bool(rec.oversubscribed) for rec in records], dtype=bool)
    for at in range(0, len(owner), _CHUNK):
        samples.oversubscribed.extend(over[owner[at:at + _CHUNK]].tolist())
    start = 0
    for record, count in zip(records, counts):
        if not count:
            continue
        samples.spans[run_key(record)] = (start, count)
        start += count
        if record.point_id not in samples.points:
            samples.points[record.point_id] = (record.params, record.benchmark, record.ranks)


def _keys(source: dict, taken, row_names, names: List[Tuple[str, ...]]):
    """(the distinct row keys, each chosen row's position among them): a row's key is
    ``tuple(map(row.get, names))`` of its record's row key ``names``, from the columns of its
    own (test, np, bytes, mode) and the JSON of the others (``row_key``). One tuple is made per
    distinct (names, columns' values), not per row."""
    import numpy as np
    import pyarrow as pa

    columns = [_codes(source.pop(c).take(taken)) for c in (*_OWN.values(), "row_key")]
    radix = len(names)
    for values, _ in columns:
        radix *= len(values) + 1
    if radix >= 1 << 62:  # too many distinct values for one code: the rows' codes side by side
        stacked = np.stack([row_names] + [c for _, c in columns], axis=1)
        distinct, where = np.unique(stacked, axis=0, return_inverse=True)
        parts = [distinct[:, i].tolist() for i in range(distinct.shape[1])]
    else:
        code = row_names.astype(np.int64)
        for values, codes in columns:
            code = code * (len(values) + 1) + (codes.astype(np.int64) + 1)
        encoded = pa.array(code).dictionary_encode()  # by hashing, not sorting
        del code
        distinct = encoded.dictionary.to_numpy()
        where = encoded.indices.to_numpy()
        del encoded
        parts = []
        rest = distinct
        for values, _ in reversed(columns):
            parts.append((rest % (len(values) + 1) - 1).tolist())
            rest = rest // (len(values) + 1)
        parts.append(rest.tolist())
        parts.reverse()
    own_names = list(_OWN)
    keys = []
    for n, *own, extra in zip(*parts):
        key_names = names[n]
        values = {k: (columns[i][0][c] if c >= 0 else None) for i, (k, c) in enumerate(
            zip(own_names, own))}
        text = columns[-1][0][extra] if extra >= 0 else None
        if text:
            other = json.loads(text)
            keys.append(tuple(values[k] if k in values else other.get(k) for k in key_names))
        else:
            keys.append(tuple(values.get(k) for k in key_names))
    return keys, where.reshape(-1)


def _table(parts):
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for part in parts:
        tidy_index._checked_metadata(part)
        tables.append(pq.read_table(part, columns=_COLUMNS, read_dictionary=_DICTIONARY))
    if not tables:
        return None
    # Dictionaries of each part's own: concatenated as the text they code.
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]
