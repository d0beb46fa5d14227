"""Plots in the style of the OCI Open MPI collective tuning study (BM.Optimized3.36).

The study tunes step by step; each step plots time vs message size with one line per value of
the parameter it sweeps while the others stay fixed, and the last plot compares the tuned
configuration with the default one. File names follow its scheme
``{coll}_{NN}_{PP}_{suffix}.png`` (``ata``/``aga``/``are``, nodes and processes per node
zero-padded; ``research/oci_tuning_images.csv`` decodes the study's own files).

Here, per case (benchmark, nodes, ranks per node, at the full job size):

* step k sweeps the k-th axis that varies (matrix order; a ``zip`` group is one axis). With
  few combinations of the other axes there is one plot per combination,
  ``{case}_step{k}_{tokens}.png`` (tokens as in the study: ``bl``/``cy`` mapping, ``no``/``uc``/
  ``hc`` component, ``all``/``rc``/``ud``/``dc`` UCX_TLS, else ``<name><value>``); with many,
  one plot with the others at their tuned values, ``{case}_step{k}.png``;
* ``{case}_step{K+1}.png``: tuned vs default, with the ratio default/tuned below.

"Tuned" is the configuration with the best geometric mean over the message sizes every
configuration has (the study judged by eye). "Default" is the configuration in which every
varying parameter has its default value: ``auto``, ``default`` or empty (the variable is set
empty, which the MPI libraries read as unset), the study's defaults (UCX_TLS=all, UCX_RNDV_THRESH
and UCX_ZCOPY_THRESH auto, coll_hcoll_enable 1, coll_ucc_enable 0), ``I_MPI_ADJUST_*=0``
(Intel MPI's own choice), or what ``--default NAME=VALUE`` says. An axis none of whose values is
a default (mapping: the launcher's default is neither block nor cyclic) is held at its tuned
value.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from commstack.report.tables import units  # noqa: E402

COLLECTIVES = {"Alltoall": "ata", "Allgather": "aga", "Allreduce": "are"}
KNOWN_DEFAULTS: Dict[str, Any] = {"UCX_TLS": "all", "UCX_RNDV_THRESH": "auto",
                                  "UCX_ZCOPY_THRESH": "auto", "mca.coll_hcoll_enable": 1,
                                  "mca.coll_ucc_enable": 0}
DEFAULT_WORDS = {"", "auto", "default"}
DEFAULT_BY_PREFIX = {"I_MPI_ADJUST_": "0"}  # algorithm 0: Intel MPI's own choice
TOKENS = {("mapping", "block"): "bl", ("mapping", "cyclic"): "cy", ("UCX_TLS", "all"): "all",
          ("UCX_TLS", "self,sm,rc"): "rc", ("UCX_TLS", "self,sm,ud"): "ud",
          ("UCX_TLS", "self,sm,dc"): "dc"}
COMPONENTS = {("0", "0"): "no", ("0", "1"): "uc", ("1", "0"): "hc"}
COMPONENT_AXIS = ("mca.coll_hcoll_enable", "mca.coll_ucc_enable")
MAX_COMBINATIONS = 6  # per step; beyond that the other axes are held at their tuned values
# Summary columns that are not parameters.
_NOT_PARAMS = {"point_id", "metric", "lower_is_better", "n", "trimmed_mean", "median", "min",
               "max", "benchmark", "np", "groups", "mode", "group", "bytes", "threads"}

Values = Tuple[str, ...]  # an axis value: one string per parameter of the axis


@dataclass
class Axis:
    names: Tuple[str, ...]
    order: List[Values] = field(default_factory=list)  # values in matrix order

    def label(self) -> str:
        return "+".join(self.names)


@dataclass
class Curve:
    """One configuration of a case: its parameter values and time (or bandwidth) per size."""

    point_id: str
    params: Dict[str, Any]
    values: Dict[int, float]

    def at(self, axis: Axis) -> Values:
        return tuple(str(self.params.get(n, "")) for n in axis.names)


@dataclass
class Case:
    benchmark: str
    nodes: int
    ppn: int
    np: int
    metric: str
    lower_is_better: bool
    curves: List[Curve]
    axes: List[Axis] = field(default_factory=list)  # the axes that vary in this case

    @property
    def prefix(self) -> str:
        coll = COLLECTIVES.get(self.benchmark, self.benchmark.lower())
        return f"{coll}_{self.nodes:02d}_{self.ppn:02d}"

    @property
    def title(self) -> str:
        return f"{self.benchmark} {self.nodes} node {self.ppn} ppn"


@dataclass
class StudyPlot:
    """One written plot, described like a row of ``oci_tuning_images.csv``."""

    file: str
    case: Case
    stage: str
    plot_kind: str
    series_varied: str
    fixed_params: str


# --- cases --------------------------------------------------------------------------------------


def matrix_axes(matrix: Optional[dict]) -> List[Axis]:
    """The sweep axes of a matrix (parsed YAML): each product key, each zip group."""
    if not matrix:
        return []
    axes = [Axis((name,), [(str(v),) for v in values])
            for name, values in (matrix.get("product") or {}).items()]
    for group in matrix.get("zip") or []:
        names = tuple(group)
        axes.append(Axis(names, [tuple(str(v) for v in items)
                                 for items in zip(*group.values())]))
    return axes


def cases(summary: List[Dict[str, Any]], axes: Sequence[Axis]) -> List[Case]:
    """Cases (collectives) with at least one varying axis, at the full job size."""
    groups: Dict[Tuple, Dict[str, Curve]] = {}
    meta: Dict[Tuple, Tuple[str, bool]] = {}
    for row in summary:
        # The study's collectives: IMB reports them as t_avg (PingPong, RMA: t, bandwidth).
        if row.get("metric") != "t_avg_us" or row.get("bytes") is None or _nan(row.get("bytes")):
            continue
        params = {k: v for k, v in row.items() if k not in _NOT_PARAMS and not _nan(v)}
        nodes = int(params.get("nodes", 1))
        ppn = int(params.get("ranks_per_node", row.get("np") or 1))
        key = (row["benchmark"], nodes, ppn, int(row.get("np") or nodes * ppn))
        curve = groups.setdefault(key, {}).setdefault(
            row["point_id"], Curve(row["point_id"], params, {}))
        curve.values[int(row["bytes"])] = float(row["trimmed_mean"])
        meta[key] = (row["metric"], bool(row["lower_is_better"]))
    full = {}
    for key in groups:  # the study runs at the full job size only (-npmin = all processes)
        bench, nodes, ppn, np = key
        largest = max(k[3] for k in groups if k[:3] == key[:3])
        if np == largest:
            full[key] = groups[key]
    out = []
    for (bench, nodes, ppn, np), curves in sorted(full.items()):
        case = Case(bench, nodes, ppn, np, *meta[(bench, nodes, ppn, np)], list(curves.values()))
        case.axes = _varying_axes(case.curves, axes)
        if case.axes:
            out.append(case)
    return out


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _varying_axes(curves: List[Curve], axes: Sequence[Axis]) -> List[Axis]:
    covered = {n for a in axes for n in a.names}
    names: List[str] = []
    for c in curves:
        names += [k for k in c.params if k not in names and k not in covered]
    extra = [Axis((n,), sorted({(str(c.params.get(n, "")),) for c in curves})) for n in names]
    return [a for a in list(axes) + extra if len({c.at(a) for c in curves}) > 1]


# --- choices ------------------------------------------------------------------------------------


def common_sizes(curves: List[Curve]) -> List[int]:
    sizes = set.intersection(*(set(c.values) for c in curves)) if curves else set()
    return sorted(s for s in sizes if s > 0)


def score(curve: Curve, sizes: List[int], lower_is_better: bool) -> float:
    """Geometric mean over ``sizes``, oriented so that lower is better."""
    logs = [math.log(curve.values[s]) for s in sizes if curve.values[s] > 0]
    if not logs:
        return math.inf
    mean = sum(logs) / len(logs)
    return mean if lower_is_better else -mean


def is_default(name: str, value: Any, defaults: Dict[str, str]) -> bool:
    if name in defaults:
        return str(value) == str(defaults[name])
    if name in KNOWN_DEFAULTS:
        return str(value) == str(KNOWN_DEFAULTS[name])
    if any(name.startswith(p) and str(value) == v for p, v in DEFAULT_BY_PREFIX.items()):
        return True
    return str(value).strip().lower() in DEFAULT_WORDS


def default_curve(case: Case, defaults: Dict[str, str]) -> Optional[Curve]:
    """The configuration with every defaultable axis at its default. An axis none of whose
    values is a default (mapping block/cyclic: the launcher's default is neither) is held at
    its tuned value, so the comparison shows what the defaultable knobs bring."""
    def at_default(curve: Curve, axis: Axis) -> bool:
        return all(is_default(n, curve.params.get(n, ""), defaults) for n in axis.names)

    constrained = [a for a in case.axes if any(at_default(c, a) for c in case.curves)]
    if not constrained:
        return None
    free = [a for a in case.axes if a not in constrained]
    tuned = tuned_curve(case)
    found = [c for c in case.curves if all(at_default(c, a) for a in constrained)
             and all(c.at(a) == tuned.at(a) for a in free)]
    return found[0] if len(found) == 1 else None


def tuned_curve(case: Case) -> Curve:
    sizes = common_sizes(case.curves)
    return min(case.curves, key=lambda c: (score(c, sizes, case.lower_is_better), c.point_id))


def speedup(tuned: Curve, default: Curve, case: Case) -> float:
    """Geometric-mean factor by which tuned beats default (> 1: tuned is better)."""
    sizes = common_sizes([tuned, default])
    return math.exp(score(default, sizes, case.lower_is_better)
                    - score(tuned, sizes, case.lower_is_better))


# --- names --------------------------------------------------------------------------------------


def token(axis: Axis, value: Values) -> str:
    if axis.names == COMPONENT_AXIS and value in COMPONENTS:
        return COMPONENTS[value]
    parts = []
    for name, v in zip(axis.names, value):
        if (name, v) in TOKENS:
            parts.append(TOKENS[(name, v)])
            continue
        short = name.lower()
        for prefix in ("mca.coll_", "mca.", "ucx_", "i_mpi_", "env."):
            short = short[len(prefix):] if short.startswith(prefix) else short
        parts.append(_slug(short) + (_slug(v) or "unset"))
    return "-".join(parts)


def _slug(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def _show(axis: Axis, value: Values, defaults: Dict[str, str]) -> str:
    text = ", ".join(f"{n}={v}" if v != "" else f"{n} unset" for n, v in zip(axis.names, value))
    if all(is_default(n, v, defaults) for n, v in zip(axis.names, value)):
        text += " (default)"
    return text


# --- plots --------------------------------------------------------------------------------------


def _ordered(axis: Axis, seen: set) -> List[Values]:
    return [v for v in axis.order if v in seen] + sorted(seen - set(axis.order))


def _draw(ax, curves: List[Tuple[str, Curve]], case: Case) -> None:
    for label, curve in curves:
        sizes = sorted(s for s in curve.values if s > 0)
        ax.plot(sizes, [curve.values[s] for s in sizes], marker="o", markersize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel(units(case.metric))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def step_plots(case: Case, out_dir: Path, defaults: Dict[str, str]) -> List[StudyPlot]:
    plots: List[StudyPlot] = []
    tuned = tuned_curve(case)
    for k, axis in enumerate(case.axes, start=1):
        others = [a for a in case.axes if a is not axis]
        combos = sorted({tuple(c.at(a) for a in others) for c in case.curves})
        at_tuned = len(combos) > MAX_COMBINATIONS
        if at_tuned:
            combos = [tuple(tuned.at(a) for a in others)]
        for combo in combos:
            chosen = [c for c in case.curves if tuple(c.at(a) for a in others) == combo]
            by_value = {c.at(axis): c for c in chosen}
            if len(by_value) < 2:
                continue
            fixed = ", ".join(_show(a, v, {}).replace(" (default)", "")
                              for a, v in zip(others, combo))
            suffix = "" if at_tuned or not others else "_" + "_".join(
                token(a, v) for a, v in zip(others, combo))
            name = f"{case.prefix}_step{k}{suffix}.png"
            fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
            _draw(ax, [(_show(axis, v, defaults), by_value[v])
                       for v in _ordered(axis, set(by_value))], case)
            ax.set_xlabel("message size [bytes]")
            ax.set_title(f"{case.title} step{k}: {axis.label()}"
                         + (f"\n{fixed}" if fixed else ""), fontsize=9)
            _save(fig, out_dir / name)
            plots.append(StudyPlot(name, case, f"step{k}", "sweep_at_tuned" if at_tuned
                                   else "sweep", f"{axis.label()} in "
                                   f"{{{'; '.join(','.join(v) for v in _ordered(axis, set(by_value)))}}}",
                                   fixed))
    return plots


def tuned_vs_default_plot(case: Case, out_dir: Path, defaults: Dict[str, str]
                          ) -> Optional[StudyPlot]:
    default = default_curve(case, defaults)
    if default is None:
        return None
    tuned = tuned_curve(case)
    name = f"{case.prefix}_step{len(case.axes) + 1}.png"
    describe = {id(c): "; ".join(_show(a, c.at(a), defaults).replace(" (default)", "")
                                 for a in case.axes) for c in (tuned, default)}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), dpi=110, sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
    _draw(top, [(f"tuned: {describe[id(tuned)]}", tuned),
                (f"default: {describe[id(default)]}", default)], case)
    top.set_title(f"{case.title}: tuned vs default "
                  f"(geometric-mean speedup {speedup(tuned, default, case):.2f}x)", fontsize=9)
    sizes = common_sizes([tuned, default])
    ratio = [default.values[s] / tuned.values[s] if case.lower_is_better
             else tuned.values[s] / default.values[s] for s in sizes]
    bottom.plot(sizes, ratio, marker="o", markersize=3, color="tab:gray")
    bottom.axhline(1.0, color="black", linewidth=0.8)
    bottom.set_xscale("log", base=2)
    bottom.set_yscale("log")
    bottom.set_ylabel("default / tuned", fontsize=8)
    bottom.set_xlabel("message size [bytes]")
    bottom.grid(True, which="both", alpha=0.3)
    _save(fig, out_dir / name)
    return StudyPlot(name, case, f"step{len(case.axes) + 1}", "tuned_vs_default",
                     "tuned, default", f"tuned: {describe[id(tuned)]}; "
                     f"default: {describe[id(default)]}")


# --- report section -----------------------------------------------------------------------------


def images_csv(plots: List[StudyPlot]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["file", "collective", "nodes", "ppn", "total_procs", "stage", "plot_kind",
                     "series_varied", "fixed_params"])
    for p in plots:
        writer.writerow([p.file, p.case.benchmark.lower(), p.case.nodes, p.case.ppn, p.case.np,
                         p.stage, p.plot_kind, p.series_varied, p.fixed_params])
    return buf.getvalue()


def oracle_section(summary: List[Dict[str, Any]], axes: Sequence[Axis], out_dir: Path,
                   defaults: Optional[Dict[str, str]] = None) -> Tuple[List[str], List[StudyPlot]]:
    """Markdown lines and the plots written, for every case with a varying parameter."""
    defaults = defaults or {}
    found = cases(summary, axes)
    if not found:
        return [], []
    lines = ["", "## Tuning steps (OCI tuning-study style)", "",
             "Per case: one plot per step (the swept parameter's values as lines, the other "
             "parameters fixed), then tuned vs default. Tuned: best geometric mean over message "
             "sizes. File names as in the study (`{coll}_{nodes}_{ppn}_{step}`); "
             "`oracle_images.csv` describes every plot.", ""]
    plots: List[StudyPlot] = []
    for case in found:
        case_plots = step_plots(case, out_dir, defaults)
        final = tuned_vs_default_plot(case, out_dir, defaults)
        tuned, default = tuned_curve(case), default_curve(case, defaults)
        lines += [f"### {case.title} ({case.np} processes, {units(case.metric)})", "",
                  "| step | parameter | tuned | default |", "|---|---|---|---|"]
        for k, axis in enumerate(case.axes, start=1):
            held = default is not None and not all(
                is_default(n, v, defaults) for n, v in zip(axis.names, default.at(axis)))
            shown = (", ".join(default.at(axis)) or "unset") if default else "?"
            lines.append(f"| {k} | {axis.label()} | {', '.join(tuned.at(axis)) or 'unset'} | "
                         f"{shown}{' (no default value swept: as tuned)' if held else ''} |")
        lines.append("")
        if final:
            lines.append(f"Tuned vs default: geometric-mean speedup "
                         f"{speedup(tuned, default, case):.2f}x over "
                         f"{len(common_sizes([tuned, default]))} message sizes.")
        else:
            lines.append("No default configuration among the points (every varying parameter "
                         "at `auto`/`default`/unset or its known default; or pass `commstack "
                         "report --default NAME=VALUE`): no tuned-vs-default plot.")
        lines.append("")
        lines += [f"![{p.file}]({p.file})" for p in case_plots + ([final] if final else [])]
        lines.append("")
        plots += case_plots + ([final] if final else [])
    return lines, plots
