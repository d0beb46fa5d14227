"""The tuner lab: the staged tuner against the exhaustive best where it matters, on a simulated
machine (SimGrid SMPI; docs/measured.md "The tuner lab").

1. Exhaustive: for every case of the plan (collective x node count), every combination of the
   values its steps sweep (algorithm ids x mappings x eager thresholds) is run once through
   `commstack run` (one campaign per case). Without noise a simulated run is bit-identical
   when repeated (checked on a sample, ``--determinism``), so one run per setting is its true
   time: the ground truth per (setting, message size).
2. Staged: `commstack tune PLAN` as a user runs it (its repeats, its corrected rank tests).
3. The tuner's choice per case and size (its per-size algorithm bands, mapping, threshold) is
   looked up in the ground truth and compared with the best setting there: the share of
   (collective, size) cells within 5 % of the best, and the runs each spent (the exhaustive
   search at the plan's repeats, and as launched here).
4. ``--null N``: N null tunes with launch-to-launch noise (``--noise``, a log-sd): one step over
   a variable nothing reads (``env.COMMSTACK_LAB_NULL``), so every winner it names is a false
   one.

Usage:
  python bench/tuner_lab.py [--plan plans/bm-optimized3-36/simulated-coll-tuned.yaml]
      [--work DIR] [--cases nodes=2] [--noise 0.0] [--null 0] [--racing 4,2,8] [--carry]
      [--coarse N] [--out bench/results/tuner_lab.json]

``--racing FIRST,ROUND,MOST`` races each step's candidates (commstack.tune.racing); the null
tunes then race too. ``--carry`` sets the plan's ``carry_incumbent: true`` (a step does not
run its incumbent again: commstack.tune.carry). ``--coarse N`` sets ``coarse_sizes: N`` (every
N-th size first, then the sizes between two where the best changes: commstack.tune.sizes).

Cost is counted three ways: runs launched; (run, size) measurements taken; and the simulated
time of the measured calls, one repetition of each size of each run summed (``call_s``): at a
fixed repetition count a run on the machine costs in proportion, so a run of the small sizes
alone is cheap where one with the large sizes is not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

from commstack.tune.measurements import measurements
from commstack.tune.plan import TunePlan, load_plan
from commstack.tune.staged import case_slug
from commstack.tune.step_matrix import step_matrix_text

REPO = Path(__file__).resolve().parents[1]
PLAN = REPO / "plans" / "bm-optimized3-36" / "simulated-coll-tuned.yaml"
WITHIN = 1.05
_RANGE = re.compile(r"^(?P<alg>\d+):(?P<first>\d+)-(?P<last>\d*)$")


def commstack(*args: str, log: Optional[Path] = None) -> float:
    """Run a commstack command as a user does; its wall time in seconds."""
    env = dict(os.environ, COMMSTACK_ENVIRONMENTS=str(REPO / "environments"))
    start = time.monotonic()
    with open(log or os.devnull, "a") as out:
        subprocess.run([sys.executable, "-m", "commstack", *args], check=True, env=env,
                       stdout=out, stderr=subprocess.STDOUT)
    return time.monotonic() - start


def grid_axes(plan: TunePlan, case: Dict[str, Any]) -> Tuple[List[str], List[Dict[str, Any]]]:
    """The case's swept parameters and every combination of their values."""
    axes: List[str] = []
    values: Dict[str, List[Any]] = {}
    for step in plan.steps_for(case):
        for cand in plan.candidates(step, case):
            for k, v in cand.items():
                if k not in axes:
                    axes.append(k)
                values.setdefault(k, [])
                if v not in values[k]:
                    values[k].append(v)
    combos = [{}]
    for axis in axes:
        combos = [dict(c, **{axis: v}) for c in combos for v in values[axis]]
    return axes, combos


def exhaustive(plan: TunePlan, case: Dict[str, Any], work: Path, noise: float
               ) -> Tuple[Path, int, float]:
    """Run the case's full grid once; its campaign, its points and the wall time."""
    axes, combos = grid_axes(plan, case)
    text = step_matrix_text(plan, case, plan.defaults_for(case), axes, combos)
    data = yaml.safe_load(text)
    data["repeats"] = 1
    if noise:
        for stack in data["stacks"].values():
            stack["noise"] = noise
    folder = work / "matrices" / "bm-optimized3-36"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"grid-{case_slug(case)}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    name = f"grid-{case_slug(case)}"
    wall = commstack("run", str(path), "--out", str(work / "results"), "--campaign", name,
                     "--local", log=work / f"{name}.log")
    return work / "results" / "bm-optimized3-36" / name, len(combos), wall


def per_size_choice(value: Any, size: int) -> Any:
    """A per-size algorithm value's algorithm at ``size`` ("3:0-1023;4:1024-"), else the value."""
    text = str(value)
    if ";" not in text and not _RANGE.match(text):
        return value
    for part in text.split(";"):
        m = _RANGE.match(part)
        if m and int(m["first"]) <= size and (not m["last"] or size <= int(m["last"])):
            return int(m["alg"])
    return None


def tuned_settings(case_dir: Path) -> Dict[str, Any]:
    decision = json.loads((case_dir / "tuned" / "decision.json").read_text())
    return dict(decision.get("tuned") or decision.get("settings") or {})


def compare(plan: TunePlan, case: Dict[str, Any], grid: Path, tuned: Dict[str, Any]
            ) -> Dict[str, Any]:
    axes, _ = grid_axes(plan, case)
    benchmark = case.get("benchmarks")
    truth = measurements(grid, axes, benchmark)  # key -> size -> [t]
    sizes = sorted({s for by in truth.values() for s in by})
    cells = []
    for size in sizes:
        values = {k: min(by[size]) for k, by in truth.items() if size in by}
        best_key = min(values, key=values.get)
        chosen = tuple(per_size_choice(tuned.get(ax), size) for ax in axes)
        got = values.get(chosen)
        cells.append({"bytes": size, "best": dict(zip(axes, best_key)),
                      "best_us": values[best_key],
                      "chosen": dict(zip(axes, chosen)), "chosen_us": got,
                      "ratio": None if got is None else got / values[best_key]})
    within = [c for c in cells if c["ratio"] is not None and c["ratio"] <= WITHIN]
    return {"cells": cells, "within": len(within), "of": len(cells)}


def runs_in(folder: Path) -> int:
    return sum(1 for _ in folder.glob("**/points/*/rep*.try*/record.json"))


def cost_of(folder: Path) -> Dict[str, Any]:
    """What the runs under ``folder`` measured: (run, size) rows, the simulated time of one
    call at each (seconds), and the simulator's wall time."""
    from commstack.aggregate import metric_of, result_rows
    from commstack.store.campaign import Campaign

    rows = call_us = wall = 0.0
    for campaign in sorted({p.parents[3] for p in folder.glob("**/points/*/rep*.try*/record.json")}):
        records = list(Campaign(campaign).records())
        wall += sum(r.duration_s or 0 for r in records)
        for rec, row in result_rows(records):
            metric = metric_of(row, rec.benchmark)
            if metric and row.get("status", "ok") == "ok":
                rows += 1
                call_us += float(row[metric[0]])
    return {"run_sizes": int(rows), "call_s": round(call_us / 1e6, 6),
            "simulator_s": round(wall, 1)}


def determinism(grid: Path, work: Path, sample: int) -> Dict[str, Any]:
    """Rerun ``sample`` of a grid's points (a copy of its matrix, new campaign) and compare the
    parsed rows: a noise-free simulation must repeat bit for bit."""
    from commstack.store.campaign import Campaign

    matrix = yaml.safe_load(next(grid.glob("sessions/*/matrix.yaml")).read_text())
    records = {r.point_id: r for r in Campaign(grid).records() if r.ok}
    chosen = random.Random(1).sample(sorted(records), min(sample, len(records)))
    rows = [dict(records[p].params) for p in chosen]
    keys = [k for k in rows[0] if any(r[k] != rows[0][k] for r in rows)] or ["stack"]
    matrix.pop("product", None)
    matrix["zip"] = [{k: [r[k] for r in rows] for k in keys}]
    matrix["parameters"] = {k: v for k, v in rows[0].items() if k not in keys}
    path = work / "matrices" / "bm-optimized3-36" / f"again-{grid.name}.yaml"
    path.write_text(yaml.safe_dump(matrix, sort_keys=False))
    commstack("run", str(path), "--out", str(work / "results"), "--campaign", f"again-{grid.name}",
              "--local", log=work / "again.log")
    rerun = work / "results" / "bm-optimized3-36" / f"again-{grid.name}"
    again = {json.dumps(r.params, sort_keys=True): r for r in Campaign(rerun).records()}
    same = 0
    for pid in chosen:
        first = records[pid]
        second = again.get(json.dumps(first.params, sort_keys=True))
        same += second is not None and second.parsed == first.parsed
    return {"rerun": len(chosen), "identical": same}


# The null tunes run 2 x 4 simulated ranks: what they test is the rule against launch-to-launch
# noise (one factor per launch, --noise), which does not depend on the rank count, and 960
# launches of 72 ranks would cost hours here.
NULL_PLAN = """campaign: lab-null
base:
  benchmark: imb-mpi1
  repeats: {repeats}
  timeout: 600
  stacks:
    sim: {{flavour: smpi, spack: {{env: local, view: smpi}}, noise: {noise}}}
  parameters: {{stack: sim, benchmarks: Allreduce, msglog: "10:14", iter: 1, zero_size: 0,
               nodes: 2, ranks_per_node: 4, mapping: block, smpi.coll-selector: ompi}}
cases:
  env.COMMSTACK_LAB_REPLICA: {replicas}
defaults:
  env.COMMSTACK_LAB_NULL: a
steps:
  - name: nothing
    product: {{env.COMMSTACK_LAB_NULL: [a, b, c, d]}}
decision: {{threshold: 0.05, correction: bh}}
"""


# With --carry the null tunes take two steps over variables nothing reads, the second's
# incumbent carried from the first: a winner in either is a false one.
NULL_FIRST_STEP = """  - name: first
    product: {env.COMMSTACK_LAB_NULL0: [a, b]}
"""


def null_tunes(work: Path, count: int, noise: float, repeats: int,
               racing: Optional[Dict[str, int]] = None, carry: bool = False) -> Dict[str, Any]:
    path = work / "plans" / "bm-optimized3-36" / "lab-null.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = NULL_PLAN.format(repeats=repeats, noise=noise, replicas=list(range(1, count + 1)))
    if racing:
        text += f"racing: {json.dumps(racing)}\n"
    if carry:
        text = text.replace("steps:\n", "steps:\n" + NULL_FIRST_STEP).replace(
            "  env.COMMSTACK_LAB_NULL: a\n",
            "  env.COMMSTACK_LAB_NULL: a\n  env.COMMSTACK_LAB_NULL0: a\n")
        text += "carry_incumbent: true\n"
    path.write_text(text)
    wall = commstack("tune", str(path), "--out", str(work / "results"), "--local",
                     log=work / "null.log")
    root = work / "results" / "bm-optimized3-36" / "lab-null"
    changed = set()
    for decision in sorted(root.glob("*/*/decision.json")):
        if decision.parent.name != "tuned" and json.loads(decision.read_text()).get("changed"):
            changed.add(decision.parent.parent.name)
    return {"cases": count, "noise": noise, "repeats": repeats, "carry_incumbent": carry,
            "false_winners": len(changed), "which": sorted(changed), "runs": runs_in(root),
            "wall_s": round(wall, 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plan", type=Path, default=PLAN)
    p.add_argument("--work", type=Path,
                   default=Path(tempfile.gettempdir()) / "commstack-tuner-lab")
    p.add_argument("--cases", action="append", default=[], metavar="KEY=VALUE",
                   help="only the cases with one of these comma-separated values (repeatable)")
    p.add_argument("--noise", type=float, default=0.0, help="log-sd of per-launch noise")
    p.add_argument("--determinism", type=int, default=4, metavar="N",
                   help="rerun N grid points of each case and compare (noise-free only)")
    p.add_argument("--null", type=int, default=0, metavar="N", help="N null tunes")
    p.add_argument("--null-repeats", type=int, default=8)
    p.add_argument("--racing", default=None, metavar="FIRST,ROUND,MOST",
                   help="race each step's candidates (the plan's racing:, commstack.tune.racing)")
    p.add_argument("--carry", action="store_true",
                   help="carry each step's incumbent from the step before (carry_incumbent)")
    p.add_argument("--coarse", type=int, default=None, metavar="N",
                   help="every N-th message size first (the plan's coarse_sizes)")
    p.add_argument("--skip-tune", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    plan = load_plan(args.plan)
    wanted = {k: v.split(",") for k, v in (c.split("=", 1) for c in args.cases)}
    cases = [c for c in plan.case_list() if all(str(c.get(k)) in v for k, v in wanted.items())]
    out: Dict[str, Any] = {"plan": args.plan.name, "noise": args.noise,
                           "repeats": plan.base.get("repeats"),
                           "load_before": os.getloadavg()[0], "cases": []}
    staged_plan = args.plan
    if args.racing:
        first, step, most = (int(x) for x in args.racing.split(","))
        out["racing"] = {"first": first, "round": step, "most": most}
    out["carry_incumbent"] = args.carry
    out["coarse_sizes"] = args.coarse
    if args.noise or wanted or args.racing or args.carry or args.coarse:  # the plan, with noise,
        data = yaml.safe_load(args.plan.read_text())  # racing, carrying and the chosen cases
        if args.racing:
            data["racing"] = out["racing"]
        if args.carry:
            data["carry_incumbent"] = True
        if args.coarse:
            data["coarse_sizes"] = args.coarse
        for stack in data["base"]["stacks"].values():
            stack["noise"] = args.noise or stack.get("noise", 0)
        for key, value in wanted.items():
            data["cases"][key] = [v for v in data["cases"][key] if str(v) in value]
        staged_plan = work / "plans" / "bm-optimized3-36" / args.plan.name
        staged_plan.parent.mkdir(parents=True, exist_ok=True)
        staged_plan.write_text(yaml.safe_dump(data, sort_keys=False))
    for case in cases:
        # the ground truth is the noise-free grid; noise goes to the tuner's runs only
        grid, points, wall = exhaustive(plan, case, work, 0.0)
        entry = {"case": case, "grid_points": points, "grid_wall_s": round(wall, 1),
                 "exhaustive_runs_at_plan_repeats": points * int(plan.base.get("repeats", 1))}
        if args.determinism and not args.noise:
            entry["determinism"] = determinism(grid, work, args.determinism)
        out["cases"].append(entry)
        print(json.dumps({k: v for k, v in entry.items()}), flush=True)
    if not args.skip_tune:
        start = time.monotonic()
        commstack("tune", str(staged_plan), "--out", str(work / "results" / "staged"), "--local",
                  log=work / "tune.log")
        out["tune_wall_s"] = round(time.monotonic() - start, 1)
        # the tune's campaign is named after the plan and its node type (plan.campaign-<type>)
        staged = min((work / "results" / "staged" / "bm-optimized3-36").glob(plan.campaign + "*"))
        for entry in out["cases"]:
            case_dir = staged / case_slug(entry["case"])
            grid = work / "results" / "bm-optimized3-36" / f"grid-{case_slug(entry['case'])}"
            tuned = tuned_settings(case_dir)
            entry["tuned"] = tuned
            entry["tuner_runs"] = runs_in(case_dir)
            entry["tuner_cost"] = cost_of(case_dir)
            entry["step_runs"] = {d.parent.name: json.loads(d.read_text()).get("runs")
                                  for d in sorted(case_dir.glob("*/decision.json"))}
            entry["dropped"] = {d.parent.name: [r["dropped"] for r in json.loads(
                d.read_text()).get("racing", {}).get("rounds", [])]
                for d in sorted(case_dir.glob("*/decision.json"))}
            entry["comparison"] = compare(plan, entry["case"], grid, tuned)
    if args.null:
        out["null"] = null_tunes(work, args.null, args.noise or 0.28, args.null_repeats,
                                 out.get("racing"), args.carry)
    cells = [c for e in out["cases"] for c in (e.get("comparison") or {}).get("cells", [])]
    if cells:
        within = sum(1 for c in cells if c["ratio"] is not None and c["ratio"] <= WITHIN)
        runs = sum(e.get("tuner_runs", 0) for e in out["cases"])
        exhaustive_runs = sum(e["exhaustive_runs_at_plan_repeats"] for e in out["cases"])
        cost = [e.get("tuner_cost") or {} for e in out["cases"]]
        out["cost"] = {k: round(sum(c.get(k, 0) for c in cost), 6)
                       for k in ("run_sizes", "call_s", "simulator_s")}
        out["summary"] = {"cells": len(cells), "within_5pct": within,
                          "share_within": round(within / len(cells), 4),
                          "tuner_runs": runs, "exhaustive_runs_at_plan_repeats": exhaustive_runs,
                          "run_ratio": round(runs / exhaustive_runs, 4) if exhaustive_runs else None}
    out["load_after"] = os.getloadavg()[0]
    text = json.dumps(out, indent=1, default=str)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps(out.get("summary"), indent=1), json.dumps(out.get("null"), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
