"""The staged tuner against an exhaustive search, on one recorded full grid.

1. Records the full grid of one case with real runs (Intel MPI from PyPI, 2 ranks, Allreduce:
   every I_MPI_ADJUST_ALLREDUCE algorithm x block/cyclic mapping, REPEATS repeats), or reuses it.
2. Replays the tuner's steps (algorithm, then mapping) on those records with the decision rule
   `commstack tune` uses (corrected rank tests and a 5 % threshold, commstack.tune.decide), and
   finds the exhaustive best under the same rule: among the grid points the rule admits against
   the default (better at some size, worse at none, not typically slower), the one with the
   lowest median over the
   message sizes of its ratio to the best median at each size. Both rules are replayed: the
   default one and `allow_losses: true` (wins minus losses).
3. Reports the tuner's choice relative to that best (target: within 5 %) and the runs each needs.
4. The grid's best by that median ratio alone (no test at all) is one noisy sample of each
   setting; so the tuner's choice and that unconstrained best are measured again, fresh and
   interleaved (VERIFY_REPEATS repeats each, one campaign), and compared on those new runs (the
   median over sizes of the ratio of their medians): the honest answer to "is the tuner's choice
   within 5 % of the best?".

5. ``--racing FIRST,ROUND,MOST``: the same steps raced (commstack.tune.racing) on the recorded
   repeats in their order: a round "runs" the next repeats of the candidates still racing, a
   dropped candidate keeps only the repeats it took, and the step decides on those alone; its
   choice and runs beside the staged tuner's (and measured fresh when it differs). With
   ``--carry`` the mapping step's incumbent is the algorithm step's winner with the repeats it
   took there, not run again (a plan's ``carry_incumbent``, commstack.tune.carry).

Runs are counted as `commstack tune` launches them: every candidate of every step, the
incumbent in each step (without carrying).

Usage: python bench/tuner_vs_exhaustive.py [--grid DIR] [--racing 4,2,10] [--carry]
           [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from commstack import stats
from commstack.tune import decide as rule
from commstack.tune import racing
from commstack.tune.measurements import measurements

AXES = ["I_MPI_ADJUST_ALLREDUCE", "mapping"]
ALGORITHMS = [0, 1, 2, 3, 4, 5, 6, 7]
DEFAULTS = {"I_MPI_ADJUST_ALLREDUCE": 0, "mapping": "block"}
STEPS = [["I_MPI_ADJUST_ALLREDUCE"], ["mapping"]]
REPEATS = 10  # --repeats; each side of a 10 vs 10 rank test can reach p = 1e-5
VERIFY_REPEATS = 10
CASE = """
benchmark: imb-mpi1
repeats: {repeats}
timeout: 120
stacks:
  impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
parameters: {{stack: impi, benchmarks: Allreduce, msglog: "2:16", iter: 200, npmin: 2,
             ranks_per_node: 2}}
"""
GRID = """product:
  I_MPI_ADJUST_ALLREDUCE: {algorithms}
  mapping: [block, cyclic]
"""
# Two settings measured again, interleaved: the i-th algorithm goes with the i-th mapping.
VERIFY = CASE + """zip:
  - I_MPI_ADJUST_ALLREDUCE: [{algorithms}]
    mapping: [{mappings}]
"""


def medians(sizes) -> dict:
    return {s: stats.median(v) for s, v in sizes.items() if v}


def relative(sizes, best_by_size) -> float:
    """The median over message sizes of this setting's median over the best median there."""
    mine = medians(sizes)
    return statistics.median(mine[s] / best_by_size[s] for s in mine if best_by_size.get(s))


def ranked(grid: dict) -> dict:
    """Every setting's median ratio to the per-size best of the grid."""
    per = {k: medians(v) for k, v in grid.items()}
    sizes = set.intersection(*(set(m) for m in per.values()))
    best = {s: min(m[s] for m in per.values()) for s in sizes}
    return {k: relative(grid[k], best) for k in grid}


def run_matrix(text: str, name: str) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=f"commstack-{name}-"))
    matrix = tmp / "matrices" / "local" / f"{name}.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(text)
    subprocess.run([sys.executable, "-m", "commstack", "run", str(matrix), "--out",
                    str(tmp / "results")], check=True)
    return tmp / "results" / "local" / name


def fresh_ratio(tuned: tuple, best: tuple) -> dict:
    """Geometric-mean time of the tuner's choice over the unconstrained best, on new runs."""
    if tuned == best:
        return {"tuner_over_unconstrained_best": 1.0, "runs": 0}
    text = VERIFY.format(repeats=VERIFY_REPEATS, algorithms=f"{tuned[0]}, {best[0]}",
                         mappings=f"{tuned[1]}, {best[1]}")
    data = measurements(run_matrix(text, "verify"), AXES, "Allreduce")
    mine, theirs = medians(data[tuned]), medians(data[best])
    ratio = statistics.median(mine[s] / theirs[s] for s in mine if theirs.get(s))
    return {"tuner_over_unconstrained_best": ratio, "runs": 2 * VERIFY_REPEATS}


def raced_steps(grid: Path, full: dict, plan: racing.Racing, carry: bool = False) -> dict:
    """The tuner's steps raced on the grid's recorded repeats (see the module's 5.)."""
    by_repeats = {r: measurements(grid, AXES, "Allreduce", repeats=r)
                  for r in range(1, plan.most + 1)}
    settings, runs, rounds = dict(DEFAULTS), 0, {}
    held: Optional[int] = None  # repeats the settings held took in the step before (--carry)
    for axes in STEPS:
        points = {tuple(dict(zip(AXES, key))[a] for a in axes): key for key in full
                  if all(dict(zip(AXES, key))[a] == settings[a] for a in AXES if a not in axes)}
        incumbent = tuple(settings[a] for a in axes)

        carried = held if carry and held is not None else None

        def data_at(repeats: int, points=points, carried=carried, incumbent=incumbent) -> dict:
            return {cand: by_repeats[min(repeats, carried) if carried and cand == incumbent
                                     else repeats][key] for cand, key in points.items()}

        found = racing.race(list(points), incumbent, plan, rule.Rule(),
                            lambda racing_now, repeat, carried=carried, incumbent=incumbent:
                            len(racing_now) - (carried is not None and incumbent in racing_now),
                            data_at)
        taken = {cand: found.rounds[-1].repeats for cand in points}
        for one in found.rounds:
            for cand in one.dropped:
                taken[cand] = one.repeats
        if carried is not None:
            taken[incumbent] = carried
        runs += sum(n for cand, n in taken.items() if not (carried and cand == incumbent))
        rounds["+".join(axes)] = [(one.repeats, len(one.racing), len(one.dropped))
                                  for one in found.rounds]
        outcome = rule.decide({cand: by_repeats[taken[cand]][key] for cand, key in points.items()},
                              incumbent, rule.Rule())
        settings.update(dict(zip(axes, outcome.winner)))
        held = taken[outcome.winner]
    return {"choice": tuple(settings[a] for a in AXES), "runs": runs,
            "rounds (repeats, racing, dropped)": rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=Path, default=None, help="an existing grid campaign to reuse")
    ap.add_argument("--repeats", type=int, default=REPEATS, help="repeats of every grid point")
    ap.add_argument("--racing", default=None, metavar="FIRST,ROUND,MOST",
                    help="also race the steps on the recorded repeats")
    ap.add_argument("--carry", action="store_true",
                    help="raced steps carry the incumbent from the step before")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    os.environ.setdefault("I_MPI_ROOT", sys.prefix)
    grid = args.grid
    if grid is None:
        grid = run_matrix(CASE.format(repeats=args.repeats)
                          + GRID.format(algorithms=ALGORITHMS), "grid")
    data = measurements(grid, AXES, "Allreduce")
    full = {k: v for k, v in data.items() if all(len(s) >= 3 for s in v.values())}

    default_key = tuple(DEFAULTS[a] for a in AXES)
    score = ranked(full)
    geo_best = min(full, key=lambda k: score[k])
    result = {"grid_points": len(full), "exhaustive_runs": len(full) * args.repeats,
              "repeats": args.repeats, "load": os.getloadavg()[0],
              "grid": str(grid),
              # For context: the best median ratio with no test at all.
              "unconstrained_best": dict(zip(AXES, geo_best)),
              "default_over_unconstrained_best": score[default_key] / score[geo_best]}
    for name, allow in (("default_rule", False), ("allow_losses", True)):
        settings = dict(DEFAULTS)
        launched = 0
        for axes in STEPS:
            candidates = {}
            for key, sizes in full.items():
                named = dict(zip(AXES, key))
                if all(named[a] == settings[a] for a in AXES if a not in axes):
                    candidates[tuple(named[a] for a in axes)] = sizes
            launched += len(candidates) * args.repeats
            outcome = rule.decide(candidates, tuple(settings[a] for a in axes),
                                  rule.Rule(allow_losses=allow))
            settings.update(dict(zip(axes, outcome.winner)))
        chosen = tuple(settings[a] for a in AXES)
        # The exhaustive search under the same rule: every grid point against the default.
        admitted = rule.decide(full, default_key, rule.Rule(allow_losses=allow)).scores
        pool = [k for k, sc in admitted.items()
                if k != default_key and sc.wins and (allow or sc.eligible)
                and sc.key(allow)[0] > 0 and sc.median_speedup * 1.05 >= 1] or [default_key]
        best = min(pool, key=lambda k: score[k])
        result[name] = {
            "tuner_choice": dict(zip(AXES, chosen)),
            "exhaustive_best": dict(zip(AXES, best)),
            "tuner_over_best": score[chosen] / score[best],
            "default_over_best": score[default_key] / score[best],
            "tuner_runs": launched,
            # the same steps with carry_incumbent: each step after the first skips its incumbent
            "tuner_runs_carried": launched - (len(STEPS) - 1) * args.repeats,
        }
    result["fresh"] = fresh_ratio(tuple(result["default_rule"]["tuner_choice"][a] for a in AXES),
                                  geo_best)
    if args.racing:
        plan = racing.Racing(*(int(x) for x in args.racing.split(",")))
        raced = raced_steps(grid, full, plan, args.carry)
        chosen = raced.pop("choice")
        result["raced"] = {**raced, "racing": args.racing, "carry": args.carry,
                           "tuner_choice": dict(zip(AXES, chosen)),
                           "tuner_over_best": score[chosen] / score[tuple(
                               result["default_rule"]["exhaustive_best"][a] for a in AXES)],
                           "tuner_runs": raced["runs"],
                           "fresh": fresh_ratio(chosen, geo_best)}
    print(json.dumps(result, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    saved = dict(result, grid=Path(result["grid"]).name)
    (args.out / "tuner_vs_exhaustive.json").write_text(json.dumps(saved, indent=1) + "\n")
    fresh = [result["fresh"]] + ([result["raced"]["fresh"]] if "raced" in result else [])
    return 0 if all(f["tuner_over_unconstrained_best"] <= 1.05 for f in fresh) else 1


if __name__ == "__main__":
    sys.exit(main())
