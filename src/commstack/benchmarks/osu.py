"""OSU Micro-Benchmarks (OMB): the ``osu`` benchmark (any MPI test: ``osu_latency``, ``osu_bw``,
``osu_allreduce``, ...), its options, figures of merit and the parser of its stdout (format of
OMB 7.x, c/util/osu_util_mpi.c).

Rank 0 prints a title, a column header and one row per message size::

    # OSU MPI Latency Test v7.3                  <- title: test name and OMB version
    # Size          Latency (us)                 <- column header (columns >= 2 spaces apart)
    # Datatype: MPI_CHAR.
    1                       0.43
    ...

``osu_barrier`` prints ``# Avg Latency(us)`` and one number (no size column), ``osu_ibarrier``
``Overall(us)  Compute(us) ...`` (OMB 5.x: without the ``#``) and one row: one row, ``bytes``
null. Collectives print a blank line first and ``# Size  Avg Latency(us)``; with ``-f`` also
``Min Latency(us)``, ``Max Latency(us)`` and ``Iterations``. ``osu_mbw_mr`` prints its title
twice, a ``# [ pairs: 1 ] [ window size: 64 ]`` line and ``MB/s  Messages/s``.

Row keys follow the IMB parser where they mean the same, so that aggregation and reports pick
them up: ``t_us`` for point-to-point latency (half a round trip, like IMB PingPong's ``t[usec]``),
``t_avg_us``/``t_min_us``/``t_max_us`` for a collective's latency averaged/min/max over ranks,
``mbytes_per_s`` (OMB's MB/s are 10^6 B/s, as IMB's), ``msg_per_s``, ``repetitions`` (``-f``'s
Iterations). ``benchmark`` is the test name from the title without "OSU MPI" and "Test", e.g.
``Latency``, ``Allreduce Latency``, ``Multiple Bandwidth / Message Rate``.

OMB prints no end-of-run line: output cut between two rows (a killed run) reads like a run with
a smaller ``-m``; the sweep tells those apart by the exit status. Output cut inside a row, a
header without rows, a usage text (rejected option), a crash or abort message (signal, MPI
error handler, launcher) or empty stdout raise :class:`ParseError`.

Outputs as people paste them (OMB 5.x to 7.x, tests/fixtures/osu/external/) also carry lines
that are not OMB's: job and launcher chatter before the title, Open MPI ``--tag-output`` tags
(even in the middle of a line), indentation from the document, libfabric/UCX/Open MPI log lines
and comments such as "..... never progresses" between or after the rows. Those are skipped and
counted in a note (the CLI prints notes as warnings); a line that starts with a number is a row
and must fit the header. A title without a version gets a note; OMB prints no process count,
and none is made up. ``-c`` prints a ``Validation`` column (Pass/Fail): a Fail is a note that
makes the run a failure (``fatal_notes``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from commstack import bounds
from commstack.benchmarks.base import Benchmark, Option, Output, ParseError, at_most, capped
from commstack.benchmarks.facts import Collectives, RawOutputs, RawRun
from commstack.benchmarks.imb import MBYTES_PER_S, T_AVG_US, T_OVRL_US, T_PURE_US, T_US
from commstack.benchmarks.text import INTEL_MPI_STARTUP, column_keys, strip_launcher_prefix

_TITLE = re.compile(r"^# OSU MPI(?P<accel>-\S+)? (?P<name>.+?)(?: Test)?(?: v(?P<version>\S+))?$")
# One-sided tests name their call first: "# OSU MPI_Put Bandwidth Test v5.3", with -d cuda
# "# OSU MPI_Put-CUDA Bandwidth Test v7.3"; the call stays in the name ("MPI_Put Bandwidth").
_ONE_SIDED_TITLE = re.compile(r"^# OSU (?P<call>MPI_\w+)(?P<accel>-\S+)? (?P<name>.+?)(?: Test)?"
                              r"(?: v(?P<version>\S+))?$")
_HEADER_START = ("# Size", "# Avg Latency(us)", "# Overall(us)")
# osu_ibarrier of OMB 5.x prints its column header without the "#".
_BARE_HEADER = "Overall(us)"
# Column label as printed -> row key (one key per label; unknown labels get a snake_case key).
_COLUMNS: Dict[str, str] = {
    "Size": "bytes",
    "Latency (us)": "t_us",
    "Avg Latency(us)": "t_avg_us",
    "Min Latency(us)": "t_min_us",
    "Max Latency(us)": "t_max_us",
    "Iterations": "repetitions",
    "Bandwidth (MB/s)": "mbytes_per_s",
    "MB/s": "mbytes_per_s",
    "Messages/s": "msg_per_s",
    "Overall(us)": "t_ovrl_us",
    "Compute(us)": "t_cpu_us",
    "Pure Comm.(us)": "t_pure_us",
    "Overlap(%)": "overlap_pct",
    "P50 Tail Lat(us)": "t_p50_us",
    "P90 Tail Lat(us)": "t_p90_us",  # -z in OMB 7.5 (mpich issue 7601); 7.3 prints P95
    "P95 Tail Lat(us)": "t_p95_us",
    "P99 Tail Lat(us)": "t_p99_us",
    "P50 Tail BW(MB/s)": "mbytes_per_s_p50",
    "P90 Tail BW(MB/s)": "mbytes_per_s_p90",
    "P95 Tail BW(MB/s)": "mbytes_per_s_p95",
    "P99 Tail BW(MB/s)": "mbytes_per_s_p99",
    "Validation": "validation",  # -c: "Pass" or "Fail"
    "Transmit Size": "transmit_bytes",  # derived datatypes
}
_INT_KEYS = {"bytes", "repetitions", "transmit_bytes"}
_TEXT_KEYS = {"validation"}
VALIDATION_FAILED = "validation failed"
_DATATYPE = re.compile(r"^# Datatype: (?P<name>\S+?)\.?$")
# UCX log lines ("[1795329961.243038] [vm:950  :0]  ucp_context.c:1849 UCX  INFO ..."), as in imb
_UCX_LINE = re.compile(r"^\[\d+\.\d+\]\s+\[[^\]]*\]")
_UCX_PROBLEM = re.compile(r"\bUCX\s+(?:WARN|ERROR|FATAL)\b")
_PAIRS = re.compile(r"^# \[ pairs: (?P<pairs>\d+) \] \[ window size: (?P<window>\d+) \]")
_USAGE = re.compile(r"^Usage: (?P<program>osu_\S+) \[options\]")
# Launcher, MPI library and Slurm messages after which the table is not a complete measurement.
_ABORTS = ("BAD TERMINATION", "YOUR APPLICATION TERMINATED", "MPI_ABORT was invoked",
           "*** Process received signal ***", "*** An error occurred in", "Fatal error in ",
           "srun: error:", "exited with non-zero status", "mpirun noticed that process",
           "] Caught signal ")  # UCX's error handler: "[host:pid:0:tid] Caught signal 11 (...)"
# Buffer placement of -d cuda/rocm runs: OMB 5.x-7.2 "# Send Buffer on DEVICE (D) and Receive
# Buffer on HOST (H)", 7.3+ "# Rank 0 Memory on DEVICE (D) and Rank 1 Memory on DEVICE (D)".
_BUFFERS = re.compile(r"^# (?:Send Buffer|Rank 0 Memory) on [^(]*\((?P<src>\w)\) and "
                      r"(?:Receive Buffer|Rank 1 Memory) on [^(]*\((?P<dst>\w)\)")
# Open MPI --tag-output tag, with --timestamp-output's date, where a line has run into the next.
_OMPI_TAG = re.compile(r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
                       r"\[\d+,\d+\]<std(?:out|err)>:")
_LIBFABRIC_LINE = re.compile(r"^libfabric:\d+:\d+:")
_FIRST_INT = re.compile(r"^\d+(?:\s|$)")
# A row of a table without a size column (osu_barrier, osu_ibarrier): its first value is a time.
_FIRST_NUMBER = re.compile(r"^\d+(?:\.\d*)?(?:\s|$)")


@dataclass
class _Run:
    """What the parser has read so far of one OMB run."""

    benchmark: Optional[str]  # test name from the title, e.g. "Latency"; None: no title printed
    version: str  # OMB version from the title ("" if the title has none)
    columns: List[str] = field(default_factory=list)  # row keys, in header order
    datatypes: List[str] = field(default_factory=list)  # from "# Datatype: MPI_CHAR."
    rows: List[dict] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    pairs: Optional[int] = None  # osu_mbw_mr: communicating pairs
    window_size: Optional[int] = None  # osu_mbw_mr: messages per window
    accelerator: Optional[str] = None  # from "# OSU MPI-CUDA ...": CUDA, ROCM, ...
    buffers: Optional[str] = None  # -d: "D D", "H D", ... (sender's, receiver's)
    skipped: List[Tuple[int, str]] = field(default_factory=list)  # (line number, text): not OMB's


def _title(line: str) -> Optional[Tuple[str, str, Optional[str]]]:
    """(test name, OMB version or "", accelerator or None) of an OMB title line, else None."""
    title = _TITLE.match(line)
    one_sided = None if title else _ONE_SIDED_TITLE.match(line)
    if one_sided:
        name = f"{one_sided['call']} {one_sided['name']}"
        title = one_sided
    elif title:
        name = title["name"]
    else:
        return None
    return name, title["version"] or "", (title["accel"] or "").lstrip("-") or None


def title(text: str) -> Optional[Tuple[str, Optional[str]]]:
    """(test name, OMB version or None) of the first OMB title in ``text`` (one-sided titles
    too), or None: what an output says it is, also where its table cannot be read."""
    found = next((t for t in (_title(line) for _, line in _lines(text)) if t), None)
    return (found[0], found[1] or None) if found else None


def _columns(header: str, number: int, notes: List[str]) -> List[str]:
    labels = [label.strip() for label in re.split(r"\s{2,}", header.lstrip("#").strip())]
    return column_keys(labels, _COLUMNS, number, notes)


def _value(key: str, token: str, number: int) -> object:
    """A row value: text, a count within 0..2^63-1 or a finite float (else a ParseError)."""
    if key in _TEXT_KEYS:
        return token
    if key in _INT_KEYS:
        return bounds.integer(token, key, number, bounds.MAX_BYTES)
    return bounds.finite(token, key, number)


def _lines(text: str) -> List[Tuple[int, str]]:
    """(line number, text) without launcher prefixes and indentation; a line into which Open
    MPI's --tag-output wrote the next tag (OMB's header printed without its newline) is split
    there, both parts keeping the line's number."""
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        starts = [m.start() for m in _OMPI_TAG.finditer(raw) if m.start() > 0]
        bounds = [0, *starts, len(raw)]
        for begin, stop in zip(bounds, bounds[1:]):
            lines.append((number, strip_launcher_prefix(raw[begin:stop]).strip()))
    return lines


def parse_osu(text: str) -> Output:
    """Parse the stdout of one OMB run; raise :class:`ParseError` when it is not a complete
    table (see the module docstring). ``rows``: one per message size; ``meta``: ``benchmark``
    (the test name), ``version``, ``columns`` (row keys in header order), ``datatypes``,
    ``pairs``/``window_size`` (osu_mbw_mr, else None), ``accelerator`` and ``buffers`` (-d runs,
    else None)."""
    if not text.strip():
        raise ParseError("empty output: OMB printed nothing (wrong process count, e.g. "
                         "osu_latency on 3 ranks, says so on stderr)")
    out: Optional[_Run] = None
    header_line = 0
    ucx_lines = libfabric_lines = 0
    before_title: List[Tuple[int, str]] = []
    for number, line in _lines(text):
        for abort in _ABORTS:
            if abort in line:
                raise ParseError(f"the run ended abnormally: {line.strip(' =')!r}", number)
        usage = _USAGE.match(line)
        if usage:
            raise ParseError(f"{usage['program']} printed its usage text: an option was rejected "
                             "(its stderr names it)", number)
        if _UCX_LINE.match(line):
            if out is not None and _UCX_PROBLEM.search(line):
                out.notes.append(_UCX_LINE.sub("", line).strip())
            ucx_lines += 1
            continue
        if _LIBFABRIC_LINE.match(line):
            libfabric_lines += 1
            continue
        if not line or INTEL_MPI_STARTUP.match(line):
            continue  # I_MPI_DEBUG>0: Intel MPI's start-up lines and pin table come first
        title = _title(line)
        if title:
            name, version, accelerator = title
            if out is None:
                out = _Run(benchmark=name, version=version, accelerator=accelerator)
            elif name != out.benchmark:
                raise ParseError(f"second title {line!r} in the output of {out.benchmark!r}",
                                 number)
            continue  # osu_mbw_mr prints its title twice
        if out is None and line.startswith(_HEADER_START[0]):
            # A table pasted without its title: read it, the test and version unknown.
            out = _Run(benchmark=None, version="")
            out.notes.append("no '# OSU MPI ... Test' title: the test name and OMB version are "
                             "not printed (the table is read as it stands)")
        if out is None:
            if not line.startswith("#"):
                before_title.append((number, line))
            continue
        if line.startswith(_HEADER_START) or (not out.columns and line.startswith(_BARE_HEADER)):
            if out.columns:
                # -T all prints one table per datatype (OMB 7.3's point-to-point tests even
                # label the later ones "Avg Latency(us)"); rows are aggregated by size only.
                raise ParseError(f"{out.benchmark}: a second table ({', '.join(out.datatypes)}):"
                                 " one datatype per run please (-T all is not supported)",
                                 number)
            out.columns = _columns(line, number, out.notes)
            header_line = number
            continue
        datatype = _DATATYPE.match(line)
        if datatype:
            out.datatypes.append(datatype["name"])
            continue
        pairs = _PAIRS.match(line)
        if pairs:
            out.pairs = bounds.integer(pairs["pairs"], "pairs", number, bounds.MAX_RANKS)
            out.window_size = bounds.integer(pairs["window"], "window size", number,
                                             bounds.MAX_COUNT)
            continue
        buffers = _BUFFERS.match(line)
        if buffers:
            out.buffers = f"{buffers['src']} {buffers['dst']}"
            continue
        if line.startswith("#"):
            continue
        sizeless = bool(out.columns) and "bytes" not in out.columns
        if not (_FIRST_NUMBER if sizeless else _FIRST_INT).match(line):
            out.skipped.append((number, line))  # launcher or MPI message, a comment
            continue
        if sizeless and out.rows:
            raise ParseError(f"{out.benchmark}: a second row {line.strip()!r} in a table without "
                             "message sizes (OMB prints one): lines are mixed", number)
        if not out.columns:
            raise ParseError(f"{out.benchmark}: row {line.strip()!r} before the column header",
                             number)
        out.rows.append(_row(line, number, out))
    if out is None:
        raise ParseError("no '# OSU MPI ... Test' title: not the output of an OSU benchmark"
                         + (f" (first line: {before_title[0][1][:80]!r})" if before_title else ""))
    if not out.columns:
        raise ParseError(f"{out.benchmark}: no column header ('# Size ...'): output cut off")
    if not out.rows:
        raise ParseError(f"{out.benchmark}: column header but no rows (output cut off, or no "
                         "message size in the -m range, e.g. -m 8:2)", header_line)
    _check_sizes(out)
    _note_what_was_read_past(out, before_title, ucx_lines, libfabric_lines)
    return Output(out.rows, out.notes, meta={
        "benchmark": out.benchmark, "version": out.version, "columns": out.columns,
        "datatypes": out.datatypes, "pairs": out.pairs, "window_size": out.window_size,
        "accelerator": out.accelerator, "buffers": out.buffers})


def _note_what_was_read_past(out: _Run, before_title: List[Tuple[int, str]], ucx_lines: int,
                             libfabric_lines: int) -> None:
    if not out.version and out.benchmark is not None:
        out.notes.append(f"{out.benchmark}: the title prints no OMB version")
    failed = [str(row["bytes"]) for row in out.rows if row.get("validation") == "Fail"]
    if failed:
        out.notes.append(f"{VALIDATION_FAILED} at message sizes {', '.join(failed)} (OMB -c)")
    if before_title:
        number, line = before_title[0]
        out.notes.append(f"ignored {len(before_title)} line(s) before the OSU title, the first "
                         f"line {number}: {line[:80]!r}")
    if out.skipped:
        number, line = out.skipped[0]
        out.notes.append(f"ignored {len(out.skipped)} line(s) in the table that are not OSU rows"
                         f" (output interleaved, cut off or hung?), the first line {number}: "
                         f"{line[:80]!r}")
    if libfabric_lines:
        out.notes.append(f"ignored {libfabric_lines} libfabric log lines")
    if ucx_lines:
        out.notes.append(f"ignored {ucx_lines} UCX log lines")


def _row(line: str, number: int, out: _Run) -> dict:
    tokens = line.split()
    if len(tokens) > len(out.columns):
        # Seen with OMB 7.3's osu_reduce -d cuda -f: "# Size  Avg Latency(us)" over rows of four
        # values. Which value is which is not printed, so none is taken.
        raise ParseError(f"{out.benchmark}: row has {len(tokens)} values, the header names "
                         f"{len(out.columns)} columns ({', '.join(out.columns)}): "
                         f"{line.strip()!r} (the unnamed values are not guessed)", number)
    if len(tokens) != len(out.columns):
        raise ParseError(f"{out.benchmark}: row has {len(tokens)} values, the header has "
                         f"{len(out.columns)} columns: {line.strip()!r} (output cut off?)", number)
    row: dict = {"suite": "osu", "benchmark": out.benchmark}
    if "bytes" not in out.columns:
        row["bytes"] = None  # osu_barrier, osu_ibarrier: no message size
    for key, token in zip(out.columns, tokens):
        row[key] = _value(key, token, number)
    if out.datatypes:
        row["datatype"] = out.datatypes[-1]
    if out.pairs is not None:
        row["pairs"], row["window_size"] = out.pairs, out.window_size
    row["status"] = "ok"
    return row


def _check_sizes(out: _Run) -> None:
    """OMB doubles the message size from row to row: a gap or repeat means lost lines."""
    if "bytes" not in out.columns:
        return
    sizes = [row["bytes"] for row in out.rows]
    for before, after in zip(sizes, sizes[1:]):
        if after != 2 * max(before, 1) and not (before == 0 and after == 1):
            raise ParseError(f"{out.benchmark}: message size {after} follows {before} "
                             "(OMB doubles it each row): lines are missing or mixed")


FORMAT = "osu"
FIGURES = (T_AVG_US, T_US, T_OVRL_US, T_PURE_US, MBYTES_PER_S)
ROW_KEYS = ("benchmark", "bytes")

# OSU Micro-Benchmarks 7.x (osu_latency, osu_bw, osu_allreduce, ...): one program per test, picked
# with the `executable` parameter. -f exists for the collectives only (osu_latency rejects it).
OPTIONS: Dict[str, Option] = {
    "message_size": Option("-m", help="[MIN:]MAX message sizes in bytes, e.g. '1:65536'",
                           most=bounds.MAX_BYTES),
    "iterations": Option("-i", help="timed iterations per size", most=bounds.MAX_COUNT),
    "warmup": Option("-x", help="untimed warm-up iterations per size", most=bounds.MAX_COUNT),
    "full": Option("-f", "flag", "collectives: also min/max latency and iterations"),
    "window_size": Option("-W", help="osu_bw/osu_bibw/osu_mbw_mr: messages per window"),
    "num_pairs": Option("-p", help="osu_mbw_mr: communicating pairs", most=bounds.MAX_RANKS),
    "mem_limit": Option("-M", help="collectives: per-process memory limit in bytes"),
    "datatype": Option("-T", help="mpi_char|mpi_int|mpi_float (one per run; not 'all')"),
}



def scale_down(params: Dict[str, Any], ranks: int) -> Dict[str, Any]:
    """A rehearsal's test: messages up to 64 KiB, 100 timed and 10 warm-up iterations."""
    out = dict(params)
    if "message_size" in out:
        bounds = [min(int(x), 65536) for x in str(out["message_size"]).split(":")]
        out["message_size"] = ":".join(map(str, bounds))
    capped(out, "iterations", 100)
    capped(out, "warmup", 10)
    capped(out, "num_pairs", max(1, ranks // 2))
    return out


def simulate_down(params: Dict[str, Any]) -> Dict[str, Any]:
    """A simulated test: every size, 10 timed and 2 warm-up iterations (deterministic)."""
    out = dict(params)
    at_most(out, "iterations", 10)
    at_most(out, "warmup", 2)
    return out


# --- the guidelines' collectives and raw outputs (report/guidelines, importers/raw) -------------


def _collective(benchmark: str) -> Optional[str]:
    """"Broadcast Latency" -> Bcast; None for point-to-point, non-blocking or one-sided tests."""
    if not benchmark.endswith(" Latency") or " " in benchmark[: -len(" Latency")]:
        return None
    name = benchmark[: -len(" Latency")]
    return {"Broadcast": "Bcast"}.get(name, name)


def _asked(params: Mapping[str, Any]) -> Set[str]:
    exe = str(params.get("executable", ""))
    name = exe[len("osu_"):] if exe.startswith("osu_") else ""
    return {name.capitalize()} if name else set()  # osu_allreduce: Allreduce


COLLECTIVES = Collectives("OSU", frozenset({"executable", "message_size", "iterations", "warmup",
                                            "full"}), name_of=_collective, asked=_asked)


def describe_raw(text: str, output: Optional[Output], notes: List[str]) -> RawRun:
    """An OMB output names its test and version, neither its process count nor its options."""
    if output is not None:
        name, version = output.meta.get("benchmark"), output.meta.get("version")
    else:
        name, version = title(text) or (None, None)
    return RawRun("osu", {"osu_test": name or None, "osu_version": version or None},
                  own_point="OMB prints neither its process count nor its options")


RAW_OUTPUTS = RawOutputs(re.compile(r"^(?:# OSU MPI|Usage: osu_\S+ \[options\])"),
                         "no '# OSU MPI ... Test' title", describe_raw)

BENCHMARKS = [
    Benchmark("osu", "osu_latency", FORMAT, parse_osu, OPTIONS, fatal_notes=(VALIDATION_FAILED,),
              figures=FIGURES, row_keys=ROW_KEYS, scale_down=scale_down,
              simulate_down=simulate_down, collectives=COLLECTIVES, raw_outputs=RAW_OUTPUTS),
]
