"""A campaign's tidy rows as Parquet: ``<campaign>/index/*.parquet``, derived from the records.

One row per record and result row (a record without rows gives one row with no metric), in one
fixed schema (``COLUMNS``) for every campaign and benchmark, so ``pandas.read_parquet(index)``
and DuckDB's ``read_parquet('<campaign>/index/*.parquet')`` read it as it is, one campaign or
many. The records stay the source of truth: the index is never needed to read them, and is
rebuilt from them whenever it is missing or stale. A simulated record's rows name the platform
its simulator ran in ``simulated`` (null for a run on real nodes; format 4, ``commstack.simulated``),
so no reader of the index takes a simulated number for a measured one.

Parquet files are immutable, so the index is a folder of parts:

* ``r-<point>-rep<k>.try<n>.parquet``: one record's rows, written by the runner that wrote the
  record (``append``), before it releases the attempt's lock. Names are unique per record, so
  runners writing into one campaign never collide, and a part is written once (temporary file,
  then a link: never half a file).
* ``c-<utc>-<host>-<pid>-<n>.parquet``: one-record parts merged into one (``compact``) at the
  end of a run (the run's own: what a session's end costs is what it ran), rows built from the
  records (``ensure``: a batch of ``BATCH`` records each, read by worker processes), or parts
  merged, smallest first, into parts of up to ``TARGET_ROWS`` rows by a reader when more than
  ``MAX_PARTS`` pile up.

Stale: the records whose attempts are finished (a record.json, the attempt's lock free) differ
from the records the parts hold. Missing ones are added as new parts, the others left as they
are; parts holding a record that is gone, or written in another index format (``FORMAT``), mean
a rebuild from the records. ``ensure`` does this under ``index/.lock``, as ``compact`` does, so
two of them never work on one index at once. A record.json holding a table of rows (schema 3
on) is read a block of rows at a time, a column per varying key, never a dict per row.

Without pyarrow (an optional extra: compute nodes run sweeps with few packages) ``append`` does
nothing and the index is built by the first ``ensure`` (``commstack query``) where pyarrow is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import sys
import time
from dataclasses import replace as with_fields
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from commstack.benchmarks import registry
from commstack.benchmarks.base import FigureOfMerit
from commstack.optional import require
from commstack.simulated import platform
from commstack.store.campaign import Campaign, attempt_held
from commstack.store.files import AlreadyExists, _temporary, write_new
from commstack.store.record import (
    COMPACT_VERSION,
    SCHEMA_VERSION,
    Record,
    read_json,
    resolved_table,
    table_blocks,
)

INDEX_DIR = "index"
FORMAT = "4"  # the index's own version, in every part's metadata: another one means a rebuild
_FORMAT_KEY = "commstack.index"
# Parts before they are merged: more one-record parts than this and `append` merges them; more
# parts of any kind and a reader (``ensure``) merges them all.
MAX_PARTS = 64
# A part past these is not one commstack wrote (a campaign of 10^5 records holds some 10^7 rows,
# some 30 MB on disk): it is rebuilt from the records rather than read, so a damaged or forged
# part never sizes what is read (docs/reference/input-limits.md). Checked on the footer, before any data.
MAX_PART_BYTES = 1 << 30
MAX_PART_ROWS = 1 << 26
MAX_PART_UNCOMPRESSED = 16 << 30  # the footer's sum of the row groups' uncompressed sizes
_HOST = socket.gethostname().replace("/", "_")

# (name, pyarrow type name): the index's columns, the same in every part of every campaign.
COLUMNS: Tuple[Tuple[str, str], ...] = (
    ("campaign", "string"), ("machine", "string"), ("benchmark", "string"),
    ("point_id", "string"), ("repeat", "int32"), ("attempt", "int32"), ("status", "string"),
    ("exit_code", "int32"), ("stack", "string"), ("flavour", "string"), ("ranks", "int32"),
    ("nodes", "int32"), ("oversubscribed", "bool_"), ("placement", "string"),
    ("start", "float64"), ("duration_s", "float64"), ("imported", "bool_"),
    ("params", "string"),  # the point's parameters, JSON with sorted keys
    ("test", "string"),  # the row's own benchmark (IMB's Allreduce, OSU's osu_latency, ...)
    ("np", "int64"), ("bytes", "int64"), ("mode", "string"),
    # JSON object of the family's other row keys that the row has (IMB's groups, threads, ...),
    # null when none: with test, np, bytes and mode it tells a record's rows apart.
    ("row_key", "string"),
    ("row_status", "string"), ("metric", "string"), ("value", "float64"), ("unit", "string"),
    ("lower_is_better", "bool_"),
    # What ties a row to its run over time (format 2): the session that ran it (its provenance
    # in sessions/<session>/, see commstack.store.results) and the Slurm job, if any.
    ("session", "string"), ("job_id", "string"),
    # The record's own fields but its rows (its record.json form, JSON), on the record's first
    # row only, null on the others (format 3): what a report reads instead of every record.json.
    ("record", "string"),
    # Simulated, not measured (format 4): the platform the record's simulator ran (its
    # ``simulation.platform``, commstack.simulated), null for a run on real nodes.
    ("simulated", "string"),
)
# Columns of the tidy rows themselves (``read_rows``): every one but ``record``.
ROW_COLUMNS = [name for name, _ in COLUMNS if name != "record"]
KEY = ("point_id", "repeat", "attempt")
_OWN_COLUMNS = ("benchmark", "np", "bytes", "mode")  # row keys with a column of their own
# Columns of a result row (null on the one row of a record without rows).
_ROW_ONLY = ("test", "np", "bytes", "mode", "row_key", "row_status", "metric", "value", "unit",
             "lower_is_better")
# Min/max statistics (for readers' filters) of the columns worth filtering on; the JSON ones
# would only make the footer big.
_WITH_STATISTICS = ["campaign", "machine", "benchmark", "status", "test", "np", "bytes", "metric",
                    "simulated"]

RecordKey = Tuple[str, int, int]

PYARROW = ("pyarrow", "index", "The Parquet index of a campaign")


def index_dir(campaign_root: Path) -> Path:
    return Path(campaign_root) / INDEX_DIR


def rows_of(record: Record) -> List[Dict[str, Any]]:
    """The index rows of one record."""
    columns = _Columns()
    columns.add(record)
    return [dict(zip(columns.data, values)) for values in zip(*columns.data.values())]


class _Columns:
    """Index rows gathered column by column (one list per column of ``COLUMNS``): a part's
    table is made from them in one call, without a dict per row. A record.json holding a table
    of rows (schema 3 on) is read a block at a time (``add_file``)."""

    def __init__(self) -> None:
        self.data: Dict[str, List[Any]] = {name: [] for name, _ in COLUMNS}

    def add(self, record: Record) -> None:
        blocks = []
        for row in record.parsed:  # each row a block of its own
            blocks.append((row, [], [[]]))
        self._add(record, record_head(record), blocks)

    def add_file(self, path: str) -> None:
        data = read_json(path)
        parsed = data.get("parsed") if isinstance(data, dict) else None
        version = data.get("schema") if isinstance(data, dict) else None
        if not (isinstance(parsed, dict) and isinstance(version, int)
                and COMPACT_VERSION <= version <= SCHEMA_VERSION):
            self.add(Record.from_dict(data, path, Path(path).parent))  # earlier forms
            return
        record = Record.from_dict(dict(data, parsed=None), path)
        where = f"{path}: parsed"
        blocks = table_blocks(resolved_table(parsed, Path(path).parent, where), where)
        # The file is the record's stored form (``Record.dumps``): without its rows, the head.
        head = {k: v for k, v in data.items() if k != "parsed"}
        head["schema"] = COMPACT_VERSION
        self._add(record, json.dumps(head, sort_keys=True, separators=(",", ":"), default=str),
                  blocks)

    def _add(self, record: Record, head: str, blocks: List[Tuple[Dict[str, Any], List[str],
                                                             List[List[Any]]]]) -> None:
        data = self.data
        base = {
            "campaign": record.campaign, "machine": record.machine, "benchmark": record.benchmark,
            "point_id": record.point_id, "repeat": record.repeat, "attempt": record.attempt,
            "status": record.status, "exit_code": _int(record.exit_code), "stack": record.stack,
            "flavour": record.flavour, "ranks": _int(record.ranks), "nodes": _int(record.nodes),
            "oversubscribed": record.oversubscribed,
            "placement": record.placement.verdict if record.placement else None,
            "start": record.start, "duration_s": record.duration_s, "imported": record.imported,
            "params": json.dumps(record.params, sort_keys=True, default=str),
            "session": record.session, "job_id": record.step.job_id if record.step else None,
            "simulated": platform(record.simulation),
        }
        count = sum(len(rows) for _, _, rows in blocks) or 1
        for name, value in base.items():
            data[name].extend([value] * count)
        data["record"].append(head)
        data["record"].extend([None] * (count - 1))
        if not blocks:
            for name in _ROW_ONLY:
                data[name].append(None)
            return
        row_keys, metric_of = registry.row_reading(record.benchmark)
        keys = [k for k in row_keys if k not in _OWN_COLUMNS]
        for same, columns, rows in blocks:
            self._add_block(metric_of, keys, same, columns, rows)

    def _add_block(self, metric_of: Callable[[Dict[str, Any]], Optional[FigureOfMerit]],
                   keys: List[str], same: Dict[str, Any], columns: List[str],
                   rows: List[List[Any]]) -> None:
        """Rows of one block: a column per key that varies, one value for those it shares
        (a block's rows have the same keys, and the same text, truth and null values)."""
        data, n = self.data, len(rows)
        varying = dict(zip(columns, zip(*rows)))

        def column(key: str, convert, absent: Any = None) -> List[Any]:
            if key in varying:
                values = varying[key]
                if convert is _int and all(type(v) is int for v in values):
                    return list(values)  # sizes and process counts: ints as parsed
                return [convert(v) for v in values]
            return [convert(same.get(key, absent))] * n

        first = dict(same, **dict(zip(columns, rows[0])))
        figure = metric_of(first)
        data["test"] += column("benchmark", _text)
        data["np"] += column("np", _int)
        data["bytes"] += column("bytes", _int)
        data["mode"] += column("mode", _text)
        if any(k in varying for k in keys):
            data["row_key"] += [_row_key(dict(same, **dict(zip(columns, values))), keys)
                                for values in rows]
        else:
            data["row_key"] += [_row_key(same, keys)] * n
        data["row_status"] += column("status", _text, "ok")
        data["metric"] += [figure.key if figure else None] * n
        data["value"] += column(figure.key, float) if figure else [None] * n
        data["unit"] += [figure.unit if figure else None] * n
        data["lower_is_better"] += [figure.lower_is_better if figure else None] * n

    def __len__(self) -> int:
        return len(self.data["point_id"])


def _row_key(row: Dict[str, Any], keys: List[str]) -> Optional[str]:
    """The family's other row keys the row has, as JSON (null when none)."""
    other = {k: row[k] for k in keys if row.get(k) is not None}
    return json.dumps(other, sort_keys=True, default=str) if other else None


def record_head(record: Record) -> str:
    """The record as its record.json holds it, without its rows (``Record.from_dict`` of it with
    ``parsed=None`` gives the record back, rows aside)."""
    data = with_fields(record, parsed=[]).stored()
    data.pop("parsed", None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


# --- writing -------------------------------------------------------------------------------
def _arrow():
    return require(*PYARROW)


def _schema():
    pa = _arrow()
    return pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS])


def _table_of(records: Iterable[Record]):
    columns = _Columns()
    for record in records:
        columns.add(record)
    return _arrow().Table.from_pydict(columns.data, schema=_schema())


def _parquet_bytes(table) -> bytes:
    pa = _arrow()
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    # No Arrow schema copy in the footer (the Parquet types say it all): a smaller part.
    with pq.ParquetWriter(sink, table.schema, compression="zstd",
                          write_statistics=_WITH_STATISTICS, store_schema=False) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({_FORMAT_KEY: FORMAT})
    return sink.getvalue().to_pybytes()


def _part_name(record: Record) -> str:
    return f"r-{record.point_id}-rep{record.repeat}.try{record.attempt}.parquet"


def append(campaign_root: Path, record: Record) -> bool:
    """Add one record's rows to the campaign's index (the runner that wrote the record, before
    it releases the attempt). False, doing nothing, without pyarrow or when the part cannot be
    written: the index is derived, and ``ensure`` adds what is missing from the records."""
    try:
        _arrow()
    except ImportError:
        return False
    folder = index_dir(campaign_root)
    try:
        folder.mkdir(exist_ok=True)
        part = _parquet_bytes(_table_of([record]))
        write_new(folder / _part_name(record), part)
        if len(_parts(folder, "r-")) > MAX_PARTS:
            with _locked(folder, wait=False) as held:
                if held:
                    _compact(folder)
    except AlreadyExists:
        pass
    except Exception:  # noqa: BLE001  never the sweep's failure: `ensure` redoes it, and says why
        return False
    return True


def _parts(folder: Path, prefix: str = "") -> List[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.name.endswith(".parquet") and p.name.startswith(prefix or ("r-", "c-")))


@contextlib.contextmanager
def _locked(folder: Path, wait: bool = True) -> Iterator[bool]:
    """Hold ``index/.lock`` (True), or yield False at once when another holds it and not ``wait``."""
    fd = os.open(folder / ".lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _new_part(folder: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return folder / f"c-{stamp}-{_HOST}-{os.getpid()}-{time.monotonic_ns()}.parquet"


def _swap(made: List[Tuple[Path, Path]], replaced: Iterable[Path]) -> None:
    """New parts (each a complete temporary and its name) in place of the parts ``replaced``:
    the old parts go before the new ones appear, so a reader may briefly miss those rows,
    never see them twice."""
    for part in replaced:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
    for tmp, target in made:
        os.replace(tmp, target)


def _merged(folder: Path, parts: List[Path]) -> None:
    """``parts`` merged into one ``c-`` part (Arrow tables, never a Python object per row)."""
    target, merged = _new_part(folder), _parquet_bytes(read_table(parts))
    _swap([(_temporary(target, merged), target)], parts)


# A merged part holds up to about this many rows (some 200 MB in memory while it is merged),
# far below ``MAX_PART_ROWS``: a campaign of 10^6 records of 70 rows is some 35 parts.
TARGET_ROWS = 1 << 21


def _merge_small(folder: Path) -> None:
    """Parts merged, smallest first, into parts of up to ``TARGET_ROWS`` rows."""
    sized = sorted((_checked_metadata(part).num_rows, part.name, part) for part in _parts(folder))
    groups: List[List[Path]] = [[]]
    rows = 0
    for count, _, part in sized:
        if groups[-1] and rows + count > TARGET_ROWS:
            groups.append([])
            rows = 0
        groups[-1].append(part)
        rows += count
    for group in groups:
        if len(group) > 1:
            _merged(folder, group)


def _compact(folder: Path) -> None:
    """The one-record parts merged into one: what a run wrote, never the parts before it."""
    parts = _parts(folder, "r-")
    if len(parts) > 1:
        _merged(folder, parts)


class UnsoundPart(ValueError):
    """An index part commstack did not write, or past the limits of one it writes."""


def _checked_metadata(part: Path):
    """The part's footer once its size, format and claimed sizes are within the limits;
    UnsoundPart (one sentence naming the file) otherwise. Nothing past the footer is read."""
    import pyarrow.parquet as pq

    size = part.stat().st_size
    if size > MAX_PART_BYTES:
        raise UnsoundPart(f"{part}: {size >> 20} MiB is larger than an index part commstack "
                          f"writes ({MAX_PART_BYTES >> 20} MiB)")
    try:
        meta = pq.read_metadata(part)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowIOError, ArrowInvalid
        raise UnsoundPart(f"{part}: not a readable Parquet file ({str(exc)[:200]})") from None
    if (meta.metadata or {}).get(_FORMAT_KEY.encode()) != FORMAT.encode():
        raise UnsoundPart(f"{part}: not an index part of format {FORMAT}")
    claimed = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if meta.num_rows > MAX_PART_ROWS or claimed > MAX_PART_UNCOMPRESSED:
        raise UnsoundPart(f"{part}: its footer claims {meta.num_rows} rows and {claimed >> 20} "
                          f"MiB, more than an index part commstack writes")
    return meta


def read_table(parts: List[Path]):
    """Every column of the index ``parts``, one Arrow table."""
    import pyarrow.parquet as pq

    tables = []
    for part in parts:
        _checked_metadata(part)
        tables.append(pq.read_table(part, schema=_schema()))
    return _arrow().concat_tables(tables)


def _read_rows(parts: List[Path], columns: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: List[Dict[str, Any]] = []
    for part in parts:
        _checked_metadata(part)
        rows += pq.read_table(part, columns=columns).to_pylist()
    return rows


# --- keeping it whole ------------------------------------------------------------------------
def records_on_disk(campaign: Campaign,
                    attempts: Optional[List[Tuple[str, int, int, str]]] = None
                    ) -> Dict[RecordKey, Tuple[str, float]]:
    """The record.json of every attempt that has one (finished or not), by record: its path and
    modification time. One listing of the attempts (``Campaign.attempt_folders``, or
    ``attempts`` when the caller has it) and one ``os.stat`` per attempt: a report runs this
    over 10,000s of attempts."""
    found: Dict[RecordKey, Tuple[str, float]] = {}
    for point, repeat, number, folder in (campaign.attempt_folders() if attempts is None
                                          else attempts):
        path = folder + "/record.json"
        try:
            info = os.stat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode):
            found[(point, repeat, number)] = (path, info.st_mtime)
    return found


def finished_records(campaign: Campaign,
                     on_disk: Optional[Dict[RecordKey, Tuple[str, float]]] = None,
                     indexed: Optional[Set[RecordKey]] = None) -> Dict[RecordKey, str]:
    """The records of attempts no runner holds any more (a held one's runner appends it), of
    ``on_disk`` (``records_on_disk``, listed now when not given) but those ``indexed``. By
    plain paths: a report runs this over 10,000s of attempts."""
    found: Dict[RecordKey, str] = {}
    for key, (record, _) in (records_on_disk(campaign) if on_disk is None else on_disk).items():
        if (indexed is None or key not in indexed) and not attempt_held(
                record[:-len("/record.json")]):
            found[key] = record
    return found


def _indexed(parts: List[Path]) -> Optional[Set[RecordKey]]:
    """The records the parts hold; None when a part is unreadable or of another format."""
    import pyarrow.parquet as pq

    keys: Set[RecordKey] = set()
    for part in parts:
        try:
            _checked_metadata(part)
            table = pq.read_table(part, columns=list(KEY), read_dictionary=["point_id"])
            # One row per record (its rows share its key): the keys made once each.
            table = table.unify_dictionaries().group_by(list(KEY), use_threads=False
                                                        ).aggregate([])
        except (OSError, ValueError):  # UnsoundPart, pyarrow's ArrowIOError, ArrowInvalid
            return None
        keys.update(zip(*(table.column(k).to_pylist() for k in KEY)))
    return keys


def ensure(campaign_root: Path, rebuild: bool = False,
           on_disk: Optional[Dict[RecordKey, Tuple[str, float]]] = None) -> Path:
    """The campaign's index, complete: built when missing, the records it lacks added as new
    parts, rebuilt when it holds records that are gone or another format (or ``rebuild``);
    small parts merged only when parts pile up (``MAX_PARTS``). What this costs is
    what changed: an index that lacks 10 records reads 10 records. ``on_disk``: the records
    on disk (``records_on_disk``) when the caller has listed them already (a report, which
    reads them too), else listed here. Needs pyarrow (MissingOptionalDependency otherwise)."""
    _arrow()
    campaign = Campaign(Path(campaign_root))
    folder = index_dir(campaign.root)
    folder.mkdir(exist_ok=True)
    with _locked(folder):
        if on_disk is None:
            on_disk = records_on_disk(campaign)
        parts = _parts(folder)
        held = None if rebuild else _indexed(parts)
        if held is not None and _gone(campaign, held.difference(on_disk)):
            held = None  # it holds a record that is gone: rebuilt from the records
        # Then of the records it lacks (all, to rebuild), those no runner holds. A runner
        # appends its record before it lets the attempt go: the part of one let go is on disk
        # now, and read below with the parts written since the listing above.
        finished = finished_records(campaign, on_disk, held)
        listed = _parts(folder)
        if held is not None and listed != parts:
            more = _indexed([p for p in listed if p not in parts])
            held = None if more is None else held | more
            if held is None:
                finished, listed = finished_records(campaign, on_disk), _parts(folder)
        parts = listed
        missing = list(finished) if held is None else [k for k in finished if k not in held]
        made = build_parts(folder, [finished[k] for k in missing])
        _swap(made, parts if held is None else [])
        if held is not None and len(parts) + len(made) > MAX_PARTS:
            with contextlib.suppress(OSError, ValueError):  # a damaged part: readers rebuild
                _merge_small(folder)
    return folder


# Records per part when an index is built from the records, each batch read by one worker.
BATCH = 2000


def build_parts(folder: Path, records: List[str]) -> List[Tuple[Path, Path]]:
    """Parts holding the rows of the ``records`` (record.json paths), each a complete
    temporary and its name (``_swap`` puts them in place). Batches of up to ``BATCH`` records,
    as many for each worker, are read in parallel by as many worker processes as there are
    CPUs, with progress on a terminal; one batch is read here."""
    workers = min(-(-len(records) // BATCH), os.cpu_count() or 1)
    # As many batches of equal size for each worker, none larger than BATCH: no worker is left
    # with a batch more than the others at the end.
    count = workers * -(-len(records) // (workers * BATCH)) if records else 0
    size = -(-len(records) // count) if count else BATCH
    batches = [records[i:i + size] for i in range(0, len(records), size)]
    shown = _Progress(len(records))
    made: List[Tuple[Path, Path]] = []
    try:
        if workers <= 1:
            for batch in batches:
                made += _batch_part(str(folder), batch)
                shown.add(len(batch))
            return made
        import concurrent.futures
        import multiprocessing

        # spawn, not fork: this process may hold Arrow's threads, which a fork does not copy.
        with concurrent.futures.ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_batch_part, str(folder), batch): len(batch)
                       for batch in batches}
            for future in concurrent.futures.as_completed(futures):
                made += future.result()
                shown.add(futures[future])
        return made
    except BaseException:
        for tmp, _ in made:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise
    finally:
        shown.close()


def _batch_part(folder: str, records: List[str]) -> List[Tuple[Path, Path]]:
    columns = _Columns()
    for path in records:
        try:
            columns.add_file(path)
        except FileNotFoundError:  # removed since it was listed: not in the index either
            continue
    if not len(columns):
        return []
    table = _arrow().Table.from_pydict(columns.data, schema=_schema())
    target = _new_part(Path(folder))
    return [(_temporary(target, _parquet_bytes(table)), target)]


class _Progress:
    """``index: N of M records`` on standard error while an index is built, on a terminal only."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.shown = total > BATCH and sys.stderr.isatty()

    def add(self, count: int) -> None:
        self.done += count
        if self.shown:
            sys.stderr.write(f"\rindex: {self.done} of {self.total} records")
            sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _gone(campaign: Campaign, unlisted: Set[RecordKey]) -> bool:
    """Whether a record the index holds but the listing has not is gone. One whose record.json
    is there was written after the listing (and its runner appended it): not gone."""
    return any(not os.path.isfile(f"{campaign.root}/points/{point}/rep{repeat}.try{number}"
                                  "/record.json") for point, repeat, number in unlisted)


def compact(campaign_root: Path) -> None:
    """Merge the one-record parts into one (end of a run: the run's own parts, never the
    campaign's); nothing without pyarrow, or while another process works on the index, or
    when the index cannot be written (it is derived)."""
    try:
        _arrow()
    except ImportError:
        return
    folder = index_dir(campaign_root)
    if not folder.is_dir():
        return
    # Never the run's failure (a part a killed writer left unreadable, a full disk): the index
    # is derived, and `ensure` rebuilds what it cannot read.
    with contextlib.suppress(Exception), _locked(folder, wait=False) as held:
        if held:
            _compact(folder)


def read_rows(campaign_roots: Iterable[Path]) -> List[Dict[str, Any]]:
    """Every index row of the campaigns (each index made complete first)."""
    rows: List[Dict[str, Any]] = []
    for root in campaign_roots:
        try:
            rows += _read_rows(_parts(ensure(root)), ROW_COLUMNS)
        except (OSError, ValueError):  # a part damaged past its keys: from the records again
            rows += _read_rows(_parts(ensure(root, rebuild=True)), ROW_COLUMNS)
    return rows


def part_files(campaign_roots: Iterable[Path]) -> List[Path]:
    """The Parquet files of the campaigns' indexes (each made complete first)."""
    return [p for root in campaign_roots for p in _parts(ensure(root))]
