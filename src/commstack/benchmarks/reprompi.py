"""ReproMPI's ``mpibenchmark`` (github.com/hunsa/reprompi): MPI collectives timed call by call,
each call started by a process synchronisation chosen at run time; options, figures of merit and
the parser of its stdout.

Rank 0 prints the command line, a ``#@key=value`` header (what was in effect) and then one of
three tables, all with the message size as a *count* of the datatype (``#@datatype_size_bytes``
gives the bytes; builds with ``OPTION_PRINT_MSIZES_BYTES`` print ``msize_bytes``)::

    #@procsync=MPI_Barrier                       <- or window (adds an errorcode column), ...
    #@runtime_type=local
                   test       nrep        count    runtime_sec          <- default: one line per call
              MPI_Bcast          0            8   0.0000028660
    ...
    process   test  nrep  count  [errorcode]  loc_tstart_sec  loc_tend_sec  [gl_tstart_sec ...]  <- -v
    ...
                   test  count total_nrep valid_nrep  mean_sec  median_sec ...  <- --summary=...
    # Execution time: 0s

``runtime_sec`` is ReproMPI's run-time of the call: with ``runtime_type=local`` the largest of
the processes' own run-times, with ``global`` the last exit minus the first start on the
synchronised clock. ``-v`` prints every process's start and end of every call; the parser
computes the same run-times from them, both ``local`` and (where global times are printed)
``global``, and the spread of the processes' starts (how well the synchronisation lined them up).
Under window synchronisation a call whose ``errorcode`` is not 0 (a process started it after its
window had begun) is invalid: ReproMPI's summary leaves it out and so does this parser.

One row per call and message size: ``benchmark`` (the call, e.g. ``MPI_Bcast``), ``bytes``
(the printed count times ``#@datatype_size_bytes``), ``repetitions`` (calls measured),
``valid`` (calls kept), the median per-call run-time ``t_med_us`` with its distribution-free
95 % interval ``t_low_us``..``t_high_us`` (``commstack.stats.describe``; None below 6 calls),
and with ``-v`` ``start_skew_med_us`` (None otherwise; the times are None where no call was
valid), at 4 significant digits; rows call by call, within a call the sizes with every value
first, then those with too few valid calls for an interval, then those with none. Minimum,
maximum and the global run-times (``-v``) are in :func:`samples`; ``--summary`` rows carry
ReproMPI's own ``t_avg_us``, ``t_med_us``, ``t_min_us``, ``t_max_us``. The per-call samples
stay in the run's ``stdout.txt`` (the record's raw output), where :func:`samples` reads them
back: a record holds a few numbers per row however many calls were timed.

Versions: releases before MPITS (e.g. commit 0032547 of 2020, tests/fixtures/reprompi/external/)
print the same tables with ``#@sync=`` and ``#@clocktype=`` for ``#@procsync=`` and
``#@runtime_type=``, and ``#Command-line arguments:``; both spellings are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from commstack import stats
from commstack.benchmarks.base import (
    Benchmark,
    FigureOfMerit,
    Option,
    Output,
    ParseError,
    at_most,
    capped,
)
from commstack.benchmarks.facts import Collectives
from commstack.benchmarks.imb import T_AVG_US
from commstack.benchmarks.text import strip_launcher_prefix

_HEADER_KV = re.compile(r"^#@(?P<key>[A-Za-z_0-9]+)=(?P<value>.*)$")
_ERROR = re.compile(r"^ERROR: (?P<message>.+)$")
# zf_log lines of MPITS ("11-26 19:01:16.823 13739 13739 E instantiate_clock_sync@...")
_LOG_LINE = re.compile(r"^\d\d-\d\d \d\d:\d\d:\d\d\.\d+ +\d+ +\d+ [VDIWEF] ")
_ABORTS = ("BAD TERMINATION", "MPI_ABORT was invoked", "*** Process received signal ***",
           "*** An error occurred in", "Fatal error in ", "srun: error:",
           "mpirun noticed that process", "] Caught signal ")
_SIZE_COLUMNS = ("count", "msize_bytes", "msize")
_SUMMARY_KEYS = {"mean_sec": "t_avg_us", "median_sec": "t_med_us", "min_sec": "t_min_us",
                 "max_sec": "t_max_us"}
_FINISHED = "# Execution time:"
MAX_LINES = 50_000_000  # bound on the lines read (a 1 GB output); more is an error, not a hang

T_MED_US = FigureOfMerit("t_med_us", "usec", "t_median [usec]")
FIGURES = (T_MED_US, T_AVG_US)
ROW_KEYS = ("benchmark", "bytes")
FORMAT = "reprompi"
WINDOW = "window"


@dataclass
class _Table:
    """The table being read: its columns and, per (call, size), the calls' values."""

    columns: List[str]
    first_line: int
    verbose: bool = False
    summary: bool = False
    # (call, count) -> rep -> process -> (errorcode, loc_start, loc_end, gl_start, gl_end)
    calls: Dict[Tuple[str, int], Dict[int, Dict[int, Tuple[Any, ...]]]] = field(default_factory=dict)
    # (call, count) -> rep -> (errorcode, runtime_sec)
    runtimes: Dict[Tuple[str, int], Dict[int, Tuple[int, float]]] = field(default_factory=dict)
    summaries: List[Dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Samples:
    """Per-call run-times (seconds) of one call and size, as ReproMPI counts them."""

    call: str
    count: int
    runtime_type: str
    local: List[float]                 # valid calls only
    global_: Optional[List[float]]     # -v with global clocks
    start_skew: Optional[List[float]]  # -v with global clocks: last start - first start
    measured: int                      # calls timed, valid or not


def parse_reprompi(text: str) -> Output:
    """Parse the stdout of one ``mpibenchmark`` run (see the module docstring)."""
    meta, table = _read(text)
    notes: List[str] = []
    nprocs = meta.get("nprocs")
    rows: List[dict] = []
    if table.summary:
        for s in table.summaries:
            rows.append(s)
    else:
        found = _samples(meta, table)
        first = {}  # calls in the order they first appear, each call's sizes in order
        for one in found:
            first.setdefault(one.call, len(first))
        # Within a call, rows with the same missing values together (all times; too few valid
        # calls for an interval; none valid), each group in size order: a record stores one
        # block per such group, not one per alternation (under load, many sizes keep 1-5 calls).
        rows = sorted((_row(one) for one in found),
                      key=lambda r: (first[r["benchmark"]], _missing(r), r["count"]))
        out_of_window = sum(one.measured - len(one.local) for one in found)
        if out_of_window:
            notes.append(f"{out_of_window} of {sum(one.measured for one in found)} calls started "
                         "outside their window (errorcode not 0) and are left out; each row's "
                         "'valid' counts the calls kept")
    for row in rows:  # the size in bytes replaces ReproMPI's count of datatype elements
        row["bytes"] = row.pop("count") * _size_bytes(meta, table)
    notes += _ignored_options(meta)
    if meta.get("skipped"):
        notes.append(f"ignored {len(meta['skipped'])} line(s) before the table header that are "
                     f"not mpibenchmark's (first: line {meta['skipped'][0]})")
    meta_out = {k: meta.get(k) for k in ("procsync", "clocksync", "runtime_type", "nprocs",
                                          "datatype", "operation", "root_proc", "clock",
                                          "window_s", "wait_time_s", "nrep")}
    meta_out["commit"] = meta.get("reproMPIcommitSHA1")
    meta_out["verbose"] = table.verbose
    meta_out["command_line"] = meta.get("command_line")
    if nprocs is None:
        notes.append("no #@nprocs line: the process count is not known from the output")
    return Output(rows, notes, meta=meta_out)


def samples(text: str) -> Dict[Tuple[str, int], Samples]:
    """The per-call run-times of an output, by (call, bytes): what :func:`parse_reprompi`
    summarises, read back from a record's ``stdout.txt`` for the statistics of verdicts."""
    meta, table = _read(text)
    if table.summary:
        return {}
    return {(s.call, s.count * _size_bytes(meta, table)): s for s in _samples(meta, table)}


def _size_bytes(meta: Dict[str, Any], table: _Table) -> int:
    """Bytes per unit of the size column: 1 for msize_bytes, else the datatype's size."""
    if "msize_bytes" in table.columns:
        return 1
    size = meta.get("datatype_size_bytes", 1)
    return size if isinstance(size, int) and size > 0 else 1


def _read(text: str) -> Tuple[Dict[str, Any], _Table]:
    if not text.strip():
        raise ParseError("empty output: mpibenchmark printed nothing (its stderr says why)")
    meta: Dict[str, Any] = {}
    table: Optional[_Table] = None
    finished = False
    for number, raw in enumerate(text.splitlines(), 1):
        if number > MAX_LINES:
            raise ParseError(f"more than {MAX_LINES} lines: not read further", number)
        line = strip_launcher_prefix(raw).strip()
        for abort in _ABORTS:
            if abort in line:
                raise ParseError(f"the run ended abnormally: {line.strip(' =')!r}", number)
        if not line or _LOG_LINE.match(line):
            continue
        error = _ERROR.match(line)
        if error:
            raise ParseError(f"mpibenchmark refused to run: {error['message']}", number)
        if line.lower().startswith("#command-line arguments:"):
            meta["command_line"] = line.split(":", 1)[1].strip()
            continue
        kv = _HEADER_KV.match(line)
        if kv:
            meta[kv["key"]] = _number(kv["value"].strip())
            continue
        if line.startswith(_FINISHED):
            finished = True
            continue
        if line.startswith("#"):
            continue
        words = line.split()
        if words[0] in ("test", "process"):
            if table is not None:
                raise ParseError("a second table header: two runs' outputs in one file?", number)
            table = _header(words, number)
            continue
        if table is None:  # a shell prompt or job chatter pasted with the output
            meta.setdefault("skipped", []).append(number)
            continue
        _add(table, words, number)
    if table is None:
        raise ParseError("no table header ('test nrep count ...' or 'process test ...'): "
                         "not the output of a ReproMPI mpibenchmark run, or it ended before "
                         "measuring")
    if not (table.calls or table.runtimes or table.summaries):
        raise ParseError("a table header without rows: the run ended before its first result",
                         table.first_line)
    if not finished:
        raise ParseError("no final '# Execution time:' line: the run did not finish (output "
                         "cut off)")
    # Releases of 2015-2020 print #@sync= and #@clocktype= for today's #@procsync=/#@runtime_type=
    for old, new in (("sync", "procsync"), ("clocktype", "runtime_type")):
        if old in meta and new not in meta:
            meta[new] = meta[old]
    _check_complete(meta, table)
    return meta, table


def _header(words: List[str], number: int) -> _Table:
    verbose = words[0] == "process"
    columns = words
    if not any(c in columns for c in _SIZE_COLUMNS):
        raise ParseError(f"table header without a size column: {' '.join(words)!r}", number)
    summary = "total_nrep" in columns
    return _Table(columns, number, verbose=verbose, summary=summary)


def _add(table: _Table, words: List[str], number: int) -> None:
    cols = table.columns
    if len(words) != len(cols):
        raise ParseError(f"{len(words)} fields where the header has {len(cols)} "
                         "(line cut off?)", number)
    value = dict(zip(cols, words))
    size_key = next(c for c in _SIZE_COLUMNS if c in value)
    try:
        count = int(value[size_key])
        if table.summary:
            row: Dict[str, Any] = {"benchmark": value["test"], "count": count,
                                   "repetitions": int(value["total_nrep"]),
                                   "valid": int(value["valid_nrep"])}
            for key, out in _SUMMARY_KEYS.items():
                if key in value:
                    row[out] = _us(float(value[key]))
            table.summaries.append(row)
            return
        rep = int(value["nrep"])
        error = int(value.get("errorcode", 0))
        key = (value["test"], count)
        if table.verbose:
            times = tuple(float(value[c]) if c in value else None for c in
                          ("loc_tstart_sec", "loc_tend_sec", "gl_tstart_sec", "gl_tend_sec"))
            table.calls.setdefault(key, {}).setdefault(rep, {})[int(value["process"])] = (
                error, *times)
        else:
            table.runtimes.setdefault(key, {})[rep] = (error, float(value["runtime_sec"]))
    except (KeyError, ValueError) as exc:
        raise ParseError(f"not a result line ({exc}): {' '.join(words)[:100]!r}", number) from None


def _check_complete(meta: Dict[str, Any], table: _Table) -> None:
    nrep = meta.get("nrep")
    nprocs = meta.get("nprocs")
    for (call, count), reps in {**table.calls, **table.runtimes}.items():
        if isinstance(nrep, int) and len(reps) != nrep:
            raise ParseError(f"{call} count {count}: {len(reps)} calls where #@nrep={nrep} "
                             "(output cut off?)")
        if table.verbose and isinstance(nprocs, int):
            short = [r for r, procs in reps.items() if len(procs) != nprocs]
            if short:
                raise ParseError(f"{call} count {count}: call {short[0]} has times of "
                                 f"{len(reps[short[0]])} of {nprocs} processes (output cut off?)")


def _samples(meta: Dict[str, Any], table: _Table) -> List[Samples]:
    runtime_type = str(meta.get("runtime_type", "local"))
    out = []
    for (call, count), reps in table.runtimes.items():
        valid = [t for _, (err, t) in sorted(reps.items()) if err == 0]
        out.append(Samples(call, count, runtime_type, valid, None, None, len(reps)))
    for (call, count), reps in table.calls.items():
        local: List[float] = []
        glob: List[float] = []
        skew: List[float] = []
        has_global = True
        for _, procs in sorted(reps.items()):
            times = list(procs.values())
            if any(t[0] != 0 for t in times):
                continue
            local.append(max(t[2] - t[1] for t in times))
            if any(t[3] is None for t in times):
                has_global = False
                continue
            starts = [t[3] for t in times]
            glob.append(max(t[4] for t in times) - min(starts))
            skew.append(max(starts) - min(starts))
        out.append(Samples(call, count, runtime_type,
                           glob if runtime_type == "global" and has_global else local,
                           glob if has_global else None, skew if has_global else None, len(reps)))
    return out


def _row(s: Samples) -> dict:
    # Every row has every key (None where there is no value), and rows come call by call: a
    # record's table stores one block per call. Times at 4 significant digits (the printed
    # resolution of every report); the samples themselves stay in stdout.txt.
    row: Dict[str, Any] = {"benchmark": s.call, "count": s.count, "repetitions": s.measured,
                           "valid": len(s.local)}
    center = stats.describe(s.local) if s.local else None
    row.update(t_med_us=_us(center.median) if center else None,
               t_low_us=_us(center.low) if center else None,
               t_high_us=_us(center.high) if center else None,
               start_skew_med_us=_us(stats.median(s.start_skew)) if s.start_skew else None)
    return row


def _missing(row: dict) -> Tuple[int, Tuple[str, ...]]:
    """How many values of the row are missing, and which (rows with all of them first)."""
    keys = tuple(sorted(k for k, v in row.items() if v is None))
    return len(keys), keys


def _us(seconds: Optional[float]) -> Optional[float]:
    return None if seconds is None else float(f"{seconds * 1e6:.4g}")


def _number(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


# Options the command line asked for that the header shows not in effect (mpibenchmark of
# 2025-04 takes the clock synchronisation from $MPITS_PARAMS and ignores --clock-sync and
# --runtime-type): a run that did not run what was asked.
NOT_IN_EFFECT = "asked but not in effect"


def _ignored_options(meta: Dict[str, Any]) -> List[str]:
    notes = []
    command = str(meta.get("command_line") or "")
    for flag, key in (("--proc-sync", "procsync"), ("--runtime-type", "runtime_type"),
                      ("--clock-sync", "clocksync")):
        m = re.search(rf"{flag}[= ](\S+)", command)
        if m and key in meta and str(meta[key]) != m.group(1):
            notes.append(f"{NOT_IN_EFFECT}: {flag}={m.group(1)} (the header says "
                         f"#@{key}={meta[key]})")
    return notes


def _equals(flag: str, help: str) -> Option:
    return Option(flag, "equals", help)


# mpibenchmark reads --key=value only (`--runtime-type global` is refused).
OPTIONS: Dict[str, Option] = {
    "calls": _equals("--calls-list", "MPI calls, comma-separated: MPI_Bcast,MPI_Allreduce"),
    "msizes": _equals("--msizes-list", "message sizes in bytes, comma-separated"),
    "msize_interval": _equals("--msize-interval", "min=<log2>,max=<log2>,step=<log2>"),
    "nrep": _equals("--nrep", "calls timed per call and size"),
    "proc_sync": _equals("--proc-sync", "process synchronisation before every call: "
                         "MPI_Barrier, Double_MPI_Barrier, dissem_barrier, window, roundtime"),
    "window_size": _equals("--window-size", "window length in microseconds (proc_sync window)"),
    "wait_time": _equals("--wait-time", "microseconds before the first window"),
    "runtime_type": _equals("--runtime-type", "local or global run-time of a call"),
    "summary": _equals("--summary", "print mean,median,min,max,... instead of every call"),
    "datatype": _equals("--datatype", "MPI_BYTE, MPI_CHAR, MPI_INT, MPI_FLOAT, MPI_DOUBLE"),
    "operation": _equals("--operation", "reduction operation, e.g. MPI_SUM"),
    "root_proc": _equals("--root-proc", "root of rooted collectives"),
    "shuffle_jobs": Option("--shuffle-jobs", "flag", "run the (call, size) jobs in random order"),
    "verbose": Option("-v", "flag", "print every process's start and end of every call"),
}


def scale_down(params: Dict[str, Any], ranks: int) -> Dict[str, Any]:
    """A rehearsal's run: up to 30 calls per size."""
    out = dict(params)
    capped(out, "nrep", 30)
    return out


def simulate_down(params: Dict[str, Any]) -> Dict[str, Any]:
    """A simulated run: 10 calls per size (deterministic)."""
    out = dict(params)
    at_most(out, "nrep", 10)
    return out


NAME = "reprompi"

# --- the guidelines' collectives (report/guidelines) --------------------------------------------


def _asked(params: Mapping[str, Any]) -> Optional[Set[str]]:
    value = params.get("calls")
    if value is None:
        return None
    words = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return {str(w).strip()[4:] for w in words if str(w).strip().startswith("MPI_")}


COLLECTIVES = Collectives(
    "ReproMPI", frozenset({"calls", "msizes", "msize_interval", "nrep", "summary", "verbose",
                           "shuffle_jobs"}),
    name_of=lambda benchmark: benchmark[4:] if benchmark.startswith("MPI_") else None,
    asked=_asked, per_call=samples)

BENCHMARKS = [
    Benchmark(NAME, "mpibenchmark", FORMAT, parse_reprompi, OPTIONS,
              fatal_notes=(NOT_IN_EFFECT,), figures=FIGURES, row_keys=ROW_KEYS,
              scale_down=scale_down, simulate_down=simulate_down, collectives=COLLECTIVES)
]
