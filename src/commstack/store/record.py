"""The record: what one attempt at one repeat of one point did, typed, with a JSON Schema.

``points/<id>/rep<k>.try<n>/record.json`` holds one record. Every reader loads it through
``Record.from_dict`` (which also reads the shapes earlier versions wrote) and every writer
produces it with ``Record.dumps`` (``Record.to_dict`` is the full form readers see);
``record.schema.json`` beside this module describes both and ``schema`` says which version
wrote it.

Versions:
  1  (commstack <= 0.4; no ``schema`` key in the earliest records) ``parsed`` was a list of rows,
     or one object for cartex; fields added over time may be absent.
  2  ``parsed`` is always a list of rows (every benchmark family's output has one shape).
  3  written compactly (``Record.dumps``): fields holding their default are left out, one line
     per field without indentation, and row lists (``parsed``, ``placement.ranks``) stored as
     tables (``{"blocks": [{"columns", "same", "rows"}]}``, see ``rows_table``); ``command``
     left out when it is the line ``argv``, ``env`` and ``env_prepends`` give (rebuilt on
     reading). The lists of rows that earlier versions wrote are still read, in any version.
  4  version 3, with a table of more than ``POINT_ABOVE`` bytes storing the blocks whose rows
     read back exactly from the run's ``stdout.txt`` as pointers into it (line, field, type;
     the file's sha256 checked on reading; see ``output_table``). Only a record holding such
     a table is written as version 4, so that a commstack reading up to 3 refuses it by its
     version instead of misreading it; every other record is still written as version 3.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import json.scanner
import marshal
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from commstack.shell_line import shell_line
from commstack.store import output_table

SCHEMA_VERSION = 4  # the newest version this code reads (and writes, where needed)
COMPACT_VERSION = 3  # what a record without pointers into its output is written as
# A stored table of more bytes than this points into the output where it can (output_table).
POINT_ABOVE = 3072
SCHEMA_FILE = Path(__file__).with_name("record.schema.json")

# Statuses a record can have; FAILURES count as a failed attempt, `interrupted` as not run.
STATUSES = ("ok", "crash", "timeout", "parse-error", "launch-error", "placement-mismatch",
            "interrupted")

Row = Dict[str, Any]  # one result row, keys as the benchmark family's parser names them
# source["kind"] of a record imported from a raw benchmark output (a run made elsewhere), as
# opposed to numbers copied from a published table (commstack.importers.raw).
RAW_OUTPUT = "raw output"


class RecordError(ValueError):
    """A record.json that cannot be read as a record (malformed, or written by a newer version)."""


@dataclass
class StackInfo:
    flavour: Optional[str] = None
    root: Optional[str] = None
    launcher: Optional[str] = None


@dataclass
class JobStep:
    """Where a scheduler's job step ran (from its launcher's output and the allocation); the
    record keeps it under its historical key ``slurm``."""

    job_id: Optional[str] = None
    step_id: Optional[str] = None
    nodes: List[str] = field(default_factory=list)
    allocation_nodes: List[str] = field(default_factory=list)
    tasks_per_node: Optional[int] = None
    partition: Optional[str] = None


@dataclass
class UcxReport:
    """UCX variables set for the run and what is known about their effect (provenance.ucx_report)."""

    set: Dict[str, str] = field(default_factory=dict)
    uses_ucx: Optional[str] = None  # the evidence that the run used UCX, or None
    in_effect: Dict[str, str] = field(default_factory=dict)
    unrecognised: List[str] = field(default_factory=list)
    unchecked: Dict[str, str] = field(default_factory=dict)
    unchecked_reason: Optional[str] = None
    unused_reported: List[str] = field(default_factory=list)
    reported_by_process: Dict[str, Dict[str, str]] = field(default_factory=dict)
    endpoints_by_process: Dict[str, List[str]] = field(default_factory=dict)


@dataclass
class Placement:
    """The placement check of a run (placement.check.verify): the MPI's binding report against
    the mapping the point asked for."""

    verdict: str
    summary: str
    reasons: List[str] = field(default_factory=list)
    mapping: Optional[str] = None
    source: Optional[str] = None  # which report was read, e.g. "Open MPI --report-bindings"
    checked: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    numa_domains: Optional[int] = None
    ranks: List[Dict[str, Any]] = field(default_factory=list)


# A record's fields in slots, no __dict__ (Python 3.10 on): a report holds 10^5 records, and a
# dict of 45 fields is some 1.3 kB more per record than the slots.
_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}


@dataclass(**_SLOTS)
class Record:
    campaign: str
    machine: str
    benchmark: str
    point_id: str
    repeat: int
    attempt: int
    params: Dict[str, Any]
    status: str
    stack: Optional[str] = None
    stack_info: StackInfo = field(default_factory=StackInfo)
    ranks: Optional[int] = None
    nodes: Optional[int] = None
    oversubscribed: Optional[bool] = None  # more processes than cores; unknown when imported
    parsed: List[Row] = field(default_factory=list)
    parse_error: Optional[str] = None
    notes: List[str] = field(default_factory=list)
    build_config: Optional[str] = None  # what the benchmark printed about its build (GASNet-EX)
    # How it was launched (absent for imported records).
    argv: List[str] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    env_prepends: Dict[str, List[str]] = field(default_factory=dict)
    command: Optional[str] = None
    exit_code: Optional[int] = None
    timeout_s: Optional[float] = None
    start: Optional[float] = None
    end: Optional[float] = None
    duration_s: Optional[float] = None
    stdout: Optional[str] = None  # file names in the attempt folder
    stderr: Optional[str] = None
    session: Optional[str] = None
    topology: Optional[str] = None  # sessions/<id>/topology.xml, or why there is none
    placement: Optional[Placement] = None
    ucx: Optional[UcxReport] = None
    # Variables the pre-flight let through without checking them, and why
    # (docs/explanation/preflight.md).
    preflight_unchecked: Dict[str, str] = field(default_factory=dict)
    slurm: Optional[JobStep] = None
    # Which collective component served each collective, from the MPI's own output
    # (flavours' components_used; docs/explanation/components-used.md); None: the run asked for none.
    components_used: Optional[Dict[str, Any]] = None
    # Numbers brought in from a published file instead of run here (commstack import).
    imported: bool = False
    source: Optional[Dict[str, Any]] = None
    units: Optional[Dict[str, str]] = None
    # Where the run stood in its repeat's order: {"kind": "shuffled", "seed": 123, "position": 4}
    # (the 4th point run in this repeat; a fixed order has no seed). commstack.run_order
    order: Optional[Dict[str, Any]] = None
    # Adaptive repeats: why the point takes no more repeats after this one (commstack.adaptive).
    repeats_stopped: Optional[str] = None
    # Simulated, not measured: the simulator, the machine and platform it modelled, its
    # settings (a simulated flavour's launch, e.g. SimGrid SMPI); None: a run on real nodes.
    simulation: Optional[Dict[str, Any]] = None
    schema: int = SCHEMA_VERSION

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def published(self) -> bool:
        """Imported numbers from a published table, not a run's output (raw outputs imported
        with ``commstack import --benchmark`` are runs, made elsewhere)."""
        return self.imported and (self.source or {}).get("kind") != RAW_OUTPUT

    @property
    def flavour(self) -> Optional[str]:
        return self.stack_info.flavour

    @property
    def step(self) -> Optional[JobStep]:
        """Where its scheduler ran it (the historical key ``slurm``); None outside a scheduler."""
        return self.slurm

    @property
    def simulated(self) -> bool:
        return self.simulation is not None

    def to_dict(self) -> Dict[str, Any]:
        """Every field, rows as lists of objects (what readers and the JSON Schema see)."""
        return dataclasses.asdict(self)

    def stored(self, folder: Optional[Path] = None) -> Dict[str, Any]:
        """The form ``record.json`` holds: defaults left out, row lists as tables; with the
        record's ``folder``, a table of more than ``POINT_ABOVE`` bytes points into the output
        beside it where its rows read back exactly from there (``output_table``)."""
        data = _without_defaults(self)
        if self.argv and self.command == _shell_line(self.argv, self.env, self.env_prepends):
            del data["command"]  # the launch line, rebuilt on reading from argv and env
        elif self.argv:
            data["command"] = self.command  # also when null: not to be rebuilt
        if "parsed" in data:
            table = data["parsed"] = rows_table(data["parsed"])
            output = folder / self.stdout if folder is not None and self.stdout else None
            if output and output.is_file() and len(json.dumps(table, separators=(",", ":"))) > POINT_ABOVE:
                data["parsed"] = output_table.point_into(table, output.read_bytes(), self.stdout)
        data["schema"] = SCHEMA_VERSION if output_table.points_into(data.get("parsed")) \
            else COMPACT_VERSION
        placement = data.get("placement")
        if placement and placement.get("ranks"):
            placement["ranks"] = rows_table(placement["ranks"])
        return data

    def dumps(self, folder: Optional[Path] = None) -> bytes:
        """``record.json``'s bytes: one field per line, no indentation, keys sorted; ``folder``
        is the attempt folder it is written to, holding the run's output (see ``stored``)."""
        data = self.stored(folder)
        lines = [f"{json.dumps(k)}:{json.dumps(data[k], sort_keys=True, separators=(',', ':'), default=str)}"
                 for k in sorted(data)]
        return ("{\n" + ",\n".join(lines) + "\n}\n").encode()

    @classmethod
    def from_dict(cls, data: Dict[str, Any], where: str = "record",
                  folder: Optional[Path] = None) -> "Record":
        """A record from its JSON form, any version this code knows; RecordError names ``where``.
        ``folder`` holds the output a large table points into (``Record.load`` gives it)."""
        if not isinstance(data, dict):
            raise RecordError(f"{where}: not a JSON object")
        version = data.get("schema", 1)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise RecordError(f"{where}: schema {version!r} is newer than this commstack reads "
                              f"(up to {SCHEMA_VERSION}); upgrade commstack")
        data = _upgrade(dict(data)) if version < 2 else dict(data)
        if version >= 3 and data.get("argv") and "command" not in data:
            data["command"] = _shell_line(data["argv"], data.get("env") or {},
                                          data.get("env_prepends") or {})
        data["schema"] = SCHEMA_VERSION
        data["parsed"] = table_rows(resolved_table(data.get("parsed"), folder, f"{where}: parsed"),
                                    f"{where}: parsed")
        placement = data.get("placement")
        if isinstance(placement, dict) and "ranks" in placement:
            data["placement"] = dict(placement, ranks=table_rows(placement["ranks"],
                                                                 f"{where}: placement.ranks"))
        required, known = _field_names(cls)
        missing = [name for name in required if name not in data]
        if missing:
            raise RecordError(f"{where}: missing {', '.join(missing)}")
        unknown = set(data) - known
        if unknown:
            raise RecordError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        data["stack_info"] = StackInfo(**(data.get("stack_info") or {}))
        for name, kind in (("placement", Placement), ("ucx", UcxReport), ("slurm", JobStep)):
            if data.get(name) is not None:
                data[name] = _typed(kind, data[name], f"{where}: {name}")
        return cls(**data)

    @classmethod
    def load(cls, path: Path) -> "Record":
        return cls.from_dict(read_json(path), str(path), Path(path).parent)


class HeadReader:
    """Records for a report from their record.json forms without rows (``parsed`` left out: the
    index's ``record`` column, ``tidy_index.record_head``), as ``Record.from_dict`` makes them,
    with its checks and its errors naming the file, for 10^5 records at a time. Two differences:

    * A value equal to one an earlier record has (a point's launch line, environment and
      parameters, a stack's UCX report and placement check) is that record's object, not a
      copy: equal as JSON, types and all (1, 1.0 and true are three values), as told by
      ``marshal``. The report reads these objects and changes none.
    * ``parsed`` is empty and the placement keeps no per-rank rows (``ranks`` empty; the table
      checked to be a list or table of rows, not read): the report reads a placement's verdict
      and summary alone; a record whose rows a report section reads is loaded from its
      record.json (``Record.load``)."""

    def __init__(self) -> None:
        self._values: Dict[bytes, Any] = {}  # marshal of a JSON object or list -> the first one
        self._strings: Dict[str, str] = {}  # a string -> the first equal one
        self._made: Dict[Tuple[str, bytes], Any] = {}  # (field, marshal of its JSON) -> object
        self._commands: Dict[Tuple[bytes, ...], str] = {}  # argv, env, env_prepends -> line

    def record(self, text: str, where: str) -> Record:
        """The record of ``text`` (a record.json's JSON object, its rows left out);
        RecordError names ``where``."""
        try:
            data, end = _SCAN(text, 0)  # json.loads but its checks of what is around the value
            if end != len(text):
                raise StopIteration
        except (StopIteration, ValueError):
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise RecordError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise RecordError(f"{where}: not a JSON object")
        version = data.get("schema", 1)
        if not isinstance(version, int) or version < 2 or version > SCHEMA_VERSION:
            # An earlier version's form (or one this code does not read): its checks, errors.
            record = Record.from_dict(dict(data, parsed=None), where)
            if record.placement is not None and record.placement.ranks:
                record.placement = dataclasses.replace(record.placement, ranks=[])
            return record
        values, strings, made, names = self._values, self._strings, self._made, _NAMES
        out: Dict[str, Any] = {}
        for name, value in data.items():
            kind = type(value)
            if kind is str:
                value = strings.setdefault(value, value)
            elif kind is dict or kind is list:
                code = marshal.dumps(value, 2)
                # A dataclass field's object when this value made one already, else checked
                # and made below.
                value = made.get((name, code), value) if name in _MADE_HERE \
                    else values.setdefault(code, value)
            # Keyed by the field's own name object: Record(**data) matches each argument to
            # its parameter by identity, not comparing the text (a third of the time).
            out[names.get(name, name)] = value
        data = out
        if version >= 3 and data.get("argv") and "command" not in data:
            data["command"] = self._command(data)
        data["schema"] = SCHEMA_VERSION
        data["parsed"] = []
        placement = data.get("placement")
        if type(placement) is dict and "ranks" in placement:
            _check_rows(placement["ranks"], f"{where}: placement.ranks")
        if not data.keys() >= _REQUIRED:
            missing = [name for name in _field_names(Record)[0] if name not in data]
            raise RecordError(f"{where}: missing {', '.join(missing)}")
        known = _field_names(Record)[1]
        if not known.issuperset(data):
            unknown = set(data) - known
            raise RecordError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        info = data.get("stack_info")
        if type(info) is not StackInfo:
            info = info or {}
            data["stack_info"] = self._made_once("stack_info", info, where) \
                if isinstance(info, dict) else StackInfo(**info)  # (a TypeError, as from_dict)
        for name, kind in _DATACLASSES:
            value = data.get(name)
            if value is not None and type(value) is not kind:
                data[name] = self._made_once(name, value, where)
        return Record(**data)

    def _made_once(self, name: str, value: Any, where: str) -> Any:
        """The dataclass of field ``name`` made of ``value`` (its checks and errors), one
        object per distinct value; a placement without its rows."""
        if not isinstance(value, dict):
            raise RecordError(f"{where}: {name}: expected an object")
        key = (name, marshal.dumps(value, 2))
        found = self._made.get(key)
        if found is None:
            if name == "stack_info":
                found = StackInfo(**value)
            elif name == "placement":
                rest = {k: v for k, v in value.items() if k != "ranks"}
                aside = ("placement, ranks aside", marshal.dumps(rest, 2))
                found = self._made.get(aside)
                if found is None:
                    found = self._made[aside] = _typed(Placement, rest, f"{where}: placement")
            else:
                found = _typed(UcxReport if name == "ucx" else JobStep, value,
                               f"{where}: {name}")
            self._made[key] = found
        return found

    def _command(self, data: Dict[str, Any]) -> str:
        """The launch line of a version-3 record that left it out (``_shell_line``), made once
        per argv, env and env_prepends."""
        argv, env, prepends = data["argv"], data.get("env") or {}, data.get("env_prepends") or {}
        try:
            key = tuple(marshal.dumps(v, 2) for v in (argv, env, prepends))
        except ValueError:  # not JSON's types: as from_dict does (and fails)
            return _shell_line(argv, env, prepends)
        command = self._commands.get(key)
        if command is None:
            command = self._commands[key] = _shell_line(argv, env, prepends)
        return command


def _check_rows(value: Any, where: str) -> None:
    """A list of rows or a table of them (``table_rows``), by its outer shape alone."""
    if not (value is None or isinstance(value, list) or (
            isinstance(value, dict) and isinstance(value.get("blocks"), list))):
        raise RecordError(f"{where}: not a list of rows or a table of them")


# Fields HeadReader makes the objects of itself (or leaves out: the rows).
_MADE_HERE = frozenset(("stack_info", "placement", "ucx", "slurm", "parsed"))
_DATACLASSES = (("placement", Placement), ("ucx", UcxReport), ("slurm", JobStep))
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # one JSON value at a position


# A record.json is some kilobytes (its rows point into stdout.txt); this bounds what reading one
# costs (docs/reference/input-limits.md).
MAX_RECORD_BYTES = 4 << 20


def read_json(path: Path) -> Any:
    """A record.json's JSON, undecoded into a Record (RecordError names a file that is not JSON)."""
    with open(path, "rb") as handle:
        text = handle.read(MAX_RECORD_BYTES + 1)
    if len(text) > MAX_RECORD_BYTES:
        raise RecordError(f"{path}: larger than a record.json can be ({MAX_RECORD_BYTES >> 20} MiB):"
                          " not written by commstack")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise RecordError(f"{path}: not valid JSON ({exc})") from None


# How the store writes record.json: a top-level key starts a line, indented by one space (schema
# 2) or not at all (schema 3, one field per line); nested keys are indented deeper (2) or inside
# their field's line (3).
_STATUS_LINES = (b'\n "status": "', b'\n"status":"')
_SCHEMA_LINE = re.compile(rb'\n ?"schema": ?(\d+)')


def stored_status(data: bytes) -> Optional[str]:
    """The run status in a record.json's bytes as the store writes them, without decoding the
    JSON (``commstack status`` reads 10,000s). None when it cannot be told so (another form, a
    newer schema) or when components asked for may not have been used: :meth:`Record.load`."""
    schema = _SCHEMA_LINE.search(data, max(0, len(data) - 4096)) or _SCHEMA_LINE.search(data)
    if schema is None or int(schema.group(1)) > SCHEMA_VERSION or b'"not_used"' in data:
        return None
    for marker in _STATUS_LINES:  # the key sorts near the end: looked for from there
        at = data.rfind(marker)
        if at >= 0:
            start = at + len(marker)
            value = data[start:data.find(b'"', start)]
            return value.decode() if b"\\" not in value else None
    return None


@functools.lru_cache(maxsize=None)
def _field_names(kind: type) -> Tuple[Tuple[str, ...], frozenset]:
    """(the fields without a default, every field) of a dataclass."""
    fields = dataclasses.fields(kind)
    required = tuple(f.name for f in fields if f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)
    return required, frozenset(f.name for f in fields)


_REQUIRED = frozenset(_field_names(Record)[0])  # the fields a record.json must have
_NAMES = {f.name: f.name for f in dataclasses.fields(Record)}  # a field's name -> its object


def _typed(kind: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected an object")
    names = _field_names(kind)[1]
    unknown = set(value) - names
    if unknown:
        raise RecordError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    try:
        return kind(**value)
    except TypeError as exc:
        raise RecordError(f"{where}: {exc}") from None


def _upgrade(data: Dict[str, Any]) -> Dict[str, Any]:
    """Schema 1 -> 2: cartex's single parsed object becomes a one-row list; absent -> []."""
    parsed = data.get("parsed")
    data["parsed"] = [parsed] if isinstance(parsed, dict) else list(parsed or [])
    for key in ("notes", "argv"):
        if data.get(key) is None:
            data.pop(key, None)
    if data.get("stack_info") is None:
        data.pop("stack_info", None)
    return data


# Integer row keys that label a group of rows (a process count) rather than one row: a table
# block starts where one changes, as where a text value or the row's keys change.
_LABEL_KEYS = ("np", "groups", "group", "threads", "node", "ranks")


def rows_table(rows: List[Row]) -> Dict[str, Any]:
    """Rows as blocks of consecutive rows with the same keys and labels: per block the keys
    whose value varies (``columns``), the values shared by all its rows (``same``) and one list
    of values per row (``rows``); values all blocks share once (``same`` beside ``blocks``).
    ``table_rows`` gives the rows back, equal key for key."""
    blocks: List[List[Row]] = []
    for row in rows:
        if blocks and _label(blocks[-1][0]) == _label(row):
            blocks[-1].append(row)
        else:
            blocks.append([row])
    out = []
    for block in blocks:
        first = block[0]
        same = {k: v for k, v in first.items() if all(_equal(r[k], v) for r in block[1:])} \
            if len(block) > 1 else {}
        columns = sorted(k for k in first if k not in same)
        out.append({"columns": columns, "same": same, "rows": [[r[k] for k in columns] for r in block]})
    shared = _shared(out) if len(out) > 1 else {}
    for b in out:
        b["same"] = {k: v for k, v in b["same"].items()
                     if k not in shared or not _equal(v, shared[k])}
    return {"same": shared, "blocks": out} if shared else {"blocks": out}


def _shared(blocks: List[Dict[str, Any]]) -> Row:
    """The values written once for all blocks: of each key every block's rows have, the value
    most blocks share (a block's own ``same`` or ``columns`` override it), when two or more do."""
    everywhere = set(blocks[0]["same"]) | set(blocks[0]["columns"])
    for b in blocks[1:]:
        everywhere &= set(b["same"]) | set(b["columns"])
    shared = {}
    for key in sorted(everywhere):
        counts: Dict[str, int] = {}
        for b in blocks:
            if key in b["same"]:
                written = _json(b["same"][key])
                counts[written] = counts.get(written, 0) + 1
        if counts:
            written, count = max(counts.items(), key=lambda item: (item[1], item[0]))
            if count >= 2:
                shared[key] = json.loads(written)
    return shared


def _label(row: Row) -> tuple:
    return (tuple(sorted(row)),) + tuple(
        (k, _json(v)) for k, v in sorted(row.items())
        if k in _LABEL_KEYS or v is None or isinstance(v, (str, bool)))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _equal(a: Any, b: Any) -> bool:
    """Equal as written: 1, 1.0 and true are three values."""
    return _json(a) == _json(b)


def resolved_table(value: Any, folder: Optional[Path], where: str) -> Any:
    """A stored table with the blocks that point into the run's output read back (any other
    value as it is); RecordError, naming ``where``, when they cannot be."""
    if not output_table.points_into(value):
        return value
    try:
        return output_table.resolve(value, folder)
    except output_table.OutputTableError as exc:
        raise RecordError(f"{where}: {exc}") from None


def table_blocks(value: Any, where: str) -> List[Tuple[Row, List[str], List[List[Any]]]]:
    """The blocks of a ``rows_table`` as they are: per block the values its rows share (the
    table's and the block's own ``same``: what ``table_rows`` puts in every row, a column
    overriding them), its ``columns`` and its rows of values; RecordError, naming ``where``,
    for a table of another shape. What a reader of 10^5 records takes a column at a time."""
    try:
        shared = value.get("same", {})
        out = []
        for block in value["blocks"]:
            columns, rows = list(block["columns"]), block["rows"]
            if not all(len(values) == len(columns) for values in rows):
                raise ValueError(f"a row has other than {len(columns)} values")
            same = {k: v for k, v in dict(shared, **block["same"]).items() if k not in columns}
            out.append((same, columns, rows))
        return out
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"{where}: not a list of rows or a table of them ({exc})") from None


def table_rows(value: Any, where: str) -> List[Row]:
    """The rows of a ``rows_table`` (a list of rows, as earlier versions wrote, is kept)."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    try:
        rows = []
        for block in value["blocks"]:
            columns, same = block["columns"], dict(value.get("same", {}), **block["same"])
            for values in block["rows"]:
                if len(values) != len(columns):
                    raise ValueError(f"a row has {len(values)} values for {len(columns)} columns")
                row = dict(same, **dict(zip(columns, values)))
                rows.append({k: row[k] for k in sorted(row)})
        return rows
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"{where}: not a list of rows or a table of them ({exc})") from None


def _shell_line(argv: List[str], env: Dict[str, str], prepends: Dict[str, List[str]]) -> str:
    """The launch line of a record's argv, env and env_prepends, held as the launch command
    holds them (a list, dicts)."""
    return shell_line(list(argv), dict(env), dict(prepends))


def _without_defaults(value: Any) -> Any:
    """A dataclass as a dict without the fields that hold their default (nested dataclasses
    likewise); ``schema`` is always kept."""
    if not dataclasses.is_dataclass(value):
        return value
    out = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                   else f.default)
        if f.name != "schema" and default is not dataclasses.MISSING and item == default:
            continue
        out[f.name] = (_without_defaults(item) if dataclasses.is_dataclass(item)
                       else json.loads(json.dumps(item, default=str)))
    return out


def schema() -> Dict[str, Any]:
    """The JSON Schema of a written record (shipped with the package)."""
    return json.loads(SCHEMA_FILE.read_text())
