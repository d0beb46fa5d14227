"""Parser for the GASNet-EX microbenchmarks ``testlarge`` and ``testsmall`` (GASNet tests/).

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
from dataclasses import dataclass, field
from typing import List, Optional

from .errors import ParseError
from .imb import strip_launcher_prefix

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


@dataclass
class GasnetOutput:
    program: str  # testlarge | testsmall
    nprocs: int
    config: str  # GASNet's build configuration string (release, conduit, thread model, ...)
    conduit: Optional[str]
    rows: List[dict] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def parse_gasnet(text: str) -> GasnetOutput:
    lines = [strip_launcher_prefix(line) for line in text.splitlines()]
    banner = None
    rows: List[dict] = []
    notes: List[str] = []
    done = False
    for number, line in enumerate(lines, 1):
        for failure in _FAILURES:
            if failure in line:
                raise ParseError(f"GASNet test reported {failure!r}: {line.strip()!r}", number)
        stripped = line.strip()
        if banner is None and (m := _BANNER.match(stripped)):
            banner = m
            continue
        if stripped == "done.":
            done = True
            continue
        m = _ROW.match(stripped)
        if m:
            rows.append(_row(m))
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
    return GasnetOutput(banner["program"], int(banner["nprocs"]), banner["config"],
                        conduit.group(1).lower() if conduit else None, rows, notes)


def _row(m: "re.Match[str]") -> dict:
    row = {"suite": "gasnet", "section": m["section"], "node": int(m["node"]),
           "benchmark": m["op"], "bytes": int(m["bytes"]), "repetitions": int(m["iters"])}
    if m["bw"] is not None:
        value = float(m["bw"])
        row["mode"] = "aggregate"
        row["kib_per_s" if m["unit"] == "K" else "mib_per_s"] = value
        row["mbytes_per_s"] = value * _UNIT[m["unit"]] / 1e6
    else:
        row["mode"] = "non-aggregate"
        row["t_us"] = float(m["lat"])
        row["t_total_us"] = int(m["total"])
    return row
