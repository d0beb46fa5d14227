"""The record: what one attempt at one repeat of one point did, typed, with a JSON Schema.

``points/<id>/rep<k>.try<n>/record.json`` holds one record. Every reader loads it through
``Record.from_dict`` (which also reads the shapes earlier versions wrote) and every writer
produces it with ``Record.to_dict``; ``record.schema.json`` beside this module describes the
written form and ``schema`` says which version wrote it.

Versions:
  1  (commstack <= 0.4; no ``schema`` key in the earliest records) ``parsed`` was a list of rows,
     or one object for cartex; fields added over time may be absent.
  2  ``parsed`` is always a list of rows (every benchmark family's output has one shape).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

SCHEMA_VERSION = 2
SCHEMA_FILE = Path(__file__).with_name("record.schema.json")

# Statuses a record can have; FAILURES count as a failed attempt, `interrupted` as not run.
STATUSES = ("ok", "crash", "timeout", "parse-error", "launch-error", "placement-mismatch",
            "interrupted")

Row = Dict[str, Any]  # one result row, keys as the benchmark family's parser names them


class RecordError(ValueError):
    """A record.json that cannot be read as a record (malformed, or written by a newer version)."""


@dataclass
class StackInfo:
    flavour: Optional[str] = None
    root: Optional[str] = None
    launcher: Optional[str] = None


@dataclass
class SlurmStep:
    """Where a Slurm job step ran (from srun's own output and the allocation)."""

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


@dataclass
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
    # Variables the pre-flight let through without checking them, and why (README: Pre-flight).
    preflight_unchecked: Dict[str, str] = field(default_factory=dict)
    slurm: Optional[SlurmStep] = None
    # Which collective component served each collective, from the MPI's own output
    # (flavours' components_used; README: Components used); None: the run asked for none.
    components_used: Optional[Dict[str, Any]] = None
    # Numbers brought in from a published file instead of run here (commstack import).
    imported: bool = False
    source: Optional[Dict[str, Any]] = None
    units: Optional[Dict[str, str]] = None
    schema: int = SCHEMA_VERSION

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def flavour(self) -> Optional[str]:
        return self.stack_info.flavour

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any], where: str = "record") -> "Record":
        """A record from its JSON form, any version this code knows; RecordError names ``where``."""
        if not isinstance(data, dict):
            raise RecordError(f"{where}: not a JSON object")
        version = data.get("schema", 1)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise RecordError(f"{where}: schema {version!r} is newer than this commstack reads "
                              f"(up to {SCHEMA_VERSION}); upgrade commstack")
        data = _upgrade(dict(data)) if version < SCHEMA_VERSION else dict(data)
        missing = [f.name for f in dataclasses.fields(cls)
                   if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                   and f.name not in data]
        if missing:
            raise RecordError(f"{where}: missing {', '.join(missing)}")
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise RecordError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        data["stack_info"] = StackInfo(**(data.get("stack_info") or {}))
        for name, kind in (("placement", Placement), ("ucx", UcxReport), ("slurm", SlurmStep)):
            if data.get(name) is not None:
                data[name] = _typed(kind, data[name], f"{where}: {name}")
        return cls(**data)

    @classmethod
    def load(cls, path: Path) -> "Record":
        try:
            data = json.loads(Path(path).read_text())
        except ValueError as exc:
            raise RecordError(f"{path}: not valid JSON ({exc})") from None
        return cls.from_dict(data, str(path))


def _typed(kind: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected an object")
    names = {f.name for f in dataclasses.fields(kind)}
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
    data["schema"] = SCHEMA_VERSION
    return data


def schema() -> Dict[str, Any]:
    """The JSON Schema of a written record (shipped with the package)."""
    return json.loads(SCHEMA_FILE.read_text())
