"""GHEX-BENCH ``cartex`` (halo exchange): its options, figure of merit and the parser of the
stdout of one run (the ``benchmark_<runtime>`` executables).

Rank 0 prints (format described in ``research/ghexbench.md`` §6)::

    setup time: 0.000278905 s          <- ghex_comm runtime only
    mpi_comm                           <- runtime description (r.info())
    running on 4 ranks
    repetitions       200              <- not printed by the 2021 (Betzy-era) code
    load (bytes)      5.55520000e+04
    mean (s)          3.63061500e-05
    ...                                <- one "label  value" line per statistic
    tp. max (GB/s)    1.73724865e+00

    under      |   0.00% |             <- ASCII histogram (ignored)
    ...

The 2021 code printed a shorter block with ``throughput (GB/s)`` and ``tp. stddev (GB/s)``
instead of the percentile throughputs. Published Betzy tables show ``mean (s)`` x 10000
("execution time of 10000 exchange calls"); it is added as ``time_10000_calls_s``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from commstack import bounds, flavours
from commstack.benchmarks.base import (
    Benchmark,
    FigureOfMerit,
    Option,
    Output,
    ParseError,
    capped,
    triple,
)
from commstack.benchmarks.facts import RawOutputs, RawRun
from commstack.benchmarks.text import printed_lines, strip_launcher_prefix

# Statistic label as printed -> row key.
_LABELS: Dict[str, str] = {
    "repetitions": "repetitions",
    "load (bytes)": "load_bytes",
    "elapsed (s)": "elapsed_s",
    "mean (s)": "mean_s",
    "stddev (s)": "stddev_s",
    "median (s)": "median_s",
    "5% centile (s)": "p5_s",
    "25% centile (s)": "p25_s",
    "75% centile (s)": "p75_s",
    "95% centile (s)": "p95_s",
    "min (s)": "min_s",
    "max (s)": "max_s",
    "tp. median (GB/s)": "tp_median_gbs",
    "tp. 5% c. (GB/s)": "tp_p5_gbs",
    "tp. 25% c. (GB/s)": "tp_p25_gbs",
    "tp. 75% c. (GB/s)": "tp_p75_gbs",
    "tp. 95% c. (GB/s)": "tp_p95_gbs",
    "tp. min (GB/s)": "tp_min_gbs",
    "tp. max (GB/s)": "tp_max_gbs",
    # 2021 (Betzy-era) format
    "throughput (GB/s)": "throughput_gbs",
    "tp. stddev (GB/s)": "tp_stddev_gbs",
}

# Keys every complete result block has, per format.
_REQUIRED_CURRENT = [key for key in _LABELS.values() if key not in ("throughput_gbs", "tp_stddev_gbs")]
_REQUIRED_2021 = ["elapsed_s", "mean_s", "median_s", "p25_s", "p75_s", "min_s", "max_s", "stddev_s",
                  "throughput_gbs", "tp_stddev_gbs"]

# Messages after which the run is not a valid result.
_FAILURES = ("could not create decomposition", "command line parsing error", "check failed")

_RUNNING_ON = re.compile(r"^running on (?P<ranks>\d+) ranks?$")
_SETUP_TIME = re.compile(r"^setup time: (?P<seconds>\S+) s$")
# "label   value": the value is the line's last word (split, not matched: a regex over label and
# value backtracks quadratically on a long line).
_VALUE = re.compile(r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)")
# "1.5759e-05 |  94.50% | ooo" and its "-----+" rule; no part can match what another does (an
# "\S+ ... .*%" backtracked quadratically on a long line of "|").
_HISTOGRAM = re.compile(r"^(?:-+\+|[^\s|]+\s*\|[^%]*%)")


def _check_failures(lines: List[Tuple[int, str]]) -> None:
    """Raise ParseError if the program reported a failure."""
    for number, text in lines:
        for failure in _FAILURES:
            if failure in text:
                raise ParseError(f"cartex reported {failure!r}: {text.strip()!r}", number)


def _find_header(lines: List[Tuple[int, str]]) -> Tuple[int, str, int]:
    """Return (index of the 'running on N ranks' line, runtime description, N)."""
    for index, (number, text) in enumerate(lines):
        match = _RUNNING_ON.match(text)
        if not match:
            continue
        previous = [t for _, t in lines[:index] if t and not _SETUP_TIME.match(t)]
        if not previous:
            raise ParseError("no runtime description line before 'running on N ranks'", number)
        return index, previous[-1], bounds.integer(match.group("ranks"), "ranks", number,
                                                   bounds.MAX_RANKS, least=1)
    raise ParseError("no 'running on N ranks' line (runtime did not start or output is empty)")


def _parse_statistics(lines: List[Tuple[int, str]], notes: List[str]) -> dict:
    """Collect 'label  value' lines into a dict keyed as in _LABELS."""
    values: dict = {}
    for number, text in lines:
        if not text or _HISTOGRAM.match(text):
            continue
        words = text.rsplit(None, 1)
        label, value = (words[0].strip(), words[1]) if len(words) == 2 else ("", "")
        key = _LABELS.get(label) if text[:1].strip() and _VALUE.fullmatch(value) else None
        if key is None:
            notes.append(f"line {number}: unrecognised: {text[:200]}")
            continue
        if key == "repetitions":
            values[key] = bounds.integer(value, key, number, bounds.MAX_COUNT)
        elif key.endswith("_gbs") and value.lstrip("+-") in ("nan", "inf"):
            # a throughput over a time of 0 (or of no sample): stored as null, not as a number
            values[key] = None
            notes.append(f"line {number}: {label} is {value}: stored as null")
        else:
            values[key] = bounds.finite(value, key, number)
    return values


def _check_complete(values: dict, last_line: int) -> None:
    """Raise ParseError if the result block is missing lines (cut-off output)."""
    if "mean_s" not in values:
        raise ParseError("no 'mean (s)' line: result block missing or cut off", last_line)
    is_2021 = "throughput_gbs" in values or "repetitions" not in values
    required = _REQUIRED_2021 if is_2021 else _REQUIRED_CURRENT
    missing = [key for key in required if key not in values]
    if missing:
        raise ParseError(f"result block cut off: missing {', '.join(missing)}", last_line)


def parse_cartex(text: str) -> Output:
    """Parse the stdout of one cartex run into one row.

    Row keys: ``runtime`` (the runtime's description line), ``ranks``, ``repetitions`` (int),
    ``load_bytes``, ``elapsed_s``, ``mean_s``, ``stddev_s``, ``median_s``, ``p5_s``, ``p25_s``,
    ``p75_s``, ``p95_s``, ``min_s``, ``max_s``, ``tp_median_gbs``, ``tp_p5_gbs``, ``tp_p25_gbs``,
    ``tp_p75_gbs``, ``tp_p95_gbs``, ``tp_min_gbs``, ``tp_max_gbs``; ``setup_time_s``
    (ghex_comm); 2021 format: ``throughput_gbs``, ``tp_stddev_gbs``; always the derived
    ``time_10000_calls_s``.

    Raises :class:`ParseError` when the runtime/ranks lines or the mean line are missing, when the
    result block is incomplete, or when the program printed ``could not create decomposition``,
    ``command line parsing error`` (goes to stderr: pass stdout + stderr to catch it) or
    ``check failed``.
    """
    if not text.strip():
        raise ParseError("empty output (cartex writes 'command line parsing error' and crashes to stderr)")
    lines = [(number, strip_launcher_prefix(raw)) for number, raw in enumerate(text.splitlines(), start=1)]
    _check_failures(lines)
    notes: List[str] = []
    index, runtime, ranks = _find_header(lines)
    setup: Optional[float] = None
    for number, line in lines[:index]:
        match = _SETUP_TIME.match(line)
        if match:
            setup = bounds.finite(match.group("seconds"), "setup time", number)
    values = _parse_statistics(lines[index + 1:], notes)
    _check_complete(values, lines[-1][0])
    if not any(line.startswith("over ") for _, line in lines[index + 1:]):
        notes.append("histogram incomplete (no 'over' row): output may be cut off after the statistics")
    if setup is not None:
        values["setup_time_s"] = setup
    values["time_10000_calls_s"] = values["mean_s"] * 10000
    return Output(rows=[{"runtime": runtime, "ranks": ranks, **values}], notes=notes)


FORMAT = "cartex"
MEAN_S = FigureOfMerit("mean_s", "s", "mean exchange time [s]")

OPTIONS: Dict[str, Option] = {
    "domain": Option("--domain", "triple", "local domain per rank"),
    "global_domain": Option("--global-domain", "triple", "global grid"),
    "halo": Option("--halo", help="halo width"),
    "nfields": Option("--nfields", help="fields per exchange"),
    "nrep": Option("--nrep", help="timed exchanges"),
    "time": Option("--time", help="time budget in seconds"),
    "order": Option("--order", help="rank order XYZ|ZYX|..."),
    "node": Option("--node", "triple", "hwcart node grid"),
    "socket": Option("--socket", "triple", "hwcart socket grid"),
    "numa": Option("--numa", "triple", "hwcart NUMA grid"),
    "l3": Option("--l3", "triple", "hwcart L3 grid"),
    "core": Option("--core", "triple", "hwcart core grid"),
    "hwthread": Option("--hwthread", "triple", "hwcart hardware-thread grid"),
    "thread": Option("--thread", "triple", "threads per rank"),
    "mpicart": Option("--MPICart", "triple", "MPI_Cart_create decomposition instead of hwcart"),
    "check": Option("--check", "flag", "verify halos once before timing"),
    "mpi_datatypes": Option("--MPI-datatypes", "flag", "mpi_comm: use MPI datatypes"),
    "node_local": Option("--node-local", "flag", "ghex_comm: node-local transport"),
}

# hwcart levels below the node: a rehearsal keeps the node level only, over all its ranks.
_SUB_NODE_LEVELS = ("socket", "numa", "l3", "core", "hwthread")


def scale_down(params: Dict[str, Any], ranks: int) -> Dict[str, Any]:
    """A rehearsal's cartex: 16^3 points per rank, 10 exchanges, and the same kind of
    decomposition (hwcart levels or --MPICart) over the rehearsal's ranks, as a 1-D grid."""
    out = dict(params)
    if "domain" in out:
        out["domain"] = " ".join(str(min(n, 16)) for n in triple(out["domain"]))
    if "global_domain" in out:
        out["global_domain"] = " ".join(str(min(n, 16 * ranks)) for n in triple(out["global_domain"]))
    capped(out, "nrep", 10)
    capped(out, "time", 2)
    if "node" in out:
        out["node"] = f"{ranks} 1 1"
        for level in _SUB_NODE_LEVELS:
            out.pop(level, None)
    if "mpicart" in out:
        out["mpicart"] = f"{ranks} 1 1"
    return out


NAME = "cartex"

# --- dimensions and raw outputs (figures, importers) --------------------------------------------


def dimensions(params: Dict[str, Any], record: Any) -> Dict[str, Any]:
    """A swept record's parameters plus what the published tables tell runs apart by:
    ``toolchain`` (the MPI flavour's short name, ompi/impi, else the stack name),
    ``decomposition`` (mpicart when ``mpicart`` is set, else hwcart), ``order`` (XYZ, cartex's
    default), ``nodes``."""
    dims = dict(params)
    if record.imported:
        return dims
    dims.setdefault("toolchain", flavours.toolchain_of(record.flavour) or record.stack)
    dims.setdefault("decomposition", "mpicart" if "mpicart" in dims else "hwcart")
    dims.setdefault("order", "XYZ")
    dims.setdefault("nodes", record.nodes if record.nodes is not None else 1)
    return dims


_RANKS = re.compile(r"^running on (?P<ranks>\d+) ranks?$")


def describe_raw(text: str, output: Optional[Output], notes: List[str]) -> RawRun:
    """cartex prints its process count and runtime, none of its options."""
    run = RawRun(NAME)
    runtime = None
    if output is not None and output.rows:
        runtime, run.ranks = output.rows[0]["runtime"], output.rows[0]["ranks"]
    else:
        match = next((m for m in map(_RANKS.match, printed_lines(text)) if m), None)
        run.ranks = (bounds.integer(match["ranks"], "ranks", None, bounds.MAX_RANKS)
                     if match else None)
    run.params.update(runtime=runtime, ranks=run.ranks)
    run.own_point = "cartex prints none of its options (domain, halo, fields, grid)"
    return run


RAW_OUTPUTS = RawOutputs(re.compile(r"^(?:running on \d+ ranks?$|command line parsing error|"
                                    r"could not create decomposition)"),
                         "no 'running on N ranks' line nor a cartex failure message", describe_raw)

BENCHMARKS = [
    # cartex builds one executable per runtime: pick it with the `executable` parameter.
    # One row per run: no row keys.
    Benchmark(NAME, "benchmark_mpi_comm", FORMAT, parse_cartex, OPTIONS, figures=(MEAN_S,),
              scale_down=scale_down, raw_outputs=RAW_OUTPUTS, dimensions=dimensions),
]
