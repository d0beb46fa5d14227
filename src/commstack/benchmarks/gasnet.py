"""The GASNet-EX microbenchmarks ``testlarge`` and ``testsmall`` (GASNet tests/): their options,
figures of merit and the parser of their stdout.

Every process prints a banner; the initiators print one line per operation and size, and node 0
prints ``done.`` at the end::

    =====> testlarge nprocs=2 config=RELEASE=2025.8.0,...,CONDUIT=SMP(SMP-2.1/SMP-2.1),... compiler=...
    B:   0 -       4096 byte :     200 iters, throughput 65104.166667 MB/sec (PutNBI+DEFER throughput)
    A:  0 -          8 byte :    2000 iters, latency          1 us total,     0.005 us ave. (PutBlocking latency)
    done.

Section letter, initiator node, transfer size, iterations, and the value with its unit. Bandwidth
is printed in KB/s, or MB/s with ``-m`` (both binary: 2^10 and 2^20 B/s); rows carry it as
printed (``kib_per_s``/``mib_per_s``) and, for comparison with IMB, as ``mbytes_per_s`` in IMB's
units (10^6 B/s). Latency rows carry ``t_us``, the mean time per blocking operation.

Rows use the keys of the IMB parser where they mean the same: ``benchmark`` (the operation, e.g.
``PutNBI+DEFER``), ``mode`` (``aggregate`` for flood bandwidth, ``non-aggregate`` for blocking
latency, as IMB-RMA's Unidir tables), ``bytes``, ``repetitions``; plus ``section`` and ``node``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from commstack import bounds
from commstack.benchmarks.base import Benchmark, Option, Output, ParseError, capped
from commstack.benchmarks.facts import RawOutputs, RawRun
from commstack.benchmarks.imb import MBYTES_PER_S, T_US
from commstack.benchmarks.text import printed_lines, strip_launcher_prefix

_BANNER = re.compile(r"^=====> (?P<program>\S+) nprocs=(?P<nprocs>\d+) config=(?P<config>\S+)")
_ROW = re.compile(
    r"^(?P<section>[A-Z]):\s+(?P<node>\d+) -\s+(?P<bytes>\d+) byte :\s+(?P<iters>\d+) iters, "
    r"(?:throughput\s+(?P<bw>[\d.]+) (?P<unit>[KM])B/sec"
    r"|latency\s+(?P<total>\d+) us total,\s+(?P<lat>[\d.]+) us ave\.)"
    r" \((?P<op>\S+) (?:throughput|latency)\)$"
)
_UNIT = {"K": 2 ** 10, "M": 2 ** 20}
# Lines after which the output is not a measurement of what was asked.
_FAILURES = ("Test skipped", "*** FATAL ERROR", "*** Caught a fatal signal", "ERROR: ")


def parse_gasnet(text: str) -> Output:
    """Parse the stdout of one testlarge/testsmall run. ``build_config``: GASNet's build
    configuration string (release, conduit, thread model, ...); ``meta``: ``program``
    (testlarge|testsmall), ``nprocs``, ``conduit`` (lower case, None if the banner has none)."""
    lines = [strip_launcher_prefix(line) for line in text.splitlines()]
    banner = None
    banner_line = 0
    rows: List[dict] = []
    notes: List[str] = []
    done = False
    for number, line in enumerate(lines, 1):
        for failure in _FAILURES:
            if failure in line:
                raise ParseError(f"GASNet test reported {failure!r}: {line.strip()!r}", number)
        stripped = line.strip()
        if banner is None and (m := _BANNER.match(stripped)):
            banner, banner_line = m, number
            continue
        if stripped == "done.":
            done = True
            continue
        m = _ROW.match(stripped)
        if m:
            rows.append(_row(m, number))
        elif re.match(r"^[A-Z]:\s+\d+ -", stripped):
            notes.append(f"line {number}: unrecognised result line {stripped!r}")
    if banner is None:
        raise ParseError("no '=====> testlarge|testsmall nprocs=N config=...' banner: "
                         "not the output of a GASNet-EX test")
    if not rows:
        raise ParseError(f"{banner['program']}: no result lines (A:/B: ...)")
    if not done:
        raise ParseError(f"{banner['program']}: no final 'done.' line: the run did not finish "
                         f"(last result: {rows[-1]['benchmark']} {rows[-1]['bytes']} bytes)")
    conduit = re.search(r"CONDUIT=([A-Z0-9]+)", banner["config"])
    return Output(rows, notes, build_config=banner["config"],
                  meta={"program": banner["program"],
                        "nprocs": bounds.integer(banner["nprocs"], "nprocs", banner_line,
                                                 bounds.MAX_RANKS),
                        "conduit": conduit.group(1).lower() if conduit else None})


def _row(m: "re.Match[str]", number: int) -> dict:
    row = {"suite": "gasnet", "section": m["section"],
           "node": bounds.integer(m["node"], "node", number, bounds.MAX_RANKS),
           "benchmark": m["op"], "bytes": bounds.integer(m["bytes"], "bytes", number, bounds.MAX_BYTES),
           "repetitions": bounds.integer(m["iters"], "iters", number, bounds.MAX_COUNT)}
    if m["bw"] is not None:
        value = bounds.finite(m["bw"], "throughput", number)
        row["mode"] = "aggregate"
        row["kib_per_s" if m["unit"] == "K" else "mib_per_s"] = value
        row["mbytes_per_s"] = value * _UNIT[m["unit"]] / 1e6
    else:
        row["mode"] = "non-aggregate"
        row["t_us"] = bounds.finite(m["lat"], "latency", number)
        row["t_total_us"] = bounds.integer(m["total"], "total latency", number, bounds.MAX_COUNT)
    return row


FORMAT = "gasnet"
FIGURES = (T_US, MBYTES_PER_S)
ROW_KEYS = ("benchmark", "mode", "bytes", "node")

# tests/testlarge.c and testsmall.c (installed by packages/gasnet-tests as
# <program>-<conduit>): `testlarge [options] iters maxsz sections`.
OPTIONS: Dict[str, Option] = {
    "mb_units": Option("-m", "flag", "bandwidth in MB/s (2^20 B/s) instead of KB/s"),
    "in_segment": Option("-in", "flag", "initiator-side memory in the GASNet segment"),
    "out_segment": Option("-out", "flag", "initiator-side memory outside the segment"),
    "puts_only": Option("-p", "flag", "puts only"),
    "gets_only": Option("-g", "flag", "gets only"),
    "skip_warmup": Option("-s", "flag", "no warm-up iterations"),
    "full_duplex": Option("-a", "flag", "all nodes send"),
    "cross_machine": Option("-c", "flag", "cross-machine pairing"),
    "minsz": Option("-minsz", help="smallest transfer size"),
    "max_step": Option("-max-step", help="largest step between transfer sizes"),
    "segsz": Option("-segsz", help="segment size in MB"),
    "iters": Option("", "trailing", "iterations per size (first positional argument)"),
    "maxsz": Option("", "trailing", "largest transfer size in bytes"),
    "sections": Option("", "trailing", "test sections: A (latency, testsmall), B (bandwidth)"),
}



def scale_down(params: Dict[str, Any], ranks: int) -> Dict[str, Any]:
    """A rehearsal's test: up to 64 KiB transfers, 100 iterations, a 64 MB segment."""
    out = dict(params)
    capped(out, "iters", 100)
    capped(out, "maxsz", 65536)
    capped(out, "segsz", 64)
    return out


# --- raw outputs (importers/raw) -----------------------------------------------------------------

_RAW_BANNER = re.compile(r"^=====> (?P<program>\S+) nprocs=(?P<nprocs>\d+) "
                     r"config=\S*?CONDUIT=(?P<conduit>[A-Z0-9]+)?")


def describe_raw(text: str, output: Optional[Output], notes: List[str]) -> RawRun:
    """A GASNet-EX test's banner names the program, process count and conduit."""
    banner = next((m for m in map(_RAW_BANNER.match, printed_lines(text)) if m), None)
    program = banner["program"] if banner else None
    run = RawRun(f"gasnet-{program}" if program else "gasnet")
    run.ranks = (bounds.integer(banner["nprocs"], "nprocs", None, bounds.MAX_RANKS)
                 if banner else None)
    conduit = banner["conduit"].lower() if banner and banner["conduit"] else None
    run.params.update(program=program, ranks=run.ranks, conduit=conduit)
    run.own_point = "the test's arguments (iterations, sizes) are not printed as given"
    return run


RAW_OUTPUTS = RawOutputs(re.compile(r"^=====> \S+ nprocs=\d+ config="),
                         "no '=====> <test> nprocs=N config=...' banner", describe_raw)

# A gasnet stack runs <executable>-<conduit>, e.g. testlarge-ibv.
BENCHMARKS = [
    Benchmark(f"gasnet-{program}", program, FORMAT, parse_gasnet, OPTIONS,
              figures=FIGURES, row_keys=ROW_KEYS, scale_down=scale_down, raw_outputs=RAW_OUTPUTS)
    for program in ("testlarge", "testsmall")
]
