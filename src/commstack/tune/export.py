"""What a tuning hands to users: files to source, the decisions table, tuned-vs-default."""

from __future__ import annotations

import csv
import io
import shlex
from pathlib import Path
from typing import Any, Dict, List, Optional

from commstack import stats
from commstack.benchmarks.registry import Benchmark
from commstack.markdown_table import table
from commstack.matrix import parameters as P
from commstack.store.files import replace
from commstack.tune import ompi_rules_export as ompi_rules
from commstack.tune.staged import KEPT_DEFAULT, CaseResult


def env_file(settings: Dict[str, Any], benchmark: Benchmark, case: Dict[str, Any]) -> str:
    """``settings``: as launched (a named setting's parameters next to its name)."""
    lines = [f"# Tuned by commstack for {_case_text(case)}. Source it: . ./ucx.env"]
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


def mca_file(settings: Dict[str, Any], benchmark: Benchmark, case: Dict[str, Any]) -> str:
    lines = [f"# Tuned by commstack for {_case_text(case)}.",
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
    for res in results:
        row: Dict[str, Any] = dict(res.case)
        row.update({n: res.settings.get(n) for n in names})
        row["outcome"] = outcome_text(res)
        skipped = []
        for step in res.steps:
            for group, choice in (step.get("per_group") or {}).items():
                for k, v in choice.items():
                    if k != step["per"]:
                        row[f"{k} [{step['per']}={group}]"] = v
            skipped += [f"{step['step']}: {s['text']}" for s in step.get("skipped") or []]
        if skipped:
            row["skipped"] = "; ".join(skipped)
        rows.append(row)
    if any(r.get("skipped") for r in rows):  # the column in every row, last
        for r in rows:
            r["skipped"] = r.pop("skipped", "")
    return rows


def table_markdown(rows: List[Dict[str, Any]]) -> str:
    columns = _columns(rows)
    out = table(columns, [[str(r.get(c, "")) for c in columns] for r in rows])
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


def plot_tuned_vs_default(check: Dict[str, Any], title: str, path: Path) -> Optional[Path]:
    """Tuned and default per message size: the line is the median, the band its 95 % interval
    over every pooled repeat (the median alone where too few repeats give none)."""
    from commstack.optional import require

    require("pandas", "report", "Plotting a tuning's result")
    require("matplotlib", "report", "Plotting a tuning's result").use("Agg")
    import matplotlib.pyplot as plt

    from commstack.report.plots import BAND_ALPHA, plain_log_axes

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
        (line,) = ax.plot(sizes, values, marker="o", markersize=3, label=label)
        ax.fill_between(sizes, low, high, color=line.get_color(), alpha=BAND_ALPHA, linewidth=0)
        seen += low + high
    plain_log_axes(ax, seen)
    ax.set_xlabel("message size [bytes]")
    ax.set_ylabel("time [usec]: median, band its 95 % interval")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def outcome_text(result: CaseResult) -> str:
    """What the case exports, in one phrase (decisions.md, decision.json, the console)."""
    check = result.verify
    if result.kept_default:
        return KEPT_DEFAULT
    if result.settings == result.defaults:
        return "default: no step found a significant gain"
    sizes = len(check.get("faster", [])) + len(check.get("slower", [])) + len(check.get("same", []))
    return (f"tuned: faster at {len(check.get('faster', []))} of {sizes} sizes"
            + (f", SLOWER at {len(check['slower'])}" if check.get("slower") else ""))


def write_case_files(result: CaseResult, benchmark: Benchmark) -> Dict[str, Any]:
    out = result.directory / "tuned"
    out.mkdir(parents=True, exist_ok=True)
    launched = result.launched or result.settings
    files: Dict[str, str] = {}
    if ompi_rules.per_size(launched):
        text, where = ompi_rules.measured_file(result.directory / "verify", launched)
        replace(out / ompi_rules.FILE_NAME, text)
        files[ompi_rules.FILE_NAME] = f"verify/{where}"
    else:  # derived: an earlier export's file would sit there unread
        (out / ompi_rules.FILE_NAME).unlink(missing_ok=True)
    replace(out / "ucx.env", env_file(launched, benchmark, result.case).encode())
    replace(out / "mca-params.conf", mca_file(launched, benchmark, result.case).encode())
    check = result.verify
    plot_tuned_vs_default(check, f"tuned vs default: {_case_text(result.case)}",
                          out / "tuned_vs_default.png")
    summary = {"case": result.case, "settings": result.settings, "launched": launched,
               "chosen_by_steps": result.chosen, "outcome": outcome_text(result),
               "steps": result.steps,
               "verify": {k: v for k, v in check.items() if k != "data"}}
    if files:  # where each exported file was measured
        summary["files"] = files
    import json

    replace(out / "decision.json", (json.dumps(summary, indent=1, default=str) + "\n").encode())
    return summary
