"""Intel MPI Benchmarks (IMB): the imb-mpi1, imb-rma, imb-nbc and imb-p2p benchmarks, their
options, figures of merit and the parser of their stdout.

Covers the classic driver (IMB-MPI1, IMB-NBC, IMB-RMA, IMB-EXT, IMB-IO, IMB-MPI4) and the two
drivers with their own layout (IMB-P2P, IMB-MT). The format is described in
``research/imb.md``; in short, a run prints::

    #----------------------------------------------------------------
    #    Intel(R) MPI Benchmarks 2021.11, MPI-1 part          <- banner: version + suite
    ...
    # Calling sequence was:
    # IMB-MPI1 PingPong -msglog 0:10
    ...
    #---------------------------------------------------      <- one section per table
    # Benchmarking PingPong
    # #processes = 2
    #---------------------------------------------------
           #bytes #repetitions      t[usec]   Mbytes/sec      <- column header
                0         1000         0.19         0.00      <- rows
    ...
    # All processes entering MPI_Finalize                    <- completion (not in IMB-MT)

Launcher prefixes (``[0] ``, Open MPI ``--tag-output``), UCX log lines, Intel MPI
``MPI startup()`` lines, hydra ``[mpiexec@host]`` and ``process N binding:`` lines are removed
before parsing; a hydra ``BAD TERMINATION`` box means the job failed and raises
:class:`ParseError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from commstack import bounds
from commstack.benchmarks.base import (
    Benchmark,
    FigureOfMerit,
    Option,
    Output,
    ParseError,
    at_most,
    capped,
)
from commstack.benchmarks.facts import Collectives, RawOutputs, RawRun
from commstack.benchmarks.text import (
    INTEL_MPI_STARTUP,
    column_keys,
    printed_lines,
    strip_launcher_prefix,
)

# ----------------------------------------------------------------------------------------------
# Patterns
# ----------------------------------------------------------------------------------------------

# "[1795329961.243038] [vm:950  :0]  ucp_context.c:1849 UCX  INFO ..." and UCX_PROTO_INFO tables
_UCX_LINE = re.compile(r"^\[\d+\.\d+\]\s+\[[^\]]*\]")
_UCX_LEVEL = re.compile(r"\bUCX\s+(?P<level>[A-Z]+)\b")
_HYDRA_LINE = re.compile(r"^\[mpiexec@[^\]]*\]")
# hydra's binding report (HYDRA_TOPO_DEBUG=1, read by commstack.placement)
_HYDRA_BINDING = re.compile(r"^process \d+ binding: [01 ]+$")
_BAD_TERMINATION = re.compile(r"BAD TERMINATION|YOUR APPLICATION TERMINATED")

# "Intel(R) MPI Benchmarks 2021.11, MPI-1 part" (2019 on); "Intel (R) MPI Benchmarks 2018, MPI-1 part"
# (4.0 to 2018, also the IMB of Mellanox OFED / HPC-X); "Intel (R) MPI Benchmark Suite V3.2, MPI-1 part"
# (2.3 to 3.2); "PALLAS MPI Benchmark Suite V2.2, ..." (IMB's predecessor). IMB-IO 2021 prints "partn".
_BANNER = re.compile(r"^#\s+(?:Intel\s?\(R\)|PALLAS) MPI Benchmarks?(?: Suite)?(?: (?P<version>[^,]+?))?, "
                     r"(?P<suite>\S+) part")
# The same banner broken after the suite ("..., MPI-IO" / "partn#---"), as pasted into an issue.
_BANNER_HEAD = re.compile(r"^#\s+(?:Intel\s?\(R\)|PALLAS) MPI Benchmarks?(?: Suite)?(?: (?P<version>[^,]+?))?, "
                          r"(?P<suite>\S+)$")
_BANNER_TAIL = re.compile(r"^part(?:n|\b)")
_SUITE_VERSION = re.compile(r"^V(?=\d)")  # "V3.2" -> "3.2"
_SEPARATOR = re.compile(r"^#-+$")
# IMB-P2P prints the process grid of Stencil2D/3D: "# Benchmarking Stencil2D (2 x 2)"
_BENCHMARKING = re.compile(r"^# Benchmarking (?P<multi>Multi-)?(?P<name>\S+)(?: \((?P<grid>\d+(?: x \d+)+)\))?")
_PROCESSES = re.compile(r"^# #processes = (?P<np>\d+)(?: \(threads: (?P<threads>\d+)\))?")
_GROUPS = re.compile(r"^# \( (?P<groups>\d+) groups? of (?P<np>\d+) process")
_MODE = re.compile(r"^#\s+MODE: (?P<mode>[A-Z-]+)")
_FINALIZE = "# All processes entering MPI_Finalize"
_CALLING = "# Calling sequence was:"
_MULTI_OPTION = re.compile(r"(?:^|\s)-multi\s+(?P<value>\d+)")
_INVALID_FOR = re.compile(r"^# !! (?P<text>Benchmark .+?) !!")
_INVALID_NAME = re.compile(r"^Invalid benchmark name ")
_ERROR_LINE = re.compile(r"^ERROR: ")

# Column header token -> row key.
_COLUMNS: Dict[str, str] = {
    "Group": "group",
    "#bytes": "bytes",
    "#repetitions": "repetitions",
    "t[usec]": "t_us",
    "t_min[usec]": "t_min_us",
    "t_max[usec]": "t_max_us",
    "t_avg[usec]": "t_avg_us",
    "Mbytes/sec": "mbytes_per_s",
    "Msg/sec": "msg_per_s",
    "t_ovrl[usec]": "t_ovrl_us",
    "t_pure[usec]": "t_pure_us",
    "t_CPU[usec]": "t_cpu_us",
    "overlap[%]": "overlap_pct",
    "defects": "defects",
}
_INT_KEYS = {"group", "bytes", "repetitions"}

# Special rows: "[<group>] <bytes> out-of-mem.; needed X= ..." etc.; the message starts with the status.
_SPECIAL_STATUSES = ("out-of-mem", "time-out", "int-overflow")


@dataclass
class _Line:
    """One line of output after launcher prefixes were removed."""

    number: int  # 1-based line number in the original text
    text: str  # prefix removed, trailing blanks stripped


# ----------------------------------------------------------------------------------------------
# Step 1: clean lines (prefixes, launcher/library chatter)
# ----------------------------------------------------------------------------------------------



def _clean_lines(text: str, notes: List[str]) -> List[_Line]:
    """Return the IMB lines of ``text``; record chatter in ``notes``; raise on BAD TERMINATION."""
    lines: List[_Line] = []
    ignored = {"UCX log": 0, "Intel MPI startup": 0, "hydra binding report": 0}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = strip_launcher_prefix(raw)
        if _BAD_TERMINATION.search(line):
            raise ParseError(f"launcher reports an abnormal end: {line.strip(' =')!r}", number)
        if _UCX_LINE.match(line):
            level = _UCX_LEVEL.search(line)
            if level and level.group("level") in ("WARN", "ERROR", "FATAL"):
                notes.append(_UCX_LINE.sub("", line).strip())
            else:
                ignored["UCX log"] += 1
            continue
        if INTEL_MPI_STARTUP.match(line):
            ignored["Intel MPI startup"] += 1
            continue
        if _HYDRA_LINE.match(line):
            notes.append(line)
            continue
        if _HYDRA_BINDING.match(line):
            ignored["hydra binding report"] += 1
            continue
        lines.append(_Line(number, line))
    for kind, count in ignored.items():
        if count:
            notes.append(f"ignored {count} {kind} lines")
    return lines


# ----------------------------------------------------------------------------------------------
# Step 2: banner and header
# ----------------------------------------------------------------------------------------------


def _find_banner(lines: List[_Line], notes: List[str]) -> Optional[Tuple[int, int, Optional[str], str]]:
    """Return (index of the banner's first line, of its last line, version or None, suite), or None
    without a banner."""
    for index, line in enumerate(lines):
        match, last = _BANNER.match(line.text), index
        split = None if match else _BANNER_HEAD.match(line.text.rstrip())
        if split and index + 1 < len(lines) and _BANNER_TAIL.match(lines[index + 1].text):
            notes.append(f"line {line.number}: IMB banner broken over two lines")
            match, last = split, index + 1
        if match:
            if match.group("version") is None:
                notes.append(f"line {line.number}: IMB banner without a version: IMB version not printed")
                return index, last, None, match.group("suite")
            version = _SUITE_VERSION.sub("", match.group("version").strip())
            return index, last, version, match.group("suite")
    return None


def banner(text: str) -> Optional[Tuple[Optional[str], str]]:
    """(version or None, suite) of the IMB banner in ``text`` (one broken over two lines too),
    or None: what an output says it is, also where its tables cannot be read (a crashed run)."""
    lines = [_Line(number, strip_launcher_prefix(raw).rstrip())
             for number, raw in enumerate(text.splitlines(), start=1)]
    found = _find_banner(lines, [])
    return (found[2], found[3]) if found else None


def _no_banner_error(lines: List[_Line]) -> ParseError:
    """The error for output with neither a banner nor a table."""
    said = [line.text for line in lines if _ERROR_LINE.match(line.text)]
    hint = f" (program said: {said[0]!r})" if said else ""
    return ParseError(f"no IMB banner ('Intel(R) MPI Benchmarks ..., ... part') found{hint}")


def _dedent(text: str) -> str:
    """Remove the indentation common to every non-blank line (output pasted into documentation)."""
    lines = text.splitlines()
    indents = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] for line in lines) if cut else text


def _calling_sequence(lines: List[_Line]) -> str:
    """Return the command line printed after '# Calling sequence was:' ('' if absent, e.g. MT)."""
    for index, line in enumerate(lines):
        if line.text != _CALLING:
            continue
        for following in lines[index + 1:]:
            content = following.text.lstrip("#").strip()
            if content:
                return content
    return ""


# ----------------------------------------------------------------------------------------------
# Step 3: tables
# ----------------------------------------------------------------------------------------------


@dataclass
class _Table:
    """State of one '# Benchmarking ...' section while it is read."""

    start: int  # line number of the '# Benchmarking' line
    context: dict  # keys copied into every row: suite, benchmark, multi, np, mode, ...
    columns: List[str] = field(default_factory=list)
    rows: List[dict] = field(default_factory=list)
    closed: bool = False  # a blank line or a new section followed the rows

    def describe(self) -> str:
        """Short human-readable name for messages."""
        where = f"#processes={self.context.get('np')}"
        if self.context.get("mode"):
            where += f", mode={self.context['mode']}"
        return f"table {self.context['benchmark']} ({where}) starting at line {self.start}"


def _is_int(token: str) -> bool:
    return token.lstrip("-").isdigit()


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _columns_from_header(line: _Line, notes: List[str]) -> List[str]:
    """Map the column header tokens to row keys (unknown tokens get a snake_case key + note)."""
    return column_keys(line.text.split(), _COLUMNS, line.number, notes)


def _special_status(message: str) -> Optional[str]:
    """Status of a special row message ("out-of-mem.; needed ..."), or None if it is not one."""
    return next((status for status in _SPECIAL_STATUSES if message.startswith(status)), None)


def _parse_row(line: _Line, table: _Table) -> Optional[dict]:
    """Return a row dict for ``line``, or None if the line is not a row of ``table``."""
    tokens = line.text.split()
    if not tokens or not _is_int(tokens[0]):
        return None
    row = dict(table.context, bytes=None)
    numbers = next((i for i, token in enumerate(tokens) if not _is_number(token)), len(tokens))
    if numbers < len(tokens):
        # Special row: "<bytes> out-of-mem.; needed X= ..." / "time-out.; ..." / "int-overflow..."
        message = line.text.split(None, numbers)[numbers].strip()
        status = _special_status(message)
        if status is None:
            return None
        for key, token in zip(table.columns, tokens[:numbers]):
            row[key] = _number(key, token, line.number)
        row["status"] = status
        row["message"] = message
        return row
    if len(tokens) != len(table.columns):
        raise ParseError(
            f"row has {len(tokens)} values but the header of {table.describe()} has "
            f"{len(table.columns)} columns: {line.text.strip()!r}",
            line.number,
        )
    for key, token in zip(table.columns, tokens):
        row[key] = _number(key, token, line.number)
    row["status"] = "ok"
    return row


def _number(key: str, token: str, line: int) -> "int | float":
    """A row value: a count within 0..2^63-1 or a finite float (``nan`` where a count stands,
    a message size past 2^63 or an ``inf`` time is a ParseError naming the line)."""
    if key in _INT_KEYS:
        return bounds.integer(token, key, line, bounds.MAX_BYTES)
    return bounds.finite(token, key, line)


def _read_section_header(lines: List[_Line], index: int, table: _Table, multi: Optional[int]) -> int:
    """Read from the '# Benchmarking' line (at ``index``) to the column header; return its index.

    ``multi`` is the -multi option of the run (None without it).
    """
    context = table.context
    index += 1
    while index < len(lines):
        text = lines[index].text
        processes = _PROCESSES.match(text)
        groups = _GROUPS.match(text)
        mode = _MODE.match(text)
        if processes:
            number = lines[index].number
            context["np"] = bounds.integer(processes.group("np"), "#processes", number,
                                           bounds.MAX_RANKS)
            if processes.group("threads"):
                context["threads"] = bounds.integer(processes.group("threads"), "threads", number,
                                                    bounds.MAX_RANKS)
            if multi is not None:
                context["groups"] = 1  # -multi run, section using all ranks as one group
        elif groups:
            number = lines[index].number
            context["np"] = bounds.integer(groups.group("np"), "#processes", number,
                                           bounds.MAX_RANKS)
            context["groups"] = bounds.integer(groups.group("groups"), "groups", number,
                                               bounds.MAX_RANKS)
        elif mode:
            context["mode"] = mode.group("mode").lower()
        elif text and not text.startswith("#"):
            tokens = text.split()
            if tokens[0] in ("Group", "#bytes", "#repetitions"):
                return index
            raise ParseError(f"unexpected line in the header of {table.describe()}: {text!r}", lines[index].number)
        elif text.startswith("#") and _BENCHMARKING.match(text):
            break  # a new section began before this one had a column header
        index += 1
    raise ParseError(f"{table.describe()} is cut off before its column header", table.start)


def _read_rows(lines: List[_Line], index: int, table: _Table) -> int:
    """Read rows until a line that is neither a row nor blank; return the index of that line."""
    while index < len(lines):
        line = lines[index]
        if not line.text:
            if table.rows:
                table.closed = True
            index += 1
            continue
        if table.closed and table.context.get("multi") != 1:
            return index  # a blank line ends a table except in -multi 1 mode
        row = _parse_row(line, table)
        if row is None:
            return index
        table.rows.append(row)
        index += 1
    return index


_HEADER_FIRST = ("#bytes", "#repetitions")


def _start_bare_table(lines: List[_Line], index: int, suite: Optional[str], multi: Optional[int],
                      notes: List[str]) -> Optional[_Table]:
    """If lines[index] is a column header outside any section (a table pasted without its
    '# Benchmarking' lines), return a table whose benchmark and process count are unknown."""
    tokens = lines[index].text.split()
    if not tokens or tokens[0] not in _HEADER_FIRST or not all(t in _COLUMNS for t in tokens):
        return None
    notes.append(f"line {lines[index].number}: table without its '# Benchmarking' header: "
                 "benchmark and process count not printed")
    context = {"suite": suite, "benchmark": None, "multi": multi, "np": None, "mode": None}
    return _Table(start=lines[index].number, context=context)


def _start_table(lines: List[_Line], index: int, suite: Optional[str], multi: Optional[int]) -> Optional[_Table]:
    """If lines[index] is a separator followed by '# Benchmarking X', return a new table."""
    if not _SEPARATOR.match(lines[index].text) or index + 1 >= len(lines):
        return None
    title = _BENCHMARKING.match(lines[index + 1].text)
    if not title:
        return None
    is_multi = multi if multi is not None else (0 if title.group("multi") else None)
    context = {"suite": suite, "benchmark": title.group("name"), "multi": is_multi, "np": None, "mode": None}
    if title.group("grid"):
        context["grid"] = title.group("grid").replace(" ", "")
    return _Table(start=lines[index + 1].number, context=context)


# ----------------------------------------------------------------------------------------------
# Step 4: the whole run
# ----------------------------------------------------------------------------------------------


def _note_for(text: str) -> Optional[str]:
    """Return a note for a known non-table message, else None."""
    invalid = _INVALID_FOR.match(text)
    if invalid:
        return invalid.group("text").strip()
    if _INVALID_NAME.match(text) or _ERROR_LINE.match(text):
        return text.strip()
    return None


def _check_complete(tables: List[_Table], finalized: bool, suite: Optional[str], lines: List[_Line],
                    notes: List[str], bannered: bool = True) -> None:
    """Raise ParseError if the run was cut off (without a banner: note a missing Finalize line)."""
    last = tables[-1] if tables else None
    last_text = next((line for line in reversed(lines) if line.text), None)
    if last_text is not None and _SEPARATOR.match(last_text.text):
        raise ParseError("output ends with a section separator: next table cut off", last_text.number)
    if last is not None and not last.rows:
        raise ParseError(f"{last.describe()} has no rows (output cut off)", last.start)
    if suite == "MT":
        # IMB-MT never prints the Finalize line; every table ends with a blank line.
        if last is None:
            raise ParseError("IMB-MT output has no table")
        if not last.closed:
            raise ParseError(f"{last.describe()} is cut off (no blank line after its last row)", lines[-1].number)
        return
    if not finalized and not bannered:
        notes.append(f"no '{_FINALIZE}' line: cannot tell whether the output is complete")
        return
    if not finalized:
        where = f" in {last.describe()} after {len(last.rows)} rows" if last else ""
        raise ParseError(f"'{_FINALIZE}' line missing: output cut off{where}", lines[-1].number)


def parse_imb(text: str) -> Output:
    """Parse the stdout of one IMB run.

    ``rows`` holds one dict per table row. Keys (only those that apply to the layout):
    ``suite``, ``benchmark``, ``multi`` (None, 0 or 1), ``np``, ``groups``, ``group``,
    ``threads``, ``grid`` (IMB-P2P Stencil2D/3D process grid, e.g. "2x2"), ``mode``
    ("aggregate"/"non-aggregate"/None), ``bytes`` (None for
    Barrier-like tables), ``repetitions``, ``t_min_us``, ``t_max_us``, ``t_avg_us``, ``t_us``,
    ``mbytes_per_s``, ``msg_per_s``, ``t_ovrl_us``, ``t_pure_us``, ``t_cpu_us``,
    ``overlap_pct``, ``defects``, ``status`` ("ok", "out-of-mem", "time-out",
    "int-overflow") and ``message`` (text of a special row). ``meta``: ``suite``, ``version``
    and ``calling_sequence`` (the command line IMB printed; "" for IMB-MT).

    Raises :class:`ParseError` when the output is empty, has neither a banner nor a table,
    contains a launcher BAD TERMINATION box, has a table cut off, or lacks the Finalize line
    (IMB-MT: when its last table is incomplete). Without a banner (a table pasted on its own) the
    tables are read with ``suite`` and ``version`` None and notes say what was not printed (the
    banner, a section's benchmark and process count, the Finalize line). Every banner spelling
    from IMB 2.3 to 2021.x is read; a "V" before the version ("Suite V3.2") is dropped.
    """
    if not text.strip():
        raise ParseError("empty output (IMB prints nothing for some rejected arguments, e.g. -msglog 8:2)")
    notes: List[str] = []
    lines = _clean_lines(_dedent(text), notes)
    found = _find_banner(lines, notes)
    if found is None:
        first, banner, version, suite = 0, -1, None, None
        notes.append("no IMB banner: IMB version and suite not printed")
    else:
        first, banner, version, suite = found
    for line in lines[:first]:
        if line.text and not _SEPARATOR.match(line.text):
            notes.append(f"line {line.number} before banner: {line.text}")
    calling = _calling_sequence(lines)
    multi_option = _MULTI_OPTION.search(calling)
    multi = (bounds.integer(multi_option.group("value"), "-multi", None, bounds.MAX_RANKS)
             if multi_option else None)

    output = Output(notes=notes, meta={"suite": suite, "version": version,
                                       "calling_sequence": calling})
    tables: List[_Table] = []
    finalized = False
    index = banner + 1
    while index < len(lines):
        table = _start_table(lines, index, suite, multi)
        bare = None if table is not None else _start_bare_table(lines, index, suite, multi, notes)
        if bare is not None:
            bare.columns = _columns_from_header(lines[index], notes)
            index = _read_rows(lines, index + 1, bare)
            tables.append(bare)
            output.rows.extend(bare.rows)
            continue
        if table is not None:
            header = _read_section_header(lines, index + 1, table, multi)
            if table.context["np"] is None:
                notes.append(f"line {table.start}: table {table.context['benchmark']} without a "
                             "'# #processes' line: process count not printed")
            table.columns = _columns_from_header(lines[header], notes)
            if "group" in table.columns:
                table.context["multi"] = 1  # only -multi 1 prints a Group column
            index = _read_rows(lines, header + 1, table)
            tables.append(table)
            output.rows.extend(table.rows)
            continue
        text = lines[index].text
        if text == _FINALIZE:
            finalized = True
        else:
            note = _note_for(text)
            if note:
                notes.append(note)
            elif text and not text.startswith("#"):
                notes.append(f"line {lines[index].number}: unrecognised: {text}")
        index += 1
    if found is None and not tables:
        raise _no_banner_error(lines)
    _check_complete(tables, finalized, suite, lines, notes, bannered=found is not None)
    for table in tables[:-1]:
        if not table.rows:
            notes.append(f"{table.describe()} has no rows")
    return output


# ----------------------------------------------------------------------------------------------
# The benchmarks
# ----------------------------------------------------------------------------------------------

FORMAT = "imb"

# IMB's columns are the vocabulary the other families' parsers reuse (OSU, GASNet-EX tests).
T_AVG_US = FigureOfMerit("t_avg_us", "usec", "t_avg [usec]")
T_US = FigureOfMerit("t_us", "usec", "t [usec]")
T_OVRL_US = FigureOfMerit("t_ovrl_us", "usec", "t_ovrl [usec]")
T_PURE_US = FigureOfMerit("t_pure_us", "usec", "t_pure [usec]")
MBYTES_PER_S = FigureOfMerit("mbytes_per_s", "10^6 bytes/s", "Mbytes/sec", lower_is_better=False)

FIGURES = (T_AVG_US, T_US, T_OVRL_US, T_PURE_US, MBYTES_PER_S)
ROW_KEYS = ("benchmark", "np", "groups", "mode", "group", "bytes", "threads")

OPTIONS: Dict[str, Option] = {
    "benchmarks": Option("", "names", "IMB benchmark list, e.g. 'PingPong Allreduce'"),
    "msglog": Option("-msglog", help="message sizes 2^min..2^max, e.g. '0:16'", most=62),
    "msgsize": Option("-msgsize", help="explicit comma-separated message sizes (IMB 2021.11)",
                      most=bounds.MAX_BYTES),
    "msglen": Option("-msglen", "file", "explicit message sizes, a list or comma-separated, "
                     "written to the run's folder (IMB's -msglen lengths file, read by "
                     "IMB 2021.7 and Intel MPI's IMB here; -msgsize needs 2021.11)", most=bounds.MAX_BYTES,
                     file="msglen.txt"),
    "npmin": Option("-npmin", help="smallest process count", most=bounds.MAX_RANKS),
    "mem": Option("-mem", help="GB of memory per process for message buffers"),
    "off_cache": Option("-off_cache", help="cache size in MB (-1: default) and line size"),
    "iter": Option("-iter", help="repetitions per message size", most=bounds.MAX_COUNT),
    "time": Option("-time", help="seconds per message size before IMB stops"),
    "iter_policy": Option("-iter_policy", help="dynamic|multiple_np|auto|off"),
    "map": Option("-map", help="PxQ rank mapping"),
    "multi": Option("-multi", help="0|1: run groups simultaneously"),
    "zero_size": Option("-zero_size", help="0 drops the 0-byte row"),
    "data_type": Option("-data_type"),
    "red_data_type": Option("-red_data_type"),
    "window_size": Option("-window_size"),
    "sync": Option("-sync"),
    "root_shift": Option("-root_shift"),
}

# IMB runs every default benchmark when it meets an unknown name, and exits 0.
FATAL_NOTES = ("Invalid benchmark name",)


# A rehearsal's IMB: messages up to 2^REHEARSAL_MSGLOG bytes, a few iterations and seconds.
REHEARSAL_MSGLOG = 10


def scale_down(params: Dict[str, Any], ranks: int) -> Dict[str, Any]:
    out = dict(params)
    if "msglog" in out:
        bounds = [min(int(x), REHEARSAL_MSGLOG) for x in str(out["msglog"]).split(":")]
        out["msglog"] = ":".join(map(str, bounds))
    for name in ("msgsize", "msglen"):
        if name in out:
            sizes = [int(x) for x in str(out[name]).replace(",", " ").strip("[]").split()]
            out[name] = ",".join(str(x) for x in sizes if x <= 2 ** REHEARSAL_MSGLOG) or str(
                min(sizes))
    capped(out, "iter", 20)
    capped(out, "time", 2)
    capped(out, "mem", 0.5)
    capped(out, "npmin", ranks)
    return out


# A simulated IMB: every size, one repetition. Under SimGrid SMPI with computation off every
# repetition takes the same simulated time: t_min, t_max and t_avg are bit-identical at -iter 1,
# 10 and 100 (72 to 3,456 ranks), while -iter n runs about 2.1 n + 1 calls per size
# (docs/measured.md "Simulation at scale").
SIMULATED_ITER = 1


def simulate_down(params: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(params)
    at_most(out, "iter", SIMULATED_ITER)
    return out


# --- the guidelines' collectives and raw outputs (report/guidelines, importers/raw) -------------


def _asked(params: Mapping[str, Any]) -> Optional[Set[str]]:
    value = params.get("benchmarks")
    if value is None:
        return None
    words = value if isinstance(value, (list, tuple)) else str(value).replace(",", " ").split()
    return {str(w) for w in words}


COLLECTIVES = Collectives("IMB", frozenset({"benchmarks", "msglog", "msgsize", "npmin", "iter",
                                            "time", "iter_policy", "mem"}),
                          name_of=lambda benchmark: benchmark, asked=_asked)

_WAITING = re.compile(r"^# \( (?P<n>\d+) additional process(?:es)? waiting in MPI_Barrier\)")
_SUITES = {"MPI-1": "imb-mpi1", "MPI-RMA": "imb-rma", "MPI-NBC": "imb-nbc",
           "IMB-P2P": "imb-p2p", "MT": "imb-mt"}
_FLAGS = {o.flag: name for name, o in OPTIONS.items() if o.kind == "value"}


def describe_raw(text: str, output: Optional[Output], notes: List[str]) -> RawRun:
    """What an IMB output says of its run: driver, options, benchmark list, version, job size."""
    lines = printed_lines(text)
    printed = banner(text)  # (version, suite)
    calling = _after(lines, "# Calling sequence was:")
    listed = _listed_benchmarks(lines)
    # What every IMB output can print is always a parameter: None where this one did not
    # (`compare --where executable=...` then leaves it out instead of keeping it).
    run = RawRun("")
    params = run.params
    params.update(dict.fromkeys(("executable", "benchmarks", "imb_version", "ranks")))
    if calling:
        words = calling.split()
        params["executable"] = words[0]
        params.update(_raw_options(words[1:], run.notes))
    if listed:
        params["benchmarks"] = " ".join(listed)
    elif output is not None:
        names = list(dict.fromkeys(r["benchmark"] for r in output.rows if r.get("benchmark")))
        if names:
            params["benchmarks"] = " ".join(names)
    if printed and printed[0]:
        params["imb_version"] = printed[0]
    elif printed:
        run.notes.append("IMB banner without a version (imb_version null)")
    elif not any(n.startswith("no IMB banner") for n in notes):
        run.notes.append("no IMB banner: IMB version not printed (imb_version null)")
    ranks = _job_size(lines)
    if ranks:
        params["ranks"] = run.ranks = ranks
    else:
        run.notes.append("no '#processes' line: the job's process count is not printed")
    driver = Path(params["executable"] or "").name
    if re.fullmatch(r"IMB-\w+", driver):
        run.benchmark = driver.lower()
    elif printed and printed[1] in _SUITES:
        run.benchmark = _SUITES[printed[1]]
    else:
        run.benchmark = "imb"
        run.notes.append("IMB driver not printed (no calling sequence, suite "
                         f"{printed[1] if printed else 'not printed'}): benchmark 'imb'")
    if not calling:
        run.own_point = "no calling sequence printed: its options are not known"
    return run


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


def _raw_options(words: List[str], notes: List[str]) -> Dict[str, Any]:
    """The calling sequence's options under their matrix names (benchmark names are read from
    IMB's own list); what commstack has no name for is kept as ``other_args``."""
    params: Dict[str, Any] = {}
    other: List[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in _FLAGS and index + 1 < len(words):
            value = words[index + 1]
            # A number past a 64-bit counter stays the text it is (no machine took it).
            number = value.lstrip("-").isdigit() and len(value) <= 19
            params[_FLAGS[word]] = int(value) if number else value
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


def _job_size(lines: List[str]) -> Optional[int]:
    """The largest '#processes = N' plus the processes IMB says wait in MPI_Barrier meanwhile."""
    best = None
    for index, line in enumerate(lines):
        match = _PROCESSES.match(line)
        if not match:
            continue
        size = bounds.integer(match["np"], "#processes", index + 1, bounds.MAX_RANKS)
        waiting = next((m for m in map(_WAITING.match, lines[index + 1:index + 3]) if m), None)
        size += bounds.integer(waiting["n"], "processes waiting", index + 1,
                               bounds.MAX_RANKS) if waiting else 0
        best = max(best or 0, size)
    return best


RAW_OUTPUTS = RawOutputs(
    re.compile(r"^(?:#\s+(?:Intel\s?\(R\)|PALLAS) MPI Benchmark|# Benchmarking \S|"
               r"#bytes\s+#repetitions)"),
    "no IMB banner, '# Benchmarking' section or '#bytes #repetitions' header",
    describe_raw)


def _benchmark(name: str, executable: str) -> Benchmark:
    return Benchmark(name, executable, FORMAT, parse_imb, OPTIONS, FATAL_NOTES, FIGURES, ROW_KEYS,
                     scale_down, simulate_down, COLLECTIVES, RAW_OUTPUTS)


BENCHMARKS = [
    _benchmark("imb-mpi1", "IMB-MPI1"),
    _benchmark("imb-rma", "IMB-RMA"),
    _benchmark("imb-nbc", "IMB-NBC"),
    _benchmark("imb-p2p", "IMB-P2P"),
]
