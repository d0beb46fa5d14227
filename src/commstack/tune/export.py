"""What a tuning hands to users: files to source, the decisions table, tuned-vs-default.

A tune whose runs were simulated (``CaseResult.kind``, commstack.simulated) says so wherever its
choice stands: the first lines of ucx.env, mca-params.conf and an exported coll/tuned rules file
(``# SIMULATED, NOT MEASURED: ...``, a comment to each file's reader), ``simulated`` in
decision.json, the outcome and a ``simulated`` column of the decisions table, and the plot's
title and legend; a simulated setting never passes for a measured one."""

from __future__ import annotations

import csv
import io
import shlex
from pathlib import Path
from typing import Any, Dict, List, Optional

from commstack import simulated as sim
from commstack import stats
from commstack.benchmarks.registry import Benchmark
from commstack.markdown_table import table
from commstack.matrix import parameters as P
from commstack.store.files import replace
from commstack.tune import ompi_rules_export as ompi_rules
from commstack.tune.staged import KEPT_DEFAULT, CaseResult


def simulated_header(kind: sim.Kind) -> List[str]:
    """The comment lines an exported file starts with when the tune's runs were simulated."""
    if not kind.simulated:
        return []
    return [f"# SIMULATED, NOT MEASURED: chosen from runs {kind.describe()},",
            "# a simulation of the machine, not a measurement of it: no run on real nodes backs",
            "# these settings; measure them there (commstack tune on the machine) before use."]


def env_file(settings: Dict[str, Any], benchmark: Benchmark, case: Dict[str, Any],
             kind: sim.Kind = sim.MEASURED) -> str:
    """``settings``: as launched (a named setting's parameters next to its name); ``kind``: of
    the tune's runs (simulated ones say so first)."""
    lines = simulated_header(kind)
    lines += [f"# Tuned by commstack for {_case_text(case)}. Source it: . ./ucx.env"]
    lines += _named(settings, benchmark)
    for name, value in settings.items():
        kind = P.classify(name, benchmark)
        if kind.kind == "env":
            lines.append(f"export {kind.env_name}={shlex.quote(str(value))}")
        elif kind.kind not in ("mca", "setting"):
            lines.append(f"# {name} = {value} (a launcher setting, not a variable)")
    lines += ompi_rules.env_lines(settings)
    return "\n".join(lines) + "\n"


def _named(settings: Dict[str, Any], benchmark: Benchmark) -> List[str]:
    """A comment per named setting (component = ucc): its parameters are the lines that follow."""
    return [f"# {name} = {value} (a named setting of the plan; its parameters are below)"
            for name, value in settings.items() if P.classify(name, benchmark).kind == "setting"]


def mca_file(settings: Dict[str, Any], benchmark: Benchmark, case: Dict[str, Any],
             kind: sim.Kind = sim.MEASURED) -> str:
    lines = simulated_header(kind)
    lines += [f"# Tuned by commstack for {_case_text(case)}.",
             "# Open MPI reads this as $HOME/.openmpi/mca-params.conf or "
             "<prefix>/etc/openmpi-mca-params.conf, or via OMPI_MCA_mca_base_param_files=<this file>."]
    lines += _named(settings, benchmark)
    rules_file = ompi_rules.per_size(settings)
    for name, value in settings.items():
        if P.classify(name, benchmark).kind == "mca" and name not in rules_file:
            lines.append(f"{name[4:]} = {value}")
    lines += ompi_rules.mca_lines(settings)
    return "\n".join(lines) + "\n"


def _case_text(case: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "the whole plan"


def decisions_table(results: List[CaseResult], names: List[str]) -> List[Dict[str, Any]]:
    rows = []
    simulated = any(res.kind.simulated for res in results)
    for res in results:
        row: Dict[str, Any] = dict(res.case)
        row.update({n: res.settings.get(n) for n in names})
        row["outcome"] = outcome_text(res)
        if simulated:  # the column in every row, beside the outcome
            row["simulated"] = res.kind.short() if res.kind.simulated else ""
        skipped = []
        for step in res.steps:
            for group, choice in (step.get("per_group") or {}).items():
                for k, v in choice.items():
                    if k != step["per"]:
                        row[f"{k} [{step['per']}={group}]"] = v
            skipped += [f"{step['step']}: {s['text']}" for s in step.get("skipped") or []]
        if skipped:
            row["skipped"] = "; ".join(skipped)
        # Every run the case's steps, their refinements and verify launched (a resumed tune's
        # earlier ones too).
        row["runs"] = sum(1 for pattern in ("*/points/*/rep*.try*/record.json",
                                            "*/refine/points/*/rep*.try*/record.json")
                          for _ in res.directory.glob(pattern))
        raced = [_race_text(step) for step in res.steps if step.get("racing")]
        if raced:
            row["racing"] = "; ".join(raced)
        refined = [_sizes_text(step) for step in res.steps if step.get("sizes")]
        if refined:
            row["sizes"] = "; ".join(refined)
        rows.append(row)
    for column in ("racing", "sizes", "skipped"):  # in every row once in one, last
        if any(r.get(column) for r in rows):
            for r in rows:
                r[column] = r.pop(column, "")
    return rows


def _race_text(step: Dict[str, Any]) -> str:
    """A raced step in a few words: its runs, the candidates dropped and at which repeats."""
    race = step["racing"]
    dropped = [(len(r["dropped"]), r["repeats"]) for r in race["rounds"] if r["dropped"]]
    count = race["rounds"][0]["racing"] if race["rounds"] else 0
    runs = step.get("runs", race["runs"])
    text = f"{step['step']}: {runs} runs, {sum(n for n, _ in dropped)} of {count} dropped"
    if dropped:
        text += " (" + ", ".join(f"{n} at {r}" for n, r in dropped) + " repeats)"
    if step.get("incumbent_from"):
        text += f", incumbent's runs from {step['incumbent_from']['step']}"
    return text + ("; " + race["stopped"] if race["stopped"].startswith("budget") else "")


def _sizes_text(step: Dict[str, Any]) -> str:
    """A step measured at coarse sizes first: where it refined, and at what cost."""
    sizes = step["sizes"]
    if not sizes.get("between"):
        return f"{step['step']}: {len(sizes['coarse'])} sizes, nothing to refine"
    return (f"{step['step']}: {len(sizes['coarse'])} sizes, refined "
            + ", ".join(f"{a}-{b}" for a, b in sizes["between"])
            + f" bytes ({len(sizes['sizes'])} sizes x {len(sizes['candidates'])} candidates, "
            f"{sizes['runs']} runs)")


def table_markdown(rows: List[Dict[str, Any]], results: Optional[List[CaseResult]] = None) -> str:
    """The decisions as Markdown; with ``results`` whose runs were simulated, a first line
    saying so."""
    columns = _columns(rows)
    out = table(columns, [[str(r.get(c, "")) for c in columns] for r in rows])
    kinds = [r.kind for r in results or [] if r.kind.simulated]
    if kinds:
        platforms = sorted({p for k in kinds for p in k.platforms})
        out = [f"**Simulated, not measured:** {len(kinds)} of {len(results or [])} case(s) were "
               f"tuned on runs simulated on {' and '.join(platforms)} (column `simulated`): "
               "their settings are a simulation's choice, not a measurement's.", ""] + out
    return "\n".join(out) + "\n"


def table_csv(rows: List[Dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=_columns(rows))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _columns(rows: List[Dict[str, Any]]) -> List[str]:
    columns: List[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    return columns


def plot_tuned_vs_default(check: Dict[str, Any], title: str, path: Path,
                          kind: sim.Kind = sim.MEASURED) -> Optional[Path]:
    """Tuned and default per message size: the line is the median, the band its 95 % interval
    over every pooled repeat (the median alone where too few repeats give none); simulated runs
    (``kind``) dotted, said in the legend and title."""
    from commstack.optional import require

    require("pandas", "report", "Plotting a tuning's result")
    require("matplotlib", "report", "Plotting a tuning's result").use("Agg")
    import matplotlib.pyplot as plt

    from commstack.log_axes import BAND_ALPHA, plain_log_axes

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    seen: List[float] = []
    for label, series in check["data"].items():
        sizes = sorted(s for s, v in series.items() if s and v)
        if not sizes:
            continue
        centers = [stats.describe(series[s]) for s in sizes]
        values = [c.median for c in centers]
        low = [c.low if c.has_interval else c.median for c in centers]
        high = [c.high if c.has_interval else c.median for c in centers]
        (line,) = ax.plot(sizes, values, marker="o", markersize=3,
                          label=sim.marked(label, kind.simulated),
                          linestyle=":" if kind.simulated else "-")
        ax.fill_between(sizes, low, high, color=line.get_color(), alpha=BAND_ALPHA, linewidth=0)
        seen += low + high
    plain_log_axes(ax, seen)
    ax.set_xlabel("message size [bytes]")
    ax.set_ylabel("time [usec]: median, band its 95 % interval")
    ax.set_title(title + (f"\n{kind.short()}, not measured" if kind.simulated else ""),
                 fontsize=10 if kind.simulated else None)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def outcome_text(result: CaseResult) -> str:
    """What the case exports, in one phrase (decisions.md, decision.json, the console)."""
    check = result.verify
    said = f"SIMULATED on {' and '.join(result.kind.platforms)}: " if result.kind.simulated else ""
    if result.kept_default:
        return said + KEPT_DEFAULT
    if result.settings == result.defaults:
        return said + "default: no step found a significant gain"
    sizes = len(check.get("faster", [])) + len(check.get("slower", [])) + len(check.get("same", []))
    return (said + f"tuned: faster at {len(check.get('faster', []))} of {sizes} sizes"
            + (f", SLOWER at {len(check['slower'])}" if check.get("slower") else ""))


def write_case_files(result: CaseResult, benchmark: Benchmark) -> Dict[str, Any]:
    out = result.directory / "tuned"
    out.mkdir(parents=True, exist_ok=True)
    launched = result.launched or result.settings
    files: Dict[str, str] = {}
    kind = result.kind
    if ompi_rules.per_size(launched):
        if result.verify.get("not_run"):  # a simulator cannot run a per-size value
            text = ompi_rules.rendered_file(result.directory, launched)
            files[ompi_rules.FILE_NAME] = ("written from the steps' choice: the verify did not "
                                           "run (" + result.verify["not_run"] + ")")
        else:
            text, where = ompi_rules.measured_file(result.directory / "verify", launched)
            files[ompi_rules.FILE_NAME] = f"verify/{where}"
        header = "".join(line + "\n" for line in simulated_header(kind)).encode()
        replace(out / ompi_rules.FILE_NAME, header + text)  # '#' starts a comment there
    else:  # derived: an earlier export's file would sit there unread
        (out / ompi_rules.FILE_NAME).unlink(missing_ok=True)
    replace(out / "ucx.env", env_file(launched, benchmark, result.case, kind).encode())
    replace(out / "mca-params.conf", mca_file(launched, benchmark, result.case, kind).encode())
    check = result.verify
    plot_tuned_vs_default(check, f"tuned vs default: {_case_text(result.case)}",
                          out / "tuned_vs_default.png", kind)
    summary: Dict[str, Any] = {}
    if kind.simulated:  # first: a simulated setting never passes for a measured one
        summary["simulated"] = {"text": f"{kind.describe()}: not measured",
                                "platforms": list(kind.platforms),
                                "simulators": list(kind.simulators),
                                "measured_too": kind.measured}
    summary.update({"case": result.case, "settings": result.settings, "launched": launched,
                    "chosen_by_steps": result.chosen, "outcome": outcome_text(result),
                    "steps": result.steps,
                    "verify": {k: v for k, v in check.items() if k != "data"}})
    if files:  # where each exported file was measured
        summary["files"] = files
    import json

    replace(out / "decision.json", (json.dumps(summary, indent=1, default=str) + "\n").encode())
    return summary
