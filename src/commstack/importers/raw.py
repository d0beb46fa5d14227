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
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import commstack
from commstack import bounds
from commstack.benchmarks import imb, osu, registry
from commstack.benchmarks.base import Output, ParseError
from commstack.benchmarks.imb import OPTIONS as IMB_OPTIONS
from commstack.benchmarks.text import strip_launcher_prefix
from commstack.errors import CampaignError
from commstack.matrix.model import Point
from commstack.store import state_log
from commstack.store.campaign import Campaign
from commstack.store.files import read_json, write_new
from commstack.store.record import RAW_OUTPUT, Record, StackInfo

FAMILIES = ("imb", "osu", "cartex", "gasnet")
KIND = "raw outputs"  # campaign.json "imported" of such a campaign

# A line only the family prints (banner, title, section header, a failure it reports), matched
# at the start of a line once launcher prefixes and indentation are removed.
_SIGNATURES: Dict[str, re.Pattern] = {
    "imb": re.compile(r"^(?:#\s+(?:Intel\s?\(R\)|PALLAS) MPI Benchmark|# Benchmarking \S|"
                      r"#bytes\s+#repetitions)"),
    "osu": re.compile(r"^(?:# OSU MPI|Usage: osu_\S+ \[options\])"),
    "cartex": re.compile(r"^(?:running on \d+ ranks?$|command line parsing error|"
                         r"could not create decomposition)"),
    "gasnet": re.compile(r"^=====> \S+ nprocs=\d+ config="),
}


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
    if not any(map(_SIGNATURES[family].match, _lines(text) + _lines(err_text))):
        return f"nothing in it that {family} prints ({_SIGNATURE_HELP[family]})"
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
        _DESCRIBE[family](reading, text, output)
    except ParseError as exc:  # a count past any machine in what describes the run
        reading.status, reading.parse_error = "parse-error", str(exc)
        reading.benchmark = reading.benchmark or family
        return reading
    if output is not None:
        fatal = next(b for b in registry.BENCHMARKS.values() if b.format == family).fatal(output)
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


_SIGNATURE_HELP = {
    "imb": "no IMB banner, '# Benchmarking' section or '#bytes #repetitions' header",
    "osu": "no '# OSU MPI ... Test' title",
    "cartex": "no 'running on N ranks' line nor a cartex failure message",
    "gasnet": "no '=====> <test> nprocs=N config=...' banner",
}


def _lines(text: str) -> List[str]:
    return [strip_launcher_prefix(line).strip() for line in text.splitlines()]


def _own_point(reading: Reading, why: str) -> None:
    reading.params["output"] = reading.name
    reading.notes.append(f"{why}: this file is a point of its own (parameter 'output')")


# IMB ------------------------------------------------------------------------------------------

_IMB_PROCESSES = re.compile(r"^# #processes = (?P<np>\d+)")
_IMB_WAITING = re.compile(r"^# \( (?P<n>\d+) additional process(?:es)? waiting in MPI_Barrier\)")
_IMB_SUITES = {"MPI-1": "imb-mpi1", "MPI-RMA": "imb-rma", "MPI-NBC": "imb-nbc",
               "IMB-P2P": "imb-p2p", "MT": "imb-mt"}
_IMB_FLAGS = {o.flag: name for name, o in IMB_OPTIONS.items() if o.kind == "value"}


def _describe_imb(reading: Reading, text: str, output: Optional[Output]) -> None:
    lines = _lines(text)
    printed = imb.banner(text)  # (version, suite)
    calling = _after(lines, "# Calling sequence was:")
    listed = _listed_benchmarks(lines)
    # What every IMB output can print is always a parameter: None where this one did not
    # (`compare --where executable=...` then leaves it out instead of keeping it).
    params = reading.params
    params.update(dict.fromkeys(("executable", "benchmarks", "imb_version", "ranks")))
    if calling:
        words = calling.split()
        params["executable"] = words[0]
        params.update(_imb_options(words[1:], reading.notes))
    if listed:
        params["benchmarks"] = " ".join(listed)
    elif output is not None:
        names = list(dict.fromkeys(r["benchmark"] for r in output.rows if r.get("benchmark")))
        if names:
            params["benchmarks"] = " ".join(names)
    if printed and printed[0]:
        params["imb_version"] = printed[0]
    elif printed:
        reading.notes.append("IMB banner without a version (imb_version null)")
    elif not any(n.startswith("no IMB banner") for n in reading.notes):
        reading.notes.append("no IMB banner: IMB version not printed (imb_version null)")
    ranks = _imb_job_size(lines)
    if ranks:
        params["ranks"] = reading.ranks = ranks
    else:
        reading.notes.append("no '#processes' line: the job's process count is not printed")
    driver = Path(params["executable"] or "").name
    if re.fullmatch(r"IMB-\w+", driver):
        reading.benchmark = driver.lower()
    elif printed and printed[1] in _IMB_SUITES:
        reading.benchmark = _IMB_SUITES[printed[1]]
    else:
        reading.benchmark = "imb"
        reading.notes.append("IMB driver not printed (no calling sequence, suite "
                             f"{printed[1] if printed else 'not printed'}): benchmark 'imb'")
    if not calling:
        _own_point(reading, "no calling sequence printed: its options are not known")


def _after(lines: List[str], marker: str) -> str:
    """The first non-empty '#' line after ``marker``, without the '#'."""
    for index, line in enumerate(lines):
        if line == marker:
            for following in lines[index + 1:]:
                content = following.lstrip("#").strip()
                if content:
                    return content
    return ""


def _listed_benchmarks(lines: List[str]) -> List[str]:
    """IMB's '# List of Benchmarks to run:' (the names as IMB spells them)."""
    try:
        start = lines.index("# List of Benchmarks to run:")
    except ValueError:
        return []
    names: List[str] = []
    for line in lines[start + 1:]:
        content = line.lstrip("#").strip()
        if not line or (line.startswith("#") and not content and not names):
            continue
        if not line.startswith("#") or not content or content.startswith("-") or " " in content:
            break
        names.append(content)
    return names


def _imb_options(words: List[str], notes: List[str]) -> Dict[str, Any]:
    """The calling sequence's options under their matrix names (benchmark names are read from
    IMB's own list); what commstack has no name for is kept as ``other_args``."""
    params: Dict[str, Any] = {}
    other: List[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in _IMB_FLAGS and index + 1 < len(words):
            value = words[index + 1]
            # A number past a 64-bit counter stays the text it is (no machine took it).
            number = value.lstrip("-").isdigit() and len(value) <= 19
            params[_IMB_FLAGS[word]] = int(value) if number else value
            index += 2
            continue
        if word.startswith("-"):
            other.append(word)
            if index + 1 < len(words) and not words[index + 1].startswith("-") and (
                    not words[index + 1].isalpha()):
                other.append(words[index + 1])
                index += 1
        index += 1
    if other:
        params["other_args"] = " ".join(other)
        notes.append(f"calling sequence options without a commstack name: {' '.join(other)}")
    return params


def _imb_job_size(lines: List[str]) -> Optional[int]:
    """The largest '#processes = N' plus the processes IMB says wait in MPI_Barrier meanwhile."""
    best = None
    for index, line in enumerate(lines):
        match = _IMB_PROCESSES.match(line)
        if not match:
            continue
        size = bounds.integer(match["np"], "#processes", index + 1, bounds.MAX_RANKS)
        waiting = next((m for m in map(_IMB_WAITING.match, lines[index + 1:index + 3]) if m), None)
        size += bounds.integer(waiting["n"], "processes waiting", index + 1,
                               bounds.MAX_RANKS) if waiting else 0
        best = max(best or 0, size)
    return best


# OSU, cartex, GASNet-EX ------------------------------------------------------------------------

_CARTEX_RANKS = re.compile(r"^running on (?P<ranks>\d+) ranks?$")
_GASNET_BANNER = re.compile(r"^=====> (?P<program>\S+) nprocs=(?P<nprocs>\d+) "
                            r"config=\S*?CONDUIT=(?P<conduit>[A-Z0-9]+)?")


def _describe_osu(reading: Reading, text: str, output: Optional[Output]) -> None:
    reading.benchmark = "osu"
    if output is not None:
        name, version = output.meta.get("benchmark"), output.meta.get("version")
    else:
        name, version = osu.title(text) or (None, None)
    reading.params.update(osu_test=name or None, osu_version=version or None)
    _own_point(reading, "OMB prints neither its process count nor its options")


def _describe_cartex(reading: Reading, text: str, output: Optional[Output]) -> None:
    reading.benchmark = "cartex"
    runtime = None
    if output is not None and output.rows:
        runtime, reading.ranks = output.rows[0]["runtime"], output.rows[0]["ranks"]
    else:
        match = next((m for m in map(_CARTEX_RANKS.match, _lines(text)) if m), None)
        reading.ranks = (bounds.integer(match["ranks"], "ranks", None, bounds.MAX_RANKS)
                         if match else None)
    reading.params.update(runtime=runtime, ranks=reading.ranks)
    _own_point(reading, "cartex prints none of its options (domain, halo, fields, grid)")


def _describe_gasnet(reading: Reading, text: str, output: Optional[Output]) -> None:
    banner = next((m for m in map(_GASNET_BANNER.match, _lines(text)) if m), None)
    program = banner["program"] if banner else None
    reading.benchmark = f"gasnet-{program}" if program else "gasnet"
    reading.ranks = (bounds.integer(banner["nprocs"], "nprocs", None, bounds.MAX_RANKS)
                     if banner else None)
    conduit = banner["conduit"].lower() if banner and banner["conduit"] else None
    reading.params.update(program=program, ranks=reading.ranks, conduit=conduit)
    _own_point(reading, "the test's arguments (iterations, sizes) are not printed as given")


_DESCRIBE = {"imb": _describe_imb, "osu": _describe_osu, "cartex": _describe_cartex,
             "gasnet": _describe_gasnet}


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
    if family not in FAMILIES:
        raise CampaignError(f"--benchmark {family!r}: expected one of {', '.join(FAMILIES)}")
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
