"""Plots in the style of the OCI Open MPI collective tuning study (BM.Optimized3.36), for the
campaigns of a staged tuning (``commstack tune``): only those say which configuration is the
default and by which rule a candidate must beat it, so only those get this section. A plain sweep
declares no winner.

The study tunes step by step; each step plots time vs message size with one line per value of
the parameter it sweeps while the others stay fixed, and the last plot compares the tuned
configuration with the default one. File names follow its scheme
``{coll}_{NN}_{PP}_{suffix}.png`` (``ata``/``aga``/``are``, nodes and processes per node
zero-padded; ``research/oci_tuning_images.csv`` decodes the study's own files).

A tuning step's campaign (its ``campaign.json`` has ``tune``: step, index, incumbent, rule)
gives, per case (benchmark, nodes, ranks per node, at the full job size):

* ``{case}_step{k}.png`` (k: the step's place in the plan; with other varying axes, one plot per
  combination, ``{case}_step{k}_{tokens}.png``, tokens as in the study: ``bl``/``cy`` mapping,
  ``no``/``uc``/``hc`` component, ``all``/``rc``/``ud``/``dc`` UCX_TLS, else
  ``<name><value>``): every candidate, line the median, band its 95 % interval over the repeats;
* the step's verify campaign: ``{case}_step{K+1}.png``, tuned vs default with the ratio
  default/tuned below (filled markers where the difference is significant).

The choice is the tuner's rule (:mod:`commstack.tune.decide`): a candidate replaces the default
only when corrected rank tests find it faster beyond the threshold at some message size and
slower at none; a difference they cannot tell from noise is reported as such, never as a win.

A tuning step of simulated runs (:mod:`commstack.simulated`) says so in its heading, and every
configuration of simulated numbers (a table's candidate, default or choice, a plot's legend
entry) says ``(simulated)``; its lines are dotted.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Any, Dict, List, Optional, Sequence, Tuple

from commstack import stats
from commstack.aggregate import SUMMARY_FIELDS, aggregate
from commstack.benchmarks import registry
from commstack.markdown_table import table
from commstack.report.defaults import is_default
from commstack.report.drawing import pyplot
from commstack.report.studies.base import Context, Study
from commstack.report.tables import units
from commstack.simulated import marked, platform
from commstack.store.files import replace
from commstack.tune import decide
from commstack.tune.state import KEY, TuneState, of_campaign

COLLECTIVES = {"Alltoall": "ata", "Allgather": "aga", "Allreduce": "are"}
TOKENS = {("mapping", "block"): "bl", ("mapping", "cyclic"): "cy", ("UCX_TLS", "all"): "all",
          ("UCX_TLS", "self,sm,rc"): "rc", ("UCX_TLS", "self,sm,ud"): "ud",
          ("UCX_TLS", "self,sm,dc"): "dc", ("component", "none"): "no",
          ("component", "ucc"): "uc", ("component", "hcoll"): "hc"}
COMPONENTS = {("0", "0"): "no", ("0", "1"): "uc", ("1", "0"): "hc"}
COMPONENT_AXIS = ("mca.coll_hcoll_enable", "mca.coll_ucc_enable")
MAX_COMBINATIONS = 6  # per step; beyond that the other axes are held at the chosen values
# Summary columns that are not parameters.
_NOT_PARAMS = {*SUMMARY_FIELDS, *registry.all_row_keys()}

Values = Tuple[str, ...]  # an axis value: one string per parameter of the axis


def defaults_of(tune: TuneState) -> Dict[str, str]:
    """The incumbent's values as the records' parameters say them."""
    return {k: str(v) for k, v in tune.incumbent.items()}


def rule_text(tune: TuneState) -> str:
    return ("it is faster than the default at a message size by the tuner's rule: "
            + tune.rule.text())


@dataclass
class Axis:
    names: Tuple[str, ...]
    order: List[Values] = field(default_factory=list)  # values in matrix order

    def label(self) -> str:
        return "+".join(self.names)


@dataclass
class Curve:
    """One configuration of a case: its median per size, and the repeats behind it."""

    point_id: str
    params: Dict[str, Any]
    values: Dict[int, float]
    samples: Dict[int, List[float]] = field(default_factory=dict)
    simulated: Optional[str] = None  # the platform a simulator ran; None: measured

    def named(self, text: str) -> str:
        """``text`` (the curve's name), ``(simulated)`` after it when its numbers are."""
        return marked(text, self.simulated)

    def at(self, axis: Axis) -> Values:
        return tuple(str(self.params.get(n, "")) for n in axis.names)

    def repeats(self, size: int) -> List[float]:
        return self.samples.get(size) or [self.values[size]]

    def interval(self, size: int) -> Tuple[float, float]:
        """The 95 % interval of the median at ``size`` (the median itself without one)."""
        c = stats.describe(self.repeats(size))
        return (c.low, c.high) if c.has_interval else (self.values[size], self.values[size])


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
class Verdict:
    """The tuner's rule applied to a case: the chosen curve (in a verify campaign: the tuned
    one, whether or not it wins here) and, per message size, how it compares with the default
    by the tuner's rule."""

    chosen: Curve
    default: Curve
    changed: bool  # the rule prefers ``chosen`` to the default
    faster: List[int] = field(default_factory=list)
    slower: List[int] = field(default_factory=list)
    within: List[int] = field(default_factory=list)


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


def settings_parameters(matrix: Optional[dict]) -> AbstractSet[str]:
    """The parameters a matrix's named settings set: shown through the setting's name (e.g.
    component), never as axes of their own."""
    named = (matrix or {}).get("settings") or {}
    return {p for settings in named.values() for params in settings.values()
            for p in (params or {})}


def cases(summary: List[Dict[str, Any]], axes: Sequence[Axis],
          hidden: AbstractSet[str] = frozenset(),
          simulated: Optional[Dict[str, str]] = None) -> List[Case]:
    """Cases (collectives) with at least one varying axis, at the full job size; ``hidden``
    parameters are left out of the curves' parameters; ``simulated``: the platform of each
    simulated point."""
    groups: Dict[Tuple, Dict[str, Curve]] = {}
    meta: Dict[Tuple, Tuple[str, bool]] = {}
    for row in summary:
        # The study's collectives: IMB reports them as t_avg (PingPong, RMA: t, bandwidth).
        if row.get("metric") != "t_avg_us" or row.get("bytes") is None or _nan(row.get("bytes")):
            continue
        params = {k: v for k, v in row.items()
                  if k not in _NOT_PARAMS and k not in hidden and not _nan(v)}
        nodes = int(params.get("nodes", 1))
        ppn = int(params.get("ranks_per_node", row.get("np") or 1))
        key = (row["benchmark"], nodes, ppn, int(row.get("np") or nodes * ppn))
        curve = groups.setdefault(key, {}).setdefault(
            row["point_id"], Curve(row["point_id"], params, {},
                                   simulated=(simulated or {}).get(row["point_id"])))
        size = int(row["bytes"])
        curve.values[size] = float(row["median"])
        if row.get("samples"):
            curve.samples[size] = [float(v) for v in row["samples"]]
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


def default_curve(case: Case, defaults: Dict[str, str], held: Optional[Curve] = None
                  ) -> Optional[Curve]:
    """The configuration with every defaultable axis at its default (``defaults``: NAME ->
    value, e.g. a tuning's incumbent; otherwise the study's known defaults). An axis none of
    whose values is a default is held at ``held``'s value; None when that leaves no single
    configuration."""
    def at_default(curve: Curve, axis: Axis) -> bool:
        return all(is_default(n, curve.params.get(n, ""), defaults) for n in axis.names)

    constrained = [a for a in case.axes if any(at_default(c, a) for c in case.curves)]
    if not constrained:
        return None
    free = [a for a in case.axes if a not in constrained]
    if free and held is None:
        return None
    found = [c for c in case.curves if all(at_default(c, a) for a in constrained)
             and all(c.at(a) == held.at(a) for a in free)]
    return found[0] if len(found) == 1 else None


def judge(case: Case, default: Curve, tune: TuneState) -> Verdict:
    """The tuner's decision rule over the curves' repeats, the default as the incumbent. In a
    verify campaign the curve shown against the default is the tuned one either way."""
    data = {c.point_id: {s: c.samples.get(s) or [c.values[s]] for s in c.values}
            for c in case.curves}
    if not case.lower_is_better:  # the rule wants lower-is-better numbers
        data = {k: {s: [1 / v for v in vs if v] for s, vs in by.items()} for k, by in data.items()}
    outcome = decide.decide(data, default.point_id, tune.rule)
    chosen = next(c for c in case.curves if c.point_id == outcome.winner)
    if tune.verify and chosen is default:
        chosen = next((c for c in case.curves if c is not default), default)
    verdict = Verdict(chosen, default, outcome.changed)
    if chosen is not default:
        compare_sizes(verdict, tune, case.lower_is_better)
    return verdict


def compare_sizes(verdict: Verdict, tune: TuneState, lower_is_better: bool = True) -> None:
    """Per message size: the chosen curve faster or slower than the default by the tuner's
    rule (the sizes one family, corrected together)."""
    sizes = sorted(set(verdict.chosen.values) & set(verdict.default.values))

    def data(curve: Curve) -> Dict[int, List[float]]:
        return {s: [v if lower_is_better else 1 / v for v in curve.repeats(s) if v]
                for s in sizes}

    found = decide.compare_sizes(data(verdict.default), data(verdict.chosen), tune.rule)
    verdict.faster += found[decide.BETTER]
    verdict.slower += found[decide.WORSE]
    verdict.within += found[decide.SAME]


def verdict_text(verdict: Verdict) -> str:
    if verdict.chosen is verdict.default:
        return ("no candidate is significantly faster at any size without being slower "
                "elsewhere: the default stays")
    total = len(verdict.faster) + len(verdict.slower) + len(verdict.within)
    text = (f"faster at {len(verdict.faster)} of {total} sizes"
            + (f" ({_sizes(verdict.faster)})" if verdict.faster else "")
            + ", slower at "
            + (f"{len(verdict.slower)} ({_sizes(verdict.slower)})" if verdict.slower else "none")
            + (f", no significant difference at {len(verdict.within)}" if verdict.within else ""))
    if not verdict.changed:
        text += "; by the rule it does not beat the default here"
    return text


def _sizes(sizes: List[int]) -> str:
    if not sizes:
        return "none"
    return f"{sizes[0]} B" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]} B"


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
    if defaults and all(is_default(n, v, defaults) for n, v in zip(axis.names, value)):
        text += " (default)"
    return text


def _value(axis: Axis, value: Values) -> str:
    """An axis value for a table cell: the bare value of a one-parameter axis, else pairs."""
    if len(axis.names) == 1:
        return value[0] or "unset"
    return _show(axis, value, {})


# --- plots --------------------------------------------------------------------------------------


def _ordered(axis: Axis, seen: set) -> List[Values]:
    return [v for v in axis.order if v in seen] + sorted(seen - set(axis.order))


def _draw(ax, curves: List[Tuple[str, Curve]], case: Case) -> None:
    from commstack.log_axes import BAND_ALPHA, plain_log_axes

    shown: List[float] = []
    for label, curve in curves:
        sizes = sorted(s for s in curve.values if s > 0)
        line, = ax.plot(sizes, [curve.values[s] for s in sizes], marker="o", markersize=3,
                        label=curve.named(label), linestyle=":" if curve.simulated else "-")
        bounds = [curve.interval(s) for s in sizes]
        ax.fill_between(sizes, [b[0] for b in bounds], [b[1] for b in bounds],
                        color=line.get_color(), alpha=BAND_ALPHA, linewidth=0)
        shown += [b[0] for b in bounds] + [b[1] for b in bounds]
    plain_log_axes(ax, shown)
    ax.set_ylabel(units(case.metric))
    ax.legend(fontsize=7)


def _save(fig, path: Path) -> None:
    plt = pyplot()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def step_plots(case: Case, out_dir: Path, tune: TuneState, chosen: Curve) -> List[StudyPlot]:
    """The step's candidates, one line each (per combination of the other varying axes)."""
    plt = pyplot()
    plots: List[StudyPlot] = []
    defaults = defaults_of(tune)
    for axis in case.axes:
        others = [a for a in case.axes if a is not axis]
        combos = sorted({tuple(c.at(a) for a in others) for c in case.curves})
        at_chosen = len(combos) > MAX_COMBINATIONS
        if at_chosen:
            combos = [tuple(chosen.at(a) for a in others)]
        for combo in combos:
            picked = [c for c in case.curves if tuple(c.at(a) for a in others) == combo]
            by_value = {c.at(axis): c for c in picked}
            if len(by_value) < 2:
                continue
            fixed = ", ".join(_show(a, v, {}) for a, v in zip(others, combo))
            suffix = "" if at_chosen or not others else "_" + "_".join(
                token(a, v) for a, v in zip(others, combo))
            name = f"{case.prefix}_step{tune.index}{suffix}.png"
            fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
            _draw(ax, [(_show(axis, v, defaults), by_value[v])
                       for v in _ordered(axis, set(by_value))], case)
            ax.set_xlabel("message size [bytes; K = 1024]")
            ax.set_title(f"{case.title} step{tune.index} ({tune.step}): {axis.label()}"
                         + (f"\n{fixed}" if fixed else "")
                         + "\nline: median; band: its 95 % interval over the repeats", fontsize=9)
            _save(fig, out_dir / name)
            values = "; ".join(",".join(v) for v in _ordered(axis, set(by_value)))
            plots.append(StudyPlot(name, case, f"step{tune.index}",
                                   "sweep_at_chosen" if at_chosen else "sweep",
                                   f"{axis.label()} in {{{values}}}", fixed))
    return plots


def tuned_vs_default_plot(case: Case, verdict: Verdict, out_dir: Path, tune: TuneState
                          ) -> StudyPlot:
    from commstack.log_axes import plain_log_axes

    plt = pyplot()
    tuned, default = verdict.chosen, verdict.default
    name = f"{case.prefix}_step{tune.index}.png"
    describe = {id(c): c.named("; ".join(_show(a, c.at(a), {}) for a in case.axes))
                for c in (tuned, default)}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), dpi=110, sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1.3]})
    _draw(top, [(f"tuned: {describe[id(tuned)]}", tuned),
                (f"default: {describe[id(default)]}", default)], case)
    top.set_title(f"{case.title}: tuned vs default\n{verdict_text(verdict)}", fontsize=8)
    sizes = common_sizes([tuned, default])
    ratio = {s: (default.values[s] / tuned.values[s] if case.lower_is_better
                 else tuned.values[s] / default.values[s]) for s in sizes}
    beyond = set(verdict.faster) | set(verdict.slower)
    bottom.plot(sizes, [ratio[s] for s in sizes], color="tab:gray", linewidth=0.8)
    bottom.plot([s for s in sizes if s in beyond], [ratio[s] for s in sizes if s in beyond],
                "o", color="tab:gray", markersize=4, label="significant difference")
    bottom.plot([s for s in sizes if s not in beyond], [ratio[s] for s in sizes if s not in beyond],
                "o", markerfacecolor="white", color="tab:gray", markersize=4,
                label="no significant difference")
    bottom.axhline(1.0, color="black", linewidth=0.8)
    plain_log_axes(bottom, list(ratio.values()) + [1.0])
    bottom.set_ylabel("default / tuned", fontsize=8)
    bottom.set_xlabel("message size [bytes; K = 1024]")
    bottom.legend(fontsize=7)
    _save(fig, out_dir / name)
    return StudyPlot(name, case, f"step{tune.index}", "tuned_vs_default",
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


def _candidates_table(case: Case, verdict: Verdict, tune: TuneState) -> List[str]:
    """Every candidate against the default, size by size, by the tuner's rule."""
    rows: List[List[object]] = []
    for curve in sorted(case.curves, key=lambda c: c is not verdict.default):
        if curve is verdict.default:
            continue
        probe = Verdict(curve, verdict.default, False)
        compare_sizes(probe, tune, case.lower_is_better)
        name = curve.named("; ".join(_show(a, curve.at(a), {}) for a in case.axes))
        mark = " **(chosen)**" if curve is verdict.chosen and verdict.changed else ""
        rows.append([name + mark, len(probe.faster), len(probe.within), len(probe.slower)])
    return table(["candidate", "faster", "no significant difference", "slower"],
                 rows, align="lrrr")


def oracle_section(summary: List[Dict[str, Any]], axes: Sequence[Axis], out_dir: Path,
                   tune: TuneState, hidden: AbstractSet[str] = frozenset(),
                   simulated: Optional[Dict[str, str]] = None
                   ) -> Tuple[List[str], List[StudyPlot]]:
    """Markdown lines and the plots written, for a campaign of a staged tuning; ``simulated``:
    the platform of each simulated point (its configurations say so)."""
    heading = ("## Tuned vs default (OCI tuning-study style)" if tune.verify
               else f"## Tuning step {tune.index}: {tune.step} (OCI tuning-study style)")
    if simulated:
        heading += (f", simulated on {' and '.join(sorted(set(simulated.values())))}, "
                    "not measured")
    lines = ["", heading, "",
             "A campaign of `commstack tune` ("
             + (f"the check of the tuned setting after the steps {', '.join(tune.steps)}"
                if tune.verify else f"step {tune.index} of {len(tune.steps)}: "
                + ", ".join(tune.steps))
             + "). Default (the incumbent): "
             + (", ".join(f"{k}={v}" for k, v in tune.incumbent.items()) or "none") + ". "
             f"A candidate replaces it only when {rule_text(tune)} (the tuner's rule, "
             "`src/commstack/tune/decide.py`), judged on this campaign's repeats. Plots: line "
             "the median, band its 95 % interval over the repeats; file names as in the study "
             "(`{coll}_{nodes}_{ppn}_{step}`), described in `oracle_images.csv`.", ""]
    if tune.skipped:
        lines += ["Skipped before the step ran (the pre-flight's view of the stack; nothing "
                  "was launched for them):", ""]
        lines += [f"- {s['text']} (stack {s['stack']!r})" for s in tune.skipped] + [""]
    found = cases(summary, axes, hidden, simulated)
    if not found:
        lines.append("Only one configuration has results here (the default was kept, or the "
                     "others failed): nothing to compare.")
        return lines, []
    plots: List[StudyPlot] = []
    for case in found:
        lines += [f"### {case.title} ({case.np} processes, {units(case.metric)})", ""]
        default = default_curve(case, defaults_of(tune))
        if default is None:
            lines += ["The default configuration ("
                      + ", ".join(f"{k}={v}" for k, v in tune.incumbent.items())
                      + ") has no successful runs here: nothing is chosen.", ""]
            continue
        verdict = judge(case, default, tune)
        shown = {id(c): c.named("; ".join(_value(a, c.at(a)) for a in case.axes))
                 for c in (verdict.chosen, default)}
        parameter = ", ".join(a.label() for a in case.axes)
        kept = "" if verdict.changed or tune.verify else " (default kept)"
        lines += table(["step", "parameter", "default", "tuned" if tune.verify else "chosen",
                        "rank test (corrected)"],
                       [[f"{tune.index} {tune.step}", parameter, shown[id(default)],
                         shown[id(verdict.chosen)] + kept, verdict_text(verdict)]]) + [""]
        lines += _candidates_table(case, verdict, tune) + [""]
        if tune.verify:
            case_plots = [tuned_vs_default_plot(case, verdict, out_dir, tune)]
        else:
            case_plots = step_plots(case, out_dir, tune, verdict.chosen)
        lines += [f"![{p.file}]({p.file})" for p in case_plots] + [""]
        plots += case_plots
    return lines, plots


def _last_matrix(context: Context) -> Optional[dict]:
    import yaml

    copies = sorted((context.campaign.root / "sessions").glob("*/matrix.yaml"))
    return yaml.safe_load(copies[-1].read_text()) if copies else None


def _state(context: Context) -> Optional[TuneState]:
    return of_campaign(context.info, context.campaign.root / "campaign.json")


def _applies(context: Context) -> bool:
    return bool(context.swept) and _state(context) is not None


def _section(context: Context) -> List[str]:
    tune = _state(context)
    if tune is None:
        return []
    matrix = _last_matrix(context)
    simulated = {r.point_id: platform(r.simulation) for r in context.swept if r.simulation}
    lines, plots = oracle_section(aggregate(context.swept, with_samples=True),
                                  matrix_axes(matrix), context.out_dir, tune,
                                  settings_parameters(matrix), simulated)
    if plots:
        replace(context.out_dir / "oracle_images.csv", images_csv(plots).encode())
    return lines


STUDY = Study("oracle", _applies, _section, files=("oracle_images.csv",),
              needs_rows=lambda record, info: isinstance(info.get(KEY), dict))
