"""What a tuning hands to users: files to source, the decisions table, tuned-vs-default."""

from __future__ import annotations

import csv
import io
import shlex
from pathlib import Path
from typing import Any, Dict, List, Optional

from commstack.benchmarks.registry import Benchmark
from commstack.markdown_table import table
from commstack.matrix import parameters as P
from commstack.store.files import replace
from commstack.tune import decide as rule
from commstack.tune.staged import CaseResult, measurements


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
    for name, value in settings.items():
        if P.classify(name, benchmark).kind == "mca":
            lines.append(f"{name[4:]} = {value}")
    return "\n".join(lines) + "\n"


def _case_text(case: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "the whole plan"


def decisions_table(results: List[CaseResult], names: List[str]) -> List[Dict[str, Any]]:
    rows = []
    for res in results:
        row: Dict[str, Any] = dict(res.case)
        row.update({n: res.settings.get(n) for n in names})
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


def verify(result: CaseResult, names: List[str], defaults: Dict[str, Any],
           noise: "str | float") -> Dict[str, Any]:
    """Tuned vs default per message size: sizes where tuned is slower beyond noise (should be
    none), faster beyond noise, or within noise. All runs of the two settings in this case are
    pooled (the verify sweep, side by side, plus the steps that measured them), so the noise
    estimate rests on every repeat rather than on the last three."""
    benchmark = result.case.get("benchmarks")
    single = benchmark if isinstance(benchmark, str) and " " not in benchmark else None
    data: Dict[tuple, Dict[Any, List[float]]] = {}
    for step_dir in sorted(p.parent for p in result.directory.glob("*/matrix.yaml")):
        for key, sizes in measurements(step_dir, names, single).items():
            for size, samples in sizes.items():
                data.setdefault(key, {}).setdefault(size, []).extend(samples)
    default_key = tuple(defaults[n] for n in names)
    tuned_key = tuple(result.settings[n] for n in names)
    slower, faster, same = [], [], []
    for size, samples in sorted(data.get(default_key, {}).items(), key=lambda kv: kv[0] or -1):
        tuned_samples = data.get(tuned_key, {}).get(size)
        if not tuned_samples:
            continue
        d, t = rule.Stats.of(samples), rule.Stats.of(tuned_samples)
        (faster if rule.beats(t, d, noise) else slower if rule.beats(d, t, noise) else same
         ).append(size)
    return {"slower_beyond_noise": slower, "faster_beyond_noise": faster, "within_noise": same,
            "data": {"default": data.get(default_key, {}), "tuned": data.get(tuned_key, {})}}


def plot_tuned_vs_default(check: Dict[str, Any], title: str, path: Path) -> Optional[Path]:
    """Tuned and default per message size: the line is the rule's value (trimmed mean), the band
    the min–max of every pooled repeat."""
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
        values = [rule.Stats.of(series[s]).value for s in sizes]
        low, high = [min(series[s]) for s in sizes], [max(series[s]) for s in sizes]
        (line,) = ax.plot(sizes, values, marker="o", markersize=3, label=label)
        ax.fill_between(sizes, low, high, color=line.get_color(), alpha=BAND_ALPHA, linewidth=0)
        seen += low + high
    plain_log_axes(ax, seen)
    ax.set_xlabel("message size [bytes]")
    ax.set_ylabel("time [usec]: trimmed mean, band min–max of the repeats")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def write_case_files(result: CaseResult, benchmark: Benchmark, names: List[str],
                     defaults: Dict[str, Any], noise: "str | float") -> Dict[str, Any]:
    out = result.directory / "tuned"
    out.mkdir(parents=True, exist_ok=True)
    launched = result.launched or result.settings
    replace(out / "ucx.env", env_file(launched, benchmark, result.case).encode())
    replace(out / "mca-params.conf", mca_file(launched, benchmark, result.case).encode())
    check = verify(result, names, defaults, noise)
    plot_tuned_vs_default(check, f"tuned vs default: {_case_text(result.case)}",
                          out / "tuned_vs_default.png")
    summary = {"case": result.case, "settings": result.settings, "launched": launched,
               "steps": result.steps,
               "verify": {k: v for k, v in check.items() if k != "data"}}
    import json

    replace(out / "decision.json", (json.dumps(summary, indent=1, default=str) + "\n").encode())
    return summary
