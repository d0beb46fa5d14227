"""OSU Micro-Benchmarks (OMB): the ``osu`` benchmark (any MPI test: ``osu_latency``, ``osu_bw``,
``osu_allreduce``, ...), its options, figures of merit and the parser of its stdout (format of
OMB 7.x, c/util/osu_util_mpi.c).

Rank 0 prints a title, a column header and one row per message size::

    # OSU MPI Latency Test v7.3                  <- title: test name and OMB version
    # Size          Latency (us)                 <- column header (columns >= 2 spaces apart)
    # Datatype: MPI_CHAR.
    1                       0.43
    ...

Collectives print a blank line first and ``# Size  Avg Latency(us)``; with ``-f`` also
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
header without rows, a usage text (rejected option) or empty stdout raise :class:`ParseError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from commstack.benchmarks.base import Benchmark, Option, Output, ParseError, capped
from commstack.benchmarks.imb import MBYTES_PER_S, T_AVG_US, T_OVRL_US, T_PURE_US, T_US
from commstack.benchmarks.text import INTEL_MPI_STARTUP, column_keys, strip_launcher_prefix

_TITLE = re.compile(r"^# OSU MPI(?P<accel>-\S+)? (?P<name>.+?)(?: Test)?(?: v(?P<version>\S+))?$")
_HEADER_START = ("# Size", "# Avg Latency(us)", "# Overall(us)")
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
    "P95 Tail Lat(us)": "t_p95_us",
    "P99 Tail Lat(us)": "t_p99_us",
}
_INT_KEYS = {"bytes", "repetitions"}
_DATATYPE = re.compile(r"^# Datatype: (?P<name>\S+?)\.?$")
# UCX log lines ("[1795329961.243038] [vm:950  :0]  ucp_context.c:1849 UCX  INFO ..."), as in imb
_UCX_LINE = re.compile(r"^\[\d+\.\d+\]\s+\[[^\]]*\]")
_UCX_PROBLEM = re.compile(r"\bUCX\s+(?:WARN|ERROR|FATAL)\b")
_PAIRS = re.compile(r"^# \[ pairs: (?P<pairs>\d+) \] \[ window size: (?P<window>\d+) \]")
_USAGE = re.compile(r"^Usage: (?P<program>osu_\S+) \[options\]")
# Launcher messages on stdout after which the table is not a complete measurement.
_ABORTS = ("BAD TERMINATION", "YOUR APPLICATION TERMINATED", "MPI_ABORT was invoked")


@dataclass
class _Run:
    """What the parser has read so far of one OMB run."""

    benchmark: str  # test name from the title, e.g. "Latency", "Allreduce Latency"
    version: str  # OMB version from the title ("" if the title has none)
    columns: List[str] = field(default_factory=list)  # row keys, in header order
    datatypes: List[str] = field(default_factory=list)  # from "# Datatype: MPI_CHAR."
    rows: List[dict] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    pairs: Optional[int] = None  # osu_mbw_mr: communicating pairs
    window_size: Optional[int] = None  # osu_mbw_mr: messages per window


def _columns(header: str, number: int, notes: List[str]) -> List[str]:
    labels = [label.strip() for label in re.split(r"\s{2,}", header.lstrip("#").strip())]
    return column_keys(labels, _COLUMNS, number, notes)


def _value(key: str, token: str, number: int) -> object:
    try:
        return int(token) if key in _INT_KEYS else float(token)
    except ValueError:
        raise ParseError(f"{key}: {token!r} is not a number (row cut off?)", number) from None


def parse_osu(text: str) -> Output:
    """Parse the stdout of one OMB run; raise :class:`ParseError` when it is not a complete
    table (see the module docstring). ``rows``: one per message size; ``meta``: ``benchmark``
    (the test name), ``version``, ``columns`` (row keys in header order), ``datatypes``, and
    ``pairs``/``window_size`` (osu_mbw_mr, else None)."""
    if not text.strip():
        raise ParseError("empty output: OMB printed nothing (wrong process count, e.g. "
                         "osu_latency on 3 ranks, says so on stderr)")
    lines = [strip_launcher_prefix(line) for line in text.splitlines()]
    out: Optional[_Run] = None
    header_line = 0
    ucx_lines = 0
    for number, line in enumerate(lines, 1):
        for abort in _ABORTS:
            if abort in line:
                raise ParseError(f"launcher reports an abnormal end: {line.strip(' =')!r}", number)
        usage = _USAGE.match(line)
        if usage:
            raise ParseError(f"{usage['program']} printed its usage text: an option was rejected "
                             "(its stderr names it)", number)
        if _UCX_LINE.match(line):
            if out is not None and _UCX_PROBLEM.search(line):
                out.notes.append(_UCX_LINE.sub("", line).strip())
            ucx_lines += 1
            continue
        if not line.strip() or INTEL_MPI_STARTUP.match(line):
            continue  # I_MPI_DEBUG>0: Intel MPI's start-up lines and pin table come first
        title = _TITLE.match(line)
        if title:
            if out is None:
                out = _Run(benchmark=title["name"], version=title["version"] or "")
            elif title["name"] != out.benchmark:
                raise ParseError(f"second title {line!r} in the output of {out.benchmark!r}",
                                 number)
            continue  # osu_mbw_mr prints its title twice
        if out is None:
            if line.startswith("#"):
                continue
            raise ParseError(f"no '# OSU MPI ... Test' title before {line.strip()!r}: not the "
                             "output of an OSU benchmark", number)
        if line.startswith(_HEADER_START):
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
            out.pairs, out.window_size = int(pairs["pairs"]), int(pairs["window"])
            continue
        if line.startswith("#"):
            continue
        if not out.columns:
            raise ParseError(f"{out.benchmark}: row {line.strip()!r} before the column header",
                             number)
        out.rows.append(_row(line, number, out))
    if out is None:
        raise ParseError("no '# OSU MPI ... Test' title: not the output of an OSU benchmark")
    if not out.columns:
        raise ParseError(f"{out.benchmark}: no column header ('# Size ...'): output cut off")
    if not out.rows:
        raise ParseError(f"{out.benchmark}: column header but no rows (output cut off, or no "
                         "message size in the -m range, e.g. -m 8:2)", header_line)
    _check_sizes(out)
    if ucx_lines:
        out.notes.append(f"ignored {ucx_lines} UCX log lines")
    return Output(out.rows, out.notes, meta={
        "benchmark": out.benchmark, "version": out.version, "columns": out.columns,
        "datatypes": out.datatypes, "pairs": out.pairs, "window_size": out.window_size})


def _row(line: str, number: int, out: _Run) -> dict:
    tokens = line.split()
    if len(tokens) != len(out.columns):
        raise ParseError(f"{out.benchmark}: row has {len(tokens)} values, the header has "
                         f"{len(out.columns)} columns: {line.strip()!r} (output cut off?)", number)
    row: dict = {"suite": "osu", "benchmark": out.benchmark}
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
    "message_size": Option("-m", help="[MIN:]MAX message sizes in bytes, e.g. '1:65536'"),
    "iterations": Option("-i", help="timed iterations per size"),
    "warmup": Option("-x", help="untimed warm-up iterations per size"),
    "full": Option("-f", "flag", "collectives: also min/max latency and iterations"),
    "window_size": Option("-W", help="osu_bw/osu_bibw/osu_mbw_mr: messages per window"),
    "num_pairs": Option("-p", help="osu_mbw_mr: communicating pairs"),
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


BENCHMARKS = [
    Benchmark("osu", "osu_latency", FORMAT, parse_osu, OPTIONS, figures=FIGURES, row_keys=ROW_KEYS,
              scale_down=scale_down),
]
