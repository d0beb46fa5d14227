"""Plots and tables in the style of Hargrove & Bonachea, "GASNet-EX RMA Communication
Performance on Recent Supercomputing Systems" (LBNL, 2022).

* Fig. 2: uni-directional flood bandwidth vs transfer size, from the "Aggregate" timings of
  IMB-RMA ``Unidir_put``/``Unidir_get`` (and IMB-MPI1 ``Uniband`` for message passing), IMB's
  MB/s (10^6 B/s) converted to GiB/s (2^30 B/s); log x, linear y; Put solid blues, Get dash-dot
  reds, message passing dashed greens; ``o`` markers for MPI RMA, ``+`` for message passing.
  Each point is the maximum over the repeated runs (the paper: over 16 batch jobs).
* Table 1: round-trip latency of 8-byte RMA Put and Get, from the "Non-aggregate" timings; the
  minimum over the repeated runs; with the ratio to a baseline configuration (the paper: MPI RMA
  / GASNet-EX; here: each configuration / the first one).

Configurations are what varies between the campaign's points (stack, fabric, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from commstack.compare import Figure, figures, varying  # noqa: E402

GIB = 2 ** 30
RMA = {"Unidir_put": "Put", "Unidir_get": "Get"}
MESSAGE_PASSING = {"Uniband": "Isend/Irecv"}
LATENCY_BYTES = 8
RATIO_SIZES = (4, 1024)  # the paper: the ratio holds for power-of-two sizes 4..1024 bytes


def mbytes_to_gib(mbytes_per_s: float) -> float:
    """IMB's MB/s (10^6 bytes per second) in GiB/s (2^30 bytes per second)."""
    return mbytes_per_s * 1e6 / GIB


@dataclass
class Series:
    config: str
    op: str             # Put, Get, Isend/Irecv
    points: Dict[int, float]  # bytes -> value
    runs: int


def _config_labels(figs: List[Figure]) -> Dict[int, str]:
    names = [n for n in varying(figs) if n not in ("benchmark", "bytes", "mode", "np", "benchmarks")]
    return {id(f): ", ".join(f"{n}={f.params.get(n)}" for n in names) or "(all)" for f in figs}


def _series(records: List[dict], metric: str, mode: str, ops: Dict[str, str],
            best=max, scale=lambda v: v) -> List[Series]:
    figs = [f for f in figures(records, metric)
            if f.row.get("benchmark") in ops and f.row.get("mode", mode) == mode
            and f.row.get("bytes") is not None]
    labels = _config_labels(figs)
    out: Dict[Tuple[str, str], Series] = {}
    for f in figs:
        key = (labels[id(f)], ops[f.row["benchmark"]])
        series = out.setdefault(key, Series(key[0], key[1], {}, len(f.samples)))
        series.points[int(f.row["bytes"])] = scale(best(f.samples))
        series.runs = min(series.runs, len(f.samples))
    return sorted(out.values(), key=lambda s: (s.config, s.op))


def bandwidth(records: List[dict]) -> List[Series]:
    """Max-over-runs flood bandwidth in GiB/s per configuration and operation."""
    rma = _series(records, "mbytes_per_s", "aggregate", RMA, max, mbytes_to_gib)
    mp = _series(records, "mbytes_per_s", "aggregate", MESSAGE_PASSING, max, mbytes_to_gib)
    return rma + mp


def latency(records: List[dict]) -> List[Series]:
    """Min-over-runs latency in microseconds per configuration and RMA operation."""
    return _series(records, "t_us", "non-aggregate", RMA, min)


def plot_bandwidth(series: List[Series], path: Path) -> Path:
    blues, reds, greens = plt.get_cmap("Blues"), plt.get_cmap("Reds"), plt.get_cmap("Greens")
    configs = sorted({s.config for s in series})
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for s in series:
        shade = 0.55 + 0.4 * configs.index(s.config) / max(1, len(configs) - 1)
        if s.op == "Put":
            style = dict(color=blues(shade), linestyle="-", marker="o")
        elif s.op == "Get":
            style = dict(color=reds(shade), linestyle="-.", marker="o")
        else:
            style = dict(color=greens(shade), linestyle="--", marker="+")
        sizes = sorted(b for b in s.points if b > 0)
        ax.plot(sizes, [s.points[b] for b in sizes], markersize=4, linewidth=1.2,
                label=f"MPI {s.op} ({s.config})", **style)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("transfer size [bytes]")
    ax.set_ylabel("bandwidth [GiB/s] (max over runs)")
    runs = min(s.runs for s in series)
    ax.set_title(f"Uni-directional flood bandwidth vs transfer size ({runs} runs)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def latency_table(series: List[Series], size: int = LATENCY_BYTES) -> List[str]:
    configs = sorted({s.config for s in series})
    by = {(s.config, s.op): s for s in series}
    base = configs[0]
    lines = [f"| configuration | {size}-byte RMA Put latency | ratio | {size}-byte RMA Get "
             "latency | ratio |", "|---|---:|---:|---:|---:|"]
    for config in configs:
        cells = []
        for op in ("Put", "Get"):
            value = _at(by.get((config, op)), size)
            ref = _at(by.get((base, op)), size)
            cells += [f"{value:.2f} μs" if value is not None else "n/a",
                      f"{value / ref:.2f}" if value is not None and ref else "n/a"]
        lines.append(f"| {config} | " + " | ".join(cells) + " |")
    return lines


def _at(series: Optional[Series], size: int) -> Optional[float]:
    return series.points.get(size) if series else None


def ratio_ranges(series: List[Series]) -> List[str]:
    """Per configuration and op: the range of the latency ratio to the baseline over 4..1024 B."""
    configs = sorted({s.config for s in series})
    by = {(s.config, s.op): s for s in series}
    out = []
    for config in configs[1:]:
        for op in ("Put", "Get"):
            mine, base = by.get((config, op)), by.get((configs[0], op))
            if not mine or not base:
                continue
            ratios = [mine.points[b] / base.points[b] for b in sorted(mine.points)
                      if RATIO_SIZES[0] <= b <= RATIO_SIZES[1] and base.points.get(b)]
            if ratios:
                out.append(f"- {op}, {config}: ratio {min(ratios):.2f}..{max(ratios):.2f} over "
                           f"{RATIO_SIZES[0]}..{RATIO_SIZES[1]} bytes")
    return out


def saturation(series: List[Series]) -> List[str]:
    lines = ["| configuration | operation | max [GiB/s] | at [bytes] | 90 % of max from [bytes] |",
             "|---|---|---:|---:|---:|"]
    for s in series:
        sizes = sorted(b for b in s.points if b > 0)
        if not sizes:
            continue
        peak = max(s.points[b] for b in sizes)
        at = next(b for b in sizes if s.points[b] == peak)
        first = next(b for b in sizes if s.points[b] >= 0.9 * peak)
        lines.append(f"| {s.config} | {s.op} | {peak:.3f} | {at} | {first} |")
    return lines


def gasnet_section(records: List[dict], out_dir: Path) -> Tuple[List[str], List[Path]]:
    """Markdown lines and PNGs when the campaign has IMB-RMA Unidir (or Uniband) results."""
    bw = bandwidth(records)
    if not bw:
        return [], []
    png = plot_bandwidth(bw, out_dir / "gasnet_flood_bandwidth.png")
    runs = min(s.runs for s in bw)
    lines = ["", "## RMA performance (GASNet-EX paper style)", "",
             f"Uni-directional flood bandwidth from IMB \"Aggregate\" timings, MB/s converted to "
             f"GiB/s (2^30 B/s); each point the maximum over {runs} runs.", "",
             f"![flood bandwidth]({png.name})", ""] + saturation(bw)
    lat = latency(records)
    if lat:
        lines += ["", f"Round-trip latency of {LATENCY_BYTES}-byte RMA accesses (\"Non-aggregate\" "
                  f"timings, minimum over {min(s.runs for s in lat)} runs); ratio: configuration "
                  f"/ {sorted({s.config for s in lat})[0]}.", ""] + latency_table(lat)
        ranges = ratio_ranges(lat)
        if ranges:
            lines += [""] + ranges
    return lines, [png]
