"""How often commstack's verdicts are wrong, and how often they find what is there.

Three measurements with real runs (Intel MPI from PyPI, IMB-MPI1, 2 ranks on this machine):

1. **Null tuning**: a tuning plan whose only axis is an environment variable nothing reads
   (`env.NULL_KNOB: [a, b, c, d]`, default a), cases Allreduce/Alltoall/Bcast/Allgather/Reduce/
   Gather x `env.NULL_CASE` 1..K (another variable nothing reads: K independent cases of each),
   5 repeats, `msglog 0:14`. Every case that exports a value other than `a` is a false winner.
2. **A/A compare**: pairs of identical campaigns compared with `commstack compare`'s code; a
   FAIL or any point called different is a false alarm. Two designs (`--design`):
   `interleaved` (default): one sweep of two identically defined stacks `a` and `b`, the points
   in a shuffled order within every repeat (a seed of its own per pair), split by stack into
   campaign A and B, so each A run has a B run beside it in time; `abba`: two campaigns run
   repeat by repeat (repeat 1 of A then B, repeat 2 of B then A, ...), a whole pass apart.
3. **Power**: B of every A/A pair with every time scaled by 1.05, 1.10 and 1.20 (a planted
   slowdown of every point, as `tests/test_compare.py` plants one in copies of records): the
   share of pairs that FAIL, and of figures called a regression.

Usage: python bench/verdicts.py [--null-cases K] [--pairs N] [--repeats R] [--out bench/results]
(the README's power figures: ``--skip-null --repeats 100``, about 30 minutes on 2 cores: the
noise here is per launch, and 10 % needs some 200 launches a side)
Prints a JSON summary and writes bench/results/verdicts.json. Exit 1 when a target is missed:
null tuning <= 5 % of cases, A/A no FAIL and <= 5 % of points called, 10 % slowdown FAIL in
>= 90 % of pairs.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from commstack import compare
from commstack.figures import Figure, load_figures

COLLECTIVES = ["Allreduce", "Alltoall", "Bcast", "Allgather", "Reduce", "Gather"]
NULL_PLAN = """
campaign: null-knob
base:
  benchmark: imb-mpi1
  repeats: 5
  timeout: 300
  stacks:
    impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
  parameters: {{stack: impi, msglog: "0:14", iter: 50, npmin: 2, nodes: 1, ranks_per_node: 2}}
cases:
  benchmarks: {collectives}
  env.NULL_CASE: {cases}
defaults:
  env.NULL_KNOB: a
steps:
  - name: null-knob
    product: {{env.NULL_KNOB: [a, b, c, d]}}
decision: {{threshold: 0.05}}
"""
AA_MATRIX = """
benchmark: imb-mpi1
repeats: {repeats}
timeout: 300
stacks:
  impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
parameters:
  benchmarks: PingPong Allreduce
  msglog: "0:10"
  iter: 50
  ranks_per_node: 2
product:
  mapping: [block, cyclic]
"""
INTERLEAVED_MATRIX = """
benchmark: imb-mpi1
repeats: {repeats}
seed: {seed}
timeout: 300
stacks:
  a: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
  b: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
parameters:
  benchmarks: PingPong Allreduce
  msglog: "0:10"
  iter: 50
  ranks_per_node: 2
product:
  stack: [a, b]
  mapping: [block, cyclic]
"""
PLANTED = (1.05, 1.10, 1.20)


def commstack(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commstack", *args], capture_output=True,
                          text=True)


def null_tuning(work: Path, cases: int) -> Dict[str, object]:
    plan = work / "plans" / "local" / "null-knob.yaml"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(NULL_PLAN.format(collectives=json.dumps(COLLECTIVES),
                                     cases=json.dumps(list(range(1, cases + 1)))))
    start = time.time()
    run = commstack("tune", str(plan), "--out", str(work / "results"), "--local")
    if run.returncode not in (0, 3):
        raise SystemExit(f"tune failed ({run.returncode}): {run.stderr[-2000:]}")
    root = work / "results" / "local" / "null-knob"
    exported, chosen = [], []
    for decision in sorted(root.glob("*/tuned/decision.json")):
        summary = json.loads(decision.read_text())
        if str(summary["settings"]["env.NULL_KNOB"]) != "a":
            exported.append(decision.parent.parent.name)
        if str(summary["chosen_by_steps"]["env.NULL_KNOB"]) != "a":
            chosen.append(decision.parent.parent.name)
    total = len(list(root.glob("*/tuned/decision.json")))
    return {"cases": total, "exported_non_default": len(exported),
            "rate": len(exported) / total if total else None, "cases_exported": exported,
            "chosen_by_a_step_non_default": len(chosen), "seconds": round(time.time() - start)}


def aa_pair(work: Path, index: int, repeats: int) -> (Path, Path):
    """Two identical campaigns, repeats interleaved ABBA (a resumed run does only the new one;
    pairs already complete under --workdir run nothing again)."""
    matrix = work / f"pair{index}" / "matrices" / "local" / "aa.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)  # a rerun with --workdir resumes
    out = work / f"pair{index}" / "results"
    for repeat in range(1, repeats + 1):
        matrix.write_text(AA_MATRIX.format(repeats=repeat))
        for name in ("a", "b") if repeat % 2 else ("b", "a"):
            run = commstack("run", str(matrix), "--out", str(out), "--campaign", name)
            if run.returncode != 0:
                raise SystemExit(f"run failed ({run.returncode}): {run.stderr[-2000:]}")
    return out / "local" / "a", out / "local" / "b"


def interleaved_pair(work: Path, index: int, repeats: int) -> (List[Figure], List[Figure]):
    """One sweep of two identical stacks in a shuffled order, split by stack."""
    matrix = work / f"pair{index}" / "matrices" / "local" / "aa.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)  # a rerun with --workdir resumes
    # Every pair its own shuffled order: with the seed of the campaign name (the same in every
    # pair) an order effect would repeat in all of them and the pairs would not be independent.
    matrix.write_text(INTERLEAVED_MATRIX.format(repeats=repeats, seed=1000 + index))
    run = commstack("run", str(matrix), "--out", str(work / f"pair{index}" / "results"))
    if run.returncode != 0:
        raise SystemExit(f"run failed ({run.returncode}): {run.stderr[-2000:]}")
    figs = load_figures(work / f"pair{index}" / "results" / "local" / "aa")
    return ([f for f in figs if f.params.get("stack") == "a"],
            [f for f in figs if f.params.get("stack") == "b"])


def scaled(figs: List[Figure], factor: float) -> List[Figure]:
    """Every figure slower by ``factor``: times multiplied, rates divided."""
    out = []
    for f in figs:
        g = copy.deepcopy(f)
        g.samples = [v * factor if f.lower_is_better else v / factor for v in f.samples]
        out.append(g)
    return out


def verdict(a: List[Figure], b: List[Figure]) -> Dict[str, object]:
    cmp = compare.compare(a, b)
    return {"failed": cmp.failed, "figures": len(cmp.matches),
            "regressions": len(cmp.regressions), "improvements": cmp.count(compare.IMPROVEMENT),
            "broad_slowdown": cmp.broad_slowdown, "broad_p": cmp.broad.p,
            "broad_ratio": cmp.broad.ratio,
            "median_slowdown": cmp.median_slowdown}


def compare_pairs(work: Path, pairs: int, repeats: int, design: str) -> Dict[str, object]:
    start = time.time()
    results: Dict[str, List[dict]] = {"aa": [], **{f"x{f:.2f}": [] for f in PLANTED}}
    for i in range(pairs):
        if design == "abba":
            a_dir, b_dir = aa_pair(work, i, repeats)
            a, b = load_figures(a_dir), load_figures(b_dir)
        else:
            a, b = interleaved_pair(work, i, repeats)
        results["aa"].append(verdict(a, b))
        for factor in PLANTED:
            results[f"x{factor:.2f}"].append(verdict(a, scaled(b, factor)))
        print(f"pair {i + 1}/{pairs}: A/A {results['aa'][-1]}", file=sys.stderr)

    def rates(rows: List[dict]) -> Dict[str, object]:
        figures = sum(r["figures"] for r in rows)
        return {"pairs": len(rows), "failed": sum(r["failed"] for r in rows),
                "fail_rate": sum(r["failed"] for r in rows) / len(rows),
                "broad_slowdowns": sum(r["broad_slowdown"] for r in rows),
                "figures": figures,
                "figures_called_regression": sum(r["regressions"] for r in rows),
                "figures_called_improvement": sum(r["improvements"] for r in rows),
                "point_detection_rate": sum(r["regressions"] for r in rows) / figures,
                "points_called_different": (sum(r["regressions"] + r["improvements"]
                                                for r in rows) / figures),
                "median_slowdowns": [round(r["median_slowdown"], 4) for r in rows],
                "broad_estimates": [round(r["broad_ratio"], 4) for r in rows]}

    return {"design": design, "repeats": repeats, "seconds": round(time.time() - start),
            **{k: rates(v) for k, v in results.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--null-cases", type=int, default=5,
                    help="independent cases per collective (6 collectives each; default 5: 30)")
    ap.add_argument("--pairs", type=int, default=10, help="A/A campaign pairs (default 10)")
    ap.add_argument("--repeats", type=int, default=7, help="repeats per A/A campaign (default 7)")
    ap.add_argument("--design", choices=("interleaved", "abba"), default="interleaved",
                    help="how the A/A pairs are taken (see above)")
    ap.add_argument("--skip-null", action="store_true")
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the campaigns here")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    os.environ.setdefault("I_MPI_ROOT", sys.prefix)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="commstack-verdicts-"))
    work.mkdir(parents=True, exist_ok=True)
    result: Dict[str, object] = {"load_before": os.getloadavg()[0]}
    if not args.skip_compare:
        result["compare"] = compare_pairs(work, args.pairs, args.repeats, args.design)
    if not args.skip_null:
        result["null_tuning"] = null_tuning(work, args.null_cases)
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    name = "verdicts.json" if args.skip_null == args.skip_compare else (
        "verdicts_null.json" if args.skip_compare else f"verdicts_{args.design}.json")
    (args.out / name).write_text(json.dumps(result, indent=1) + "\n")
    missed = []
    null = result.get("null_tuning")
    if null and null["rate"] is not None and null["rate"] > 0.05:
        missed.append("null tuning")
    cmp = result.get("compare")
    if cmp:
        if cmp["aa"]["failed"] or cmp["aa"]["points_called_different"] > 0.05:
            missed.append("A/A")
        if cmp["x1.10"]["fail_rate"] < 0.9:
            missed.append("10 % power")
    if missed:
        print("missed: " + ", ".join(missed), file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
