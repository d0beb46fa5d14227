"""A machine's simulation calibrated from its own measured ping-pongs (SimGrid's procedure).

SimGrid's network calibration (docs/source/tuto_network_calibration, SimGrid 3.32) measures
point-to-point times over message sizes, fits a piecewise-linear model with pycewise (its
authors' segmented regression: the protocol switches of the MPI, eager to rendezvous, become
breakpoints) and turns each segment's intercept and slope into SMPI's per-size corrections of
a link's latency and bandwidth. Here the measurements are IMB PingPong rows of a commstack
campaign (a ping-pong's ``t[usec]`` is one message's time, half the round trip), pooled over
its repeats; a segment from size ``s`` with intercept ``a`` (s) and slope ``b`` (s/byte)
gives, against the link's latency ``L`` (the first segment's intercept) and bandwidth ``B``
(the best rate of the largest messages)::

    smpi/lat-factor  t:a/L        smpi/bw-factor  t:1/(b B)

with ``t`` the threshold above which SMPI applies them, as SMPI counts sizes (payload plus a
16-byte envelope, strictly greater)

so that SMPI's time of one message of size ``n`` in that segment, ``L a/L + n / (B / (b B))``,
is the fitted ``a + b n``. The fit is of each size's median over the repeats. What the fit
folds in and SMPI then cannot tell apart: the software
overheads of sending and receiving (SimGrid's separate ``smpi/os``, ``smpi/or``), and every
effect that depends on more than one message (contention, the order of arrivals).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from commstack.machine import MachineError
from commstack.optional import require
from commstack.store.campaign import Campaign

MIN_SIZES = 6  # distinct message sizes a fit needs (pycewise splits where the data says)
ENVELOPE = 16  # bytes SMPI adds to every message's payload (its MPI envelope)
MAX_BW_FACTOR = 100.0  # a segment's rate within this factor of the link's, either way


class CalibrationError(MachineError):
    """Measurements a calibration cannot be made from (named, with what is missing)."""


@dataclass(frozen=True)
class Segment:
    first: int  # bytes: the segment's smallest size
    last: int
    intercept_s: float
    slope_s_per_byte: float


@dataclass(frozen=True)
class Calibration:
    latency_s: float
    bandwidth_Bps: float
    segments: Tuple[Segment, ...]
    samples: int
    source: str  # what was fitted: the campaign, stack, ranks, sizes

    @property
    def lat_factor(self) -> str:
        return ";".join(f"{_threshold(s)}:{_g(s.intercept_s / self.latency_s)}"
                        for s in reversed(self.segments))

    @property
    def bw_factor(self) -> str:
        return ";".join(f"{_threshold(s)}:{_g(1.0 / (s.slope_s_per_byte * self.bandwidth_Bps))}"
                        for s in reversed(self.segments))

    def predict_s(self, size: int) -> float:
        """The fitted time of one message of ``size`` bytes."""
        chosen = [s for s in self.segments if s.first <= size] or [self.segments[0]]
        seg = chosen[-1]
        return seg.intercept_s + seg.slope_s_per_byte * size


def _threshold(segment: Segment) -> int:
    """SMPI's threshold of a segment: its factor holds for a message whose size SMPI counts as
    greater than it (``size <= threshold`` takes the factor below: SimGrid 3.32's
    network_smpi.cpp), and SMPI counts a message's payload plus its 16-byte envelope
    (smpi_request.cpp: tag, destination, communicator)."""
    return 0 if segment.first == 0 else segment.first - 1 + ENVELOPE


def _g(value: float) -> str:
    return f"{value:.6g}"


def samples_of(campaign_root: Path, stack: Optional[str] = None,
               benchmark: str = "PingPong") -> Tuple[List[Tuple[int, float]], str]:
    """(bytes, seconds) of every successful PingPong row of the campaign's measured records
    (of one stack), and a line saying what they are."""
    campaign = Campaign(campaign_root)
    found: List[Tuple[int, float]] = []
    stacks, ranks = set(), set()
    for record in campaign.records():
        if not record.ok or record.simulated or (stack and record.stack != stack):
            continue
        for row in record.parsed:
            if row.get("benchmark") == benchmark and row.get("status", "ok") == "ok" \
                    and row.get("t_us") is not None and row.get("bytes") is not None:
                found.append((int(row["bytes"]), float(row["t_us"]) * 1e-6))
                stacks.add(record.stack)
                ranks.add(record.ranks)
    if not found:
        raise CalibrationError(f"{campaign_root}: no measured {benchmark} rows"
                               + (f" of stack {stack!r}" if stack else "")
                               + " (run IMB-MPI1 PingPong on the machine first)")
    if len(stacks) > 1:
        raise CalibrationError(f"{campaign_root}: {benchmark} rows of stacks "
                               f"{', '.join(sorted(map(str, stacks)))}; name one with --stack")
    sizes = sorted({b for b, _ in found})
    if len(sizes) < MIN_SIZES:
        raise CalibrationError(f"{campaign_root}: {len(sizes)} message sizes; a fit needs at "
                               f"least {MIN_SIZES} (e.g. msglog 0:22)")
    return found, (f"{campaign.name}: {len(found)} {benchmark} rows of stack "
                   f"{next(iter(stacks))}, {min(sizes)}-{max(sizes)} bytes")


def fit(samples: Iterable[Tuple[int, float]], source: str = "") -> Calibration:
    """The piecewise-linear fit of (bytes, seconds) and SMPI's factors from it."""
    pycewise = require("pycewise", "calibrate", "calibrating a simulation (SimGrid's procedure)")
    by_size: Dict[int, List[float]] = {}
    for size, seconds in samples:
        by_size.setdefault(int(size), []).append(float(seconds))
    # Each size's median over the repeats: one slow repeat (this machine busy elsewhere) must
    # not bend a segment; the fit minimises relative error (mode log), as times span decades.
    data = [(float(size), statistics.median(times)) for size, times in sorted(by_size.items())]
    reg = pycewise.compute_regression([x for x, _ in data], [y for _, y in data], mode="log")
    segments = []
    largest = int(data[-1][0])
    # pycewise's segment (low, high] holds the sizes above its left neighbour's last one (the
    # outer ends are -inf and inf)
    for (low, high), leaf in reg.flatify().segments:
        first = 0 if low == float("-inf") else int(math.floor(low)) + 1
        last = largest if high == float("inf") else int(high)
        segments.append(Segment(first, last, float(leaf.intercept), float(leaf.coeff)))
    if segments[0].intercept_s <= 0:
        raise CalibrationError(f"{source or 'the samples'}: the fit's smallest messages have no "
                               "positive latency (too few sizes, or noise)")
    latency = segments[0].intercept_s
    # The link's bandwidth: the best rate the largest messages reached (IMB's Mbytes/sec of the
    # largest third of the sizes), not a segment's slope, which a segment of two or three sizes
    # can make flat (a rate beyond any link); each segment's factor is its own rate against it,
    # within MAX_BW_FACTOR either way.
    large = data[len(data) * 2 // 3:]
    bandwidth = max(size / t for size, t in large if size > 0 and t > 0)
    fixed = tuple(Segment(s.first, s.last, max(s.intercept_s, latency * 1e-3),
                          min(max(s.slope_s_per_byte, 1.0 / (bandwidth * MAX_BW_FACTOR)),
                              MAX_BW_FACTOR / bandwidth))
                  for s in segments)
    return Calibration(latency, bandwidth, fixed, sum(map(len, by_size.values())), source)


def facts(cal: Calibration, source_key: str, within: str = "node") -> str:
    """The machine.yaml lines of a calibration: the link's latency and bandwidth (within a NUMA
    domain, ``node``; or between nodes, ``network``) and SMPI's factors."""
    latency, bandwidth = f"{cal.latency_s * 1e6:.4g}us", f"{cal.bandwidth_Bps / 1e9:.4g}GBps"
    keys = ("latency", "bandwidth") if within == "network" else ("latency", "bandwidth")
    lines = [f"  {within}:",
             f"    {keys[0]}: {{value: {latency}, source: {source_key}}}",
             f"    {keys[1]}: {{value: {bandwidth}, source: {source_key}}}",
             "  factors:",
             f"    lat: {{value: \"{cal.lat_factor}\", source: {source_key}}}",
             f"    bw: {{value: \"{cal.bw_factor}\", source: {source_key}}}"]
    return "\n".join(lines)


def table(cal: Calibration, sizes: Sequence[int]) -> List[Tuple[int, float]]:
    """(bytes, fitted microseconds) at ``sizes``."""
    return [(size, cal.predict_s(size) * 1e6) for size in sizes]
