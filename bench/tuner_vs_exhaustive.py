"""The staged tuner against an exhaustive search, on one recorded full grid.

1. Records the full grid of one case with real runs (Intel MPI from PyPI, 2 ranks, Allreduce:
   every I_MPI_ADJUST_ALLREDUCE algorithm x block/cyclic mapping, 5 repeats), or reuses it.
2. Replays the tuner's steps (algorithm, then mapping) on those records with the decision rule
   `commstack tune` uses, and finds the exhaustive best under the same rule: the lowest
   geometric mean over message sizes (of the trimmed means) among the grid points the rule
   admits. Both rules are replayed: the default one (a candidate slower than the default beyond
   noise at any size is out) and `allow_losses: true` (wins and losses are summed).
3. Reports the tuner's choice relative to that best (target: within 5 %) and the runs each needs.
4. The grid's best by geometric mean alone (no regard to noise) is one noisy sample of each
   setting; so the tuner's choice and that unconstrained best are measured again, fresh and
   interleaved (VERIFY_REPEATS repeats each, one campaign), and compared on those new runs:
   the honest answer to "is the tuner's choice within 5 % of the best?".

Usage: python bench/tuner_vs_exhaustive.py [--grid DIR] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from commstack.tune import decide as rule
from commstack.tune.staged import measurements

AXES = ["I_MPI_ADJUST_ALLREDUCE", "mapping"]
ALGORITHMS = [0, 1, 2, 3, 4, 5, 6, 7]
DEFAULTS = {"I_MPI_ADJUST_ALLREDUCE": 0, "mapping": "block"}
STEPS = [["I_MPI_ADJUST_ALLREDUCE"], ["mapping"]]
REPEATS = 5
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
MATRIX = CASE.format(repeats=REPEATS) + f"""product:
  I_MPI_ADJUST_ALLREDUCE: {ALGORITHMS}
  mapping: [block, cyclic]
"""
# Two settings measured again, interleaved: the i-th algorithm goes with the i-th mapping.
VERIFY = CASE + """zip:
  - I_MPI_ADJUST_ALLREDUCE: [{algorithms}]
    mapping: [{mappings}]
"""


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def score(sizes) -> float:
    return geomean([rule.Stats.of(v).value for v in sizes.values()])


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
    return {"tuner_over_unconstrained_best": score(data[tuned]) / score(data[best]),
            "runs": 2 * VERIFY_REPEATS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=Path, default=None, help="an existing grid campaign to reuse")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    os.environ.setdefault("I_MPI_ROOT", sys.prefix)
    grid = args.grid
    if grid is None:
        grid = run_matrix(MATRIX, "grid")
    data = measurements(grid, AXES, "Allreduce")
    full = {k: v for k, v in data.items() if all(len(s) >= 3 for s in v.values())}

    default_key = tuple(DEFAULTS[a] for a in AXES)
    geo_best = min(full, key=lambda k: score(full[k]))
    result = {"grid_points": len(full), "exhaustive_runs": len(full) * REPEATS,
              "grid": str(grid),
              # For context: the best geometric mean with no regard to noise at all.
              "unconstrained_best": dict(zip(AXES, geo_best)),
              "default_over_unconstrained_best": score(full[default_key]) / score(full[geo_best])}
    for name, allow in (("default_rule", False), ("allow_losses", True)):
        settings = dict(DEFAULTS)
        measured = set()
        for axes in STEPS:
            candidates = {}
            for key, sizes in full.items():
                named = dict(zip(AXES, key))
                if all(named[a] == settings[a] for a in AXES if a not in axes):
                    candidates[tuple(named[a] for a in axes)] = sizes
                    measured.add(key)
            outcome = rule.decide(candidates, tuple(settings[a] for a in axes),
                                  allow_losses=allow)
            settings.update(dict(zip(axes, outcome.winner)))
        chosen = tuple(settings[a] for a in AXES)
        # The exhaustive search under the same rule: every grid point against the default.
        admitted = rule.decide(full, default_key, allow_losses=allow).scores
        pool = [k for k, sc in admitted.items() if sc > 0] or [default_key]
        best = min(pool, key=lambda k: score(full[k]))
        result[name] = {
            "tuner_choice": dict(zip(AXES, chosen)),
            "exhaustive_best": dict(zip(AXES, best)),
            "tuner_over_best": score(full[chosen]) / score(full[best]),
            "default_over_best": score(full[default_key]) / score(full[best]),
            "tuner_runs": len(measured) * REPEATS,
        }
    result["fresh"] = fresh_ratio(tuple(result["default_rule"]["tuner_choice"][a] for a in AXES),
                                  geo_best)
    print(json.dumps(result, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    saved = dict(result, grid=Path(result["grid"]).name)
    (args.out / "tuner_vs_exhaustive.json").write_text(json.dumps(saved, indent=1) + "\n")
    return 0 if result["fresh"]["tuner_over_unconstrained_best"] <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
