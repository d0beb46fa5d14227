"""Plots and tables in the style of Hargrove & Bonachea, "GASNet-EX RMA Communication
Performance on Recent Supercomputing Systems" (LBNL, 2022).

* Fig. 2: uni-directional flood bandwidth vs transfer size: GASNet-EX ``testlarge``
  (``PutNBI+DEFER``/``GetNBI``, MiB/s), MPI RMA from the "Aggregate" timings of IMB-RMA
  ``Unidir_put``/``Unidir_get`` and message passing from IMB-MPI1 ``Uniband`` (MB/s), all
  converted to GiB/s (2^30 B/s); log x, linear y; Put blues, Get reds, message passing greens;
  ``s`` markers and solid lines for GASNet-EX, ``o`` for MPI RMA (Get dash-dot), ``+`` and dashes
  for message passing. Each point is the maximum over the repeated runs (the paper: over 16
  batch jobs).
* Table 1: round-trip latency of 8-byte RMA Put and Get: GASNet-EX ``testsmall``
  (``PutBlocking``/``GetBlocking``) and IMB-RMA's "Non-aggregate" timings; the minimum over the
  repeated runs; with the ratio to the first GASNet-EX configuration (the paper: MPI RMA /
  GASNet-EX), or to the first configuration when there is no GASNet-EX run.

Beside each of the paper's numbers (a maximum or minimum over the runs) stands what every
number of commstack shows, the runs' median with its 95 % interval and count
(:func:`commstack.report.numbers.interval_cell`), and after the number the markers of unclean
runs (``⚠ov``, ``⚠sub``).

Configurations are what varies between the points (stack, fabric, ...); a configuration of
simulated runs (:mod:`commstack.simulated`) says ``(simulated)`` after its name, in the tables
and the plot's legend, and is drawn dotted. The paper's figure puts
three benchmarks side by side: run each as its own campaign and report them together
(``commstack report GASNET_CAMPAIGN --with RMA_CAMPAIGN --with UNIBAND_CAMPAIGN``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from commstack import stats
from commstack.benchmarks.registry import BENCHMARKS
from commstack.figures import Figure, figures, varying
from commstack.markdown_table import table
from commstack.report.drawing import pyplot
from commstack.report.numbers import interval_cell, reading_notes, unclean_markers
from commstack.report.studies.base import Context, Study
from commstack.simulated import MARK, marked, unmarked
from commstack.store.record import Record

GIB = 2 ** 30
MPI, GASNET = "MPI", "GASNet-EX"
RMA = {"Unidir_put": "Put", "Unidir_get": "Get"}
MESSAGE_PASSING = {"Uniband": "Isend/Irecv"}
GASNET_BANDWIDTH = {"PutNBI+DEFER": "Put", "GetNBI": "Get"}  # testlarge section B
GASNET_LATENCY = {"PutBlocking": "Put", "GetBlocking": "Get"}  # testsmall section A
# Parameters that say how a benchmark runs, not which configuration it measures.
_OPTIONS = {name for b in BENCHMARKS.values() for name in b.options} | {"executable"}
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
    library: str = MPI  # MPI or GASNet-EX
    ranges: Dict[int, Tuple[float, float]] = field(default_factory=dict)  # bytes -> min, max
    centers: Dict[int, stats.Center] = field(default_factory=dict)  # bytes -> the runs' median
    markers: Dict[int, Tuple[str, ...]] = field(default_factory=dict)  # bytes -> ⚠ov, ⚠sub
    samples: Dict[int, Tuple[float, ...]] = field(default_factory=dict)  # bytes -> runs

    @property
    def simulated(self) -> bool:
        return self.config.endswith(" " + MARK)

    @property
    def label(self) -> str:
        return marked(f"{self.library} {self.op} ({unmarked(self.config)})", self.simulated)


def _config_labels(figs: List[Figure]) -> Dict[int, str]:
    names = [n for n in varying(figs) if n not in ("benchmark", "bytes", "mode", "np", "node",
                                                    "benchmarks") and n not in _OPTIONS]
    return {id(f): marked(", ".join(f"{n}={f.params[n]}" for n in names
                                    if f.params.get(n) is not None) or "(all)", f.simulation)
            for f in figs}


def _series(records: List[Record], metric: str, mode: str, ops: Dict[str, Tuple[str, str]],
            best=max, scale=lambda v: v, rate: bool = False) -> List[Series]:
    """ops: row benchmark -> (library, operation). GASNet-EX rows: node 0, the first initiator.
    ``rate``: the metric is a rate (its median of an even count: harmonic)."""
    figs = [f for f in figures(records, metric)
            if f.row.get("benchmark") in ops and f.row.get("mode", mode) == mode
            and f.row.get("bytes") is not None and f.row.get("node", 0) == 0]
    labels = _config_labels(figs)
    out: Dict[Tuple[str, str, str], Series] = {}
    for f in figs:
        library, op = ops[f.row["benchmark"]]
        key = (library, labels[id(f)], op)
        series = out.setdefault(key, Series(key[1], op, {}, len(f.samples), library))
        series.points[int(f.row["bytes"])] = scale(best(f.samples))
        series.ranges[int(f.row["bytes"])] = (scale(min(f.samples)), scale(max(f.samples)))
        scaled = tuple(scale(v) for v in f.samples)
        series.samples[int(f.row["bytes"])] = scaled
        series.centers[int(f.row["bytes"])] = stats.describe(scaled, rate)
        series.markers[int(f.row["bytes"])] = tuple(unclean_markers(f.oversubscribed, f.subrun))
        series.runs = min(series.runs, len(f.samples))
    return sorted(out.values(), key=lambda s: (s.library != GASNET, s.config, s.op))


def _ops(library: str, names: Dict[str, str]) -> Dict[str, Tuple[str, str]]:
    return {name: (library, op) for name, op in names.items()}


def bandwidth(records: List[Record]) -> List[Series]:
    """Max-over-runs flood bandwidth in GiB/s per library, configuration and operation."""
    ops = {**_ops(GASNET, GASNET_BANDWIDTH), **_ops(MPI, RMA)}
    rma = _series(records, "mbytes_per_s", "aggregate", ops, max, mbytes_to_gib, rate=True)
    mp = _series(records, "mbytes_per_s", "aggregate", _ops(MPI, MESSAGE_PASSING), max,
                 mbytes_to_gib, rate=True)
    return rma + mp


def latency(records: List[Record]) -> List[Series]:
    """Min-over-runs latency in microseconds per library, configuration and RMA operation."""
    ops = {**_ops(GASNET, GASNET_LATENCY), **_ops(MPI, RMA)}
    return _series(records, "t_us", "non-aggregate", ops, min)


def plot_bandwidth(series: List[Series], path: Path) -> Path:
    from matplotlib.ticker import FuncFormatter

    from commstack.log_axes import BAND_ALPHA, size_label

    plt = pyplot()
    blues, reds, greens = plt.get_cmap("Blues"), plt.get_cmap("Reds"), plt.get_cmap("Greens")
    configs = sorted({s.config for s in series})
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for s in series:
        shade = 0.55 + 0.4 * configs.index(s.config) / max(1, len(configs) - 1)
        if s.library == GASNET:
            colours = blues if s.op == "Put" else reds
            style = dict(color=colours(min(1.0, shade + 0.1)), linestyle="-", marker="s")
        elif s.op == "Put":
            style = dict(color=blues(shade), linestyle="-", marker="o")
        elif s.op == "Get":
            style = dict(color=reds(shade), linestyle="-.", marker="o")
        else:
            style = dict(color=greens(shade), linestyle="--", marker="+")
        if s.simulated:
            style["linestyle"] = ":"
        sizes = sorted(b for b in s.points if b > 0)
        ax.plot(sizes, [s.points[b] for b in sizes], markersize=4, linewidth=1.2,
                label=s.label, **style)
        ax.fill_between(sizes, [s.ranges[b][0] for b in sizes], [s.ranges[b][1] for b in sizes],
                        color=style["color"], alpha=BAND_ALPHA, linewidth=0)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel("transfer size [bytes; K = 1024]")
    ax.set_ylabel("bandwidth [GiB/s] (max over runs)")
    runs = min(s.runs for s in series)
    ax.set_title(f"Uni-directional flood bandwidth vs transfer size ({runs} runs)\n"
                 "line: max over the runs; band: min–max of the runs", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _configurations(series: List[Series]) -> List[Tuple[str, str]]:
    """(library, config) pairs, GASNet-EX first: the first one is the ratios' baseline."""
    return sorted({(s.library, s.config) for s in series}, key=lambda lc: (lc[0] != GASNET, lc[1]))


def _name(library: str, config: str, series: List[Series]) -> str:
    return f"{library}: {config}" if any(s.library == GASNET for s in series) else config


def baseline_name(series: List[Series]) -> str:
    return _name(*_configurations(series)[0], series)


RUNS = "runs: median [95 % interval] (n)"


def latency_table(series: List[Series], size: int = LATENCY_BYTES) -> List[str]:
    configs = _configurations(series)
    by = {(s.library, s.config, s.op): s for s in series}
    base = configs[0]
    rows: List[List[str]] = []
    for library, config in configs:
        cells = []
        for op in ("Put", "Get"):
            mine = by.get((library, config, op))
            value = _at(mine, size)
            ref = _at(by.get((*base, op)), size)
            marks = list(mine.markers.get(size, ())) if mine else []
            cells += [" ".join([f"{_microseconds(value)} μs", *marks]) if value is not None
                      else "n/a",
                      _runs(mine, size, _microseconds),
                      f"{value / ref:.2f}" if value is not None and ref else "n/a",
                      _medians_ratio(by.get((*base, op)), mine, size)]
        rows.append([_name(library, config, series), *cells])
    return table(["configuration", f"{size}-byte RMA Put latency", f"{RUNS} [μs]", "ratio",
                  MEDIANS_RATIO, f"{size}-byte RMA Get latency", f"{RUNS} [μs]", "ratio",
                  MEDIANS_RATIO], rows, align="lrrrrrrrr")


MEDIANS_RATIO = "ratio of the runs' medians [95 % interval]"


def _medians_ratio(base: Optional[Series], mine: Optional[Series], size: int) -> str:
    """The runs' medians' ratio to the baseline's, with its bootstrap interval (the statistics
    module's, as compare's) where both sides have enough runs for an interval of their own
    median; the paper's ratio of minima beside it has none."""
    if base is None or mine is None or size not in base.samples or size not in mine.samples:
        return "n/a"
    a, b = base.samples[size], mine.samples[size]
    both = base.centers[size].has_interval and mine.centers[size].has_interval
    shift = stats.shift(a, b, lower_is_better=True, interval=both)
    if not math.isfinite(shift.ratio):
        return "n/a"
    bounded = both and math.isfinite(shift.low) and math.isfinite(shift.high)
    return interval_cell(f"{shift.ratio:.2f}", f"{shift.low:.2f}" if bounded else None,
                         f"{shift.high:.2f}" if bounded else None, None)


def _runs(series: Optional[Series], size: int, fmt: Callable[[float], str]) -> str:
    """``0.41 [0.37–0.52] (16)``: the runs' median with its interval and count, beside the
    paper's maximum or minimum over the same runs."""
    if series is None or size not in series.centers:
        return "n/a"
    c = series.centers[size]
    return interval_cell(fmt(c.median), fmt(c.low) if c.has_interval else None,
                         fmt(c.high) if c.has_interval else None, c.n)


def notes(cells: Sequence[Tuple[Series, int]]) -> List[str]:
    """How the runs' cells of a table (each a series at a size) read: the interval, the cells
    without one, the markers present."""
    centers = [s.centers[b] for s, b in cells if b in s.centers]
    marks = {m for s, b in cells for m in s.markers.get(b, ())}
    return reading_notes(len(centers), sum(not c.has_interval for c in centers), marks, "runs")


def _microseconds(value: float) -> str:
    """Two decimals as the paper prints; below 0.1 μs (shared memory) two significant digits."""
    return f"{value:.2f}" if value >= 0.1 or value == 0 else f"{value:.2g}"


def _at(series: Optional[Series], size: int) -> Optional[float]:
    return series.points.get(size) if series else None


def ratio_ranges(series: List[Series]) -> List[str]:
    """Per configuration and op: the range of the latency ratio to the baseline over 4..1024 B."""
    configs = _configurations(series)
    by = {(s.library, s.config, s.op): s for s in series}
    out = []
    for library, config in configs[1:]:
        for op in ("Put", "Get"):
            mine, base = by.get((library, config, op)), by.get((*configs[0], op))
            if not mine or not base:
                continue
            ratios = [mine.points[b] / base.points[b] for b in sorted(mine.points)
                      if RATIO_SIZES[0] <= b <= RATIO_SIZES[1] and base.points.get(b)]
            if ratios:
                out.append(f"- {op}, {_name(library, config, series)}: ratio "
                           f"{min(ratios):.2f}..{max(ratios):.2f} over "
                           f"{RATIO_SIZES[0]}..{RATIO_SIZES[1]} bytes")
    return out


def _gib(value: float) -> str:
    return f"{value:.3f}"


def _peak(series: Series) -> Optional[int]:
    """The smallest size at which the series reaches its maximum (None: no size above 0)."""
    sizes = sorted(b for b in series.points if b > 0)
    if not sizes:
        return None
    peak = max(series.points[b] for b in sizes)
    return next(b for b in sizes if series.points[b] == peak)


def saturation(series: List[Series]) -> List[str]:
    rows: List[List[object]] = []
    gasnet = any(s.library == GASNET for s in series)
    for s in series:
        at = _peak(s)
        if at is None:
            continue
        peak = s.points[at]
        first = next(b for b in sorted(s.points) if b > 0 and s.points[b] >= 0.9 * peak)
        op = f"{s.library} {s.op}" if gasnet else s.op
        rows.append([s.config, op, " ".join([_gib(peak), *s.markers.get(at, ())]), at,
                     _runs(s, at, _gib), first])
    return table(["configuration", "operation", "max [GiB/s]", "at [bytes]",
                  f"{RUNS} at that size [GiB/s]", "90 % of max from [bytes]"], rows,
                 align="llrrrr")


def gasnet_section(records: List[Record], out_dir: Path) -> Tuple[List[str], List[Path]]:
    """Markdown lines and PNGs when the records have GASNet-EX testlarge/testsmall, IMB-RMA
    Unidir or IMB-MPI1 Uniband results."""
    bw = bandwidth(records)
    lat = latency(records)
    if not bw and not lat:
        return [], []
    lines = ["", "## RMA performance (GASNet-EX paper style)", ""]
    pngs: List[Path] = []
    if bw:
        png = plot_bandwidth(bw, out_dir / "gasnet_flood_bandwidth.png")
        pngs.append(png)
        lines += [f"Uni-directional flood bandwidth (GASNet-EX testlarge MiB/s, IMB \"Aggregate\" "
                  f"timings MB/s) in GiB/s (2^30 B/s); each point the maximum over "
                  f"{min(s.runs for s in bw)} runs, as the paper (the plot's band: their "
                  "range); in the table beside the maximum, the runs' median at that size.", "",
                  f"![flood bandwidth]({png.name})", ""]
        lines += saturation(bw)
        peaks = [(s, _peak(s)) for s in bw]
        lines += ["", " ".join(notes([(s, b) for s, b in peaks if b is not None]))]
    if lat:
        lines += ["", f"Round-trip latency of {LATENCY_BYTES}-byte RMA accesses (GASNet-EX "
                  f"testsmall blocking Put/Get, IMB-RMA \"Non-aggregate\" timings), minimum over "
                  f"{min(s.runs for s in lat)} runs, as the paper, with the runs' median beside "
                  f"it; ratio (of the minima): configuration / {baseline_name(lat)}. Beside it "
                  "the ratio of the runs' medians with its 95 % bootstrap interval (as "
                  "`compare` gives it; no interval where a side has too few runs for one).",
                  ""] + latency_table(lat)
        lines += ["", " ".join(notes([(s, LATENCY_BYTES) for s in lat]))]
        ranges = ratio_ranges(lat)
        if ranges:
            lines += [""] + ranges
    return lines, pngs


def _section(context: Context) -> List[str]:
    return gasnet_section(context.swept + context.joined, context.out_dir)[0]


# Row benchmarks of the paper's figure and table, and the record benchmarks that print them.
_ROWS = {*RMA, *MESSAGE_PASSING, *GASNET_BANDWIDTH, *GASNET_LATENCY}
_FAMILIES = {"gasnet-testlarge", "gasnet-testsmall", "imb-rma"}


def has_study_rows(record: Record, info: object = None) -> bool:
    """The record holds rows this study plots (any other record it never reads)."""
    return not record.imported and (record.benchmark in _FAMILIES or any(
        row.get("benchmark") in _ROWS for row in record.parsed))


def _applies(context: Context) -> bool:
    return any(r.parsed and has_study_rows(r) for r in context.swept + context.joined)


STUDY = Study("gasnet", _applies, _section, uses_joined=True, needs_rows=has_study_rows)
