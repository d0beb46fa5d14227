"""Import raw benchmark outputs made elsewhere (IMB, OSU, cartex, GASNet-EX logs) as records.

``commstack import DIR|FILE --benchmark imb|osu|cartex|gasnet --out results/<machine>/<campaign>``

Each output file becomes one record, written like a run's (``points/<id>/rep<k>.try1/`` with the
output as ``stdout.txt``) and marked ``imported`` with a ``source``: the path as given, its
sha256, when it was imported. A file ``X.err`` beside ``X.out`` is that run's stderr (kept as
``stderr.txt``, not imported on its own). The family's parser reads the output; an output it
refuses (cut off, failed) or whose notes say it did not run what was asked becomes a
``parse-error`` record with the reason. A file that is not an output of the family at all
(nothing in it that the family prints) is reported and skipped.

Parameters come from the output only, never from the file name or a guess: IMB's calling
sequence (executable, benchmark list, options under their matrix names), its benchmark list,
its version and the job's process count; OSU's test and version; cartex's runtime and ranks;
GASNet-EX's program, process count and conduit. Outputs whose printed parameters are the same
are repeats of one point. Where the output does not print its configuration (OSU, cartex,
GASNet-EX test arguments, IMB without a calling sequence) the file is a point of its own: the
parameter ``output`` names it, and a note says why.

The sha256 of the output (and of its stderr) identifies an import: importing a file again adds
nothing. A campaign of another kind (a sweep, a published table, another family) is refused.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import commstack
from commstack import bounds
from commstack.benchmarks import registry
from commstack.benchmarks.base import Output, ParseError
from commstack.benchmarks.facts import RawOutputs
from commstack.benchmarks.text import printed_lines
from commstack.errors import CampaignError
from commstack.matrix.model import Point
from commstack.store import state_log
from commstack.store.campaign import Campaign
from commstack.store.files import read_json, write_new
from commstack.store.record import RAW_OUTPUT, Record, StackInfo

KIND = "raw outputs"  # campaign.json "imported" of such a campaign


@dataclass
class Reading:
    """One output file, read and parsed (nothing written yet)."""

    path: Path                       # as given (relative or absolute)
    name: str                        # relative to the imported directory, for `output`
    data: bytes
    sha256: str
    stderr_path: Optional[Path] = None
    stderr_data: Optional[bytes] = None
    stderr_sha256: Optional[str] = None
    benchmark: str = ""
    params: Dict[str, Any] = field(default_factory=dict)
    ranks: Optional[int] = None
    status: str = "ok"
    parsed: List[dict] = field(default_factory=list)
    parse_error: Optional[str] = None
    notes: List[str] = field(default_factory=list)
    build_config: Optional[str] = None

    @property
    def identity(self) -> Tuple[str, Optional[str]]:
        return self.sha256, self.stderr_sha256


@dataclass
class RawImportResult:
    campaign: Path
    family: str
    added: List[Tuple[str, str, int, str]] = field(default_factory=list)  # path, point, repeat, status
    already: List[str] = field(default_factory=list)
    skipped: List[Tuple[str, str]] = field(default_factory=list)         # path, why
    paired: List[Tuple[str, str]] = field(default_factory=list)          # stderr file, its stdout

    def summary(self) -> str:
        failed = sum(1 for *_, status in self.added if status != "ok")
        lines = [f"{self.campaign}: {len(self.added)} {self.family} output(s) imported "
                 f"({failed} failed), {len(self.already)} already imported, "
                 f"{len(self.skipped)} skipped"]
        lines += [f"  imported: {p} -> point {pid} repeat {rep}: {status}"
                  for p, pid, rep, status in self.added]
        lines += [f"  already imported: {p}" for p in self.already]
        lines += [f"  stderr of {out}: {err}" for err, out in self.paired]
        lines += [f"  skipped: {p}: {why}" for p, why in self.skipped]
        if not self.added and self.already:
            lines.append("  nothing new: every output was imported before")
        return "\n".join(lines)


# --- finding the files -------------------------------------------------------------------------


def _files(source: Path) -> List[Path]:
    if source.is_file():
        return [source]
    if source.is_dir():
        return sorted(p for p in source.rglob("*") if p.is_symlink() or p.is_file())
    raise CampaignError(f"{source}: no such file or directory")


def _stderr_of(path: Path, files: Set[Path]) -> Optional[Path]:
    """``X.err`` beside ``X.out`` (among ``files``): the stderr of the run whose stdout is
    ``path``."""
    err = path.with_suffix(".err")
    return err if path.suffix == ".out" and err in files else None


# --- reading one output ------------------------------------------------------------------------


def read_output(path: Path, name: str, family: str, stderr: Optional[Path] = None
                ) -> "Reading | str":
    """The file parsed as an output of ``family``, or why it is not one (a sentence)."""
    if path.is_symlink():
        return "a symbolic link, not followed (import the file it points to)"
    for file in (path, stderr):
        if file is not None and file.stat().st_size > bounds.MAX_OUTPUT_BYTES:
            return (f"{file.name} is larger than commstack reads of an output "
                    f"({bounds.MAX_OUTPUT_BYTES >> 20} MiB)")
    data = path.read_bytes()
    if b"\0" in data:
        return "binary file, not a benchmark output"
    err_data = stderr.read_bytes() if stderr else None
    text = data.decode(errors="replace")
    err_text = err_data.decode(errors="replace") if err_data is not None else ""
    if not (text + err_text).strip():
        return "empty"
    raw = _raw_outputs(family)
    if not any(map(raw.signature.match, printed_lines(text) + printed_lines(err_text))):
        return f"nothing in it that {family} prints ({raw.signature_help})"
    reading = Reading(path, name, data, hashlib.sha256(data).hexdigest(), stderr, err_data,
                      hashlib.sha256(err_data).hexdigest() if err_data is not None else None)
    output: Optional[Output] = None
    try:
        output = registry.parser_for(family)(text)
    except ParseError as exc:
        reading.status, reading.parse_error = "parse-error", str(exc)
    if output is not None:
        reading.parsed, reading.notes = output.rows, list(output.notes)
        reading.build_config = output.build_config
    try:
        _describe(reading, raw, text, output)
    except ParseError as exc:  # a count past any machine in what describes the run
        reading.status, reading.parse_error = "parse-error", str(exc)
        reading.benchmark = reading.benchmark or family
        return reading
    if output is not None:
        fatal = registry.family(family).fatal(output)  # type: ignore[union-attr]
        if fatal:
            reading.status, reading.parse_error = "parse-error", "; ".join(fatal)
        elif (twins := _indistinct_rows(reading)):
            reading.status, reading.parse_error = "parse-error", twins
    return reading


def _indistinct_rows(reading: Reading) -> Optional[str]:
    """Why the rows cannot be told apart (two rows with the same benchmark, process count,
    size ...: tables the output does not name), or None. Their numbers would read as repeats."""
    keys = registry.row_keys(reading.benchmark)
    seen: Set[tuple] = set()
    for row in reading.parsed:
        key = tuple(row.get(k) for k in keys)
        if key in seen:
            label = ", ".join(f"{k}={v}" for k, v in zip(keys, key) if v is not None)
            return (f"result rows cannot be told apart: more than one row with {label} (the "
                    "output does not name their tables); its numbers are not counted as results")
        seen.add(key)
    return None


def _raw_outputs(family: str) -> RawOutputs:
    return registry.family(family).raw_outputs  # type: ignore[union-attr,return-value]


def _own_point(reading: Reading, why: str) -> None:
    reading.params["output"] = reading.name
    reading.notes.append(f"{why}: this file is a point of its own (parameter 'output')")


def _describe(reading: Reading, raw: RawOutputs, text: str, output: Optional[Output]) -> None:
    run = raw.describe(text, output, reading.notes)
    reading.benchmark, reading.params, reading.ranks = run.benchmark, run.params, run.ranks
    reading.notes += run.notes
    if run.own_point:
        _own_point(reading, run.own_point)


# --- writing -----------------------------------------------------------------------------------


def _check_campaign(campaign: Campaign, family: str, source: Path) -> None:
    root = campaign.root
    if source.is_dir() and root.resolve().is_relative_to(source.resolve()):
        raise CampaignError(f"{root} lies inside {source}: import into a directory outside the "
                            "imported one")
    info_path = root / "campaign.json"
    if info_path.is_file():
        info = read_json(info_path)
        if info.get("imported") != KIND or info.get("format") != family:
            kind = (f"{info.get('format')} raw outputs" if info.get("imported") == KIND
                    else "published tables" if info.get("imported") else "commstack runs")
            raise CampaignError(f"{root} is a campaign of {kind}, not of imported {family} "
                                "outputs; import into a new campaign directory")
    elif root.exists() and any(root.iterdir()):
        raise CampaignError(f"{root} exists and is not a campaign (no campaign.json); import "
                            "into a new campaign directory")


def import_outputs(source: Path, family: str, root: Path) -> RawImportResult:
    """Import every output of ``family`` in ``source`` (a file, or a directory read
    recursively, files in sorted order) into the campaign at ``root``."""
    if family not in registry.import_formats():
        raise CampaignError(f"--benchmark {family!r}: expected one of "
                            f"{', '.join(registry.import_formats())}")
    source, campaign = Path(source), Campaign(Path(root))
    files = _files(source)
    _check_campaign(campaign, family, source)
    result = RawImportResult(campaign.root, family)
    siblings = set(files) if source.is_dir() else {source.with_suffix(".err")} - {source}
    present = {p for p in siblings if p.is_file()}
    stderr_files = {e for p in files if (e := _stderr_of(p, present))}
    readings: List[Reading] = []
    for path in files:
        if path in stderr_files:
            continue
        name = path.relative_to(source).as_posix() if source.is_dir() else path.name
        stderr = _stderr_of(path, present)
        read = read_output(path, name, family, stderr)
        if isinstance(read, str):
            result.skipped.append((str(path), read))
            if stderr is not None:
                result.skipped.append((str(stderr), f"stderr of {path.name}, skipped with it"))
            continue
        if stderr is not None:
            result.paired.append((str(stderr), str(path)))
        readings.append(read)
    campaign.ensure({"campaign": campaign.name, "machine": campaign.machine, "imported": KIND,
                     "format": family, "benchmark": family, "created": time.time(),
                     "commstack_version": commstack.__version__})
    with _import_lock(campaign):
        known = _imported(campaign)
        for reading in readings:
            if reading.identity in known:
                result.already.append(str(reading.path))
                continue
            point_id, repeat = _write(campaign, reading)
            known.add(reading.identity)
            result.added.append((str(reading.path), point_id, repeat, reading.status))
    return result


class _import_lock:
    """One import into a campaign at a time (the check for earlier imports and the writes)."""

    def __init__(self, campaign: Campaign):
        self.path = campaign.root / ".import.lock"
        self.fd: Optional[int] = None

    def __enter__(self) -> "_import_lock":
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _imported(campaign: Campaign) -> Set[Tuple[str, Optional[str]]]:
    return {(r.source.get("sha256"), r.source.get("stderr_sha256"))
            for r in campaign.records() if r.imported and r.source}


def _write(campaign: Campaign, reading: Reading) -> Tuple[str, int]:
    """Write the reading as the next repeat of its point; returns (point id, repeat)."""
    point = Point(reading.benchmark, tuple(sorted(reading.params.items())))
    campaign.save_point(point)
    repeat = 1
    while True:  # the first repeat of the point without a record
        _, attempt = campaign.claim(point.id, repeat)
        if attempt is not None:
            break
        repeat += 1
    try:
        write_new(attempt.path / "stdout.txt", reading.data)
        if reading.stderr_data is not None:
            write_new(attempt.path / "stderr.txt", reading.stderr_data)
        source = {"kind": RAW_OUTPUT, "format": _family_of(reading.benchmark),
                  "file": str(reading.path), "sha256": reading.sha256,
                  "bytes": len(reading.data),
                  "imported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if reading.stderr_path is not None:
            source.update(stderr_file=str(reading.stderr_path),
                          stderr_sha256=reading.stderr_sha256)
        record = Record(
            campaign=campaign.name, machine=campaign.machine, benchmark=reading.benchmark,
            point_id=point.id, repeat=repeat, attempt=attempt.number,
            params=point.as_dict(), status=reading.status, stack_info=StackInfo(),
            ranks=reading.ranks, parsed=reading.parsed, parse_error=reading.parse_error,
            notes=reading.notes, build_config=reading.build_config,
            stdout="stdout.txt", stderr="stderr.txt" if reading.stderr_data is not None else None,
            imported=True, source=source)
        write_new(attempt.record_path, record.dumps(attempt.path))  # as a sweep writes it
        state_log.record_written(campaign.root, record)
    finally:
        attempt.release()
    return point.id, repeat


def _family_of(benchmark: str) -> str:
    return benchmark.split("-")[0]
