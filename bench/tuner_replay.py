"""The tuner lab replayed many times over: the staged tuner's steps run on the lab's noise-free
grids (bench/tuner_lab.py) with launch noise drawn anew for every realization, in seconds.

One lab tune is one draw of the noise; whether a share of cells within 5 % holds is a question
about many. Here each "launch" of a setting is its ground-truth row from the grid times one factor
exp(noise * N(0, 1)), the lab's noise model (bench/tuner_lab.py --noise: one factor per launch
scales SMPI's latency and bandwidth). The steps decide with commstack's own rule
(commstack.tune.decide), race with commstack.tune.racing, carry the incumbent (its runs from the
step before, only the repeats it lacks launched) and refine sizes with commstack.tune.sizes, as
`commstack tune` does; a model of the tune, not a run of it: the lab's runs are the measurement
(docs/measured.md "The tuner lab").

Usage:
  python bench/tuner_replay.py --grids WORK/results/bm-optimized3-36 [--noise 0.05]
      [--realizations 30] [--cases Allreduce,Allgather,Bcast,Reduce] [--racing 4,2,8]
      [--carry] [--coarse N] [--repeats R] [--plan plans/bm-optimized3-36/simulated-coll-tuned.yaml]

Runs are given against the exhaustive grid at the plan's repeats (8).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from tuner_lab import PLAN, WITHIN, grid_axes

from commstack.tune import decide as rule
from commstack.tune import racing
from commstack.tune import sizes as coarse_sizes
from commstack.tune.measurements import measurements
from commstack.tune.plan import TunePlan, load_plan
from commstack.tune.staged import case_slug

Truth = Dict[Tuple, Dict[int, float]]  # setting (all axes) -> size -> time
Bands = Tuple[List[str], List[rule.Band]]  # a step's axes and its per-size bands


def truth_of(grids: Path, plan: TunePlan, case: Dict[str, Any]) -> Tuple[List[str], Truth]:
    axes, _ = grid_axes(plan, case)
    found = measurements(grids / f"grid-{case_slug(case)}", axes, case["benchmarks"])
    return axes, {k: {s: v[0] for s, v in by.items() if s is not None} for k, by in found.items()}


class Launches:
    """A step's drawn launches: each one of a setting is its grid row times one noise factor."""

    def __init__(self, truth: Truth, keys: Dict[Any, Tuple], noise: float,
                 rng: random.Random, coarse: Optional[List[int]]) -> None:
        self.truth, self.keys, self.noise, self.rng, self.coarse = truth, keys, noise, rng, coarse
        self.data: rule.Measurements = {v: {} for v in keys}

    def launch(self, v: Any, sizes: Optional[List[int]] = None) -> None:
        factor = math.exp(self.noise * self.rng.gauss(0.0, 1.0)) if self.noise else 1.0
        wanted = sizes or self.coarse
        for size, t in self.truth[self.keys[v]].items():
            if wanted is None or size in wanted:
                self.data[v].setdefault(size, []).append(t * factor)

    def taken(self, v: Any) -> int:
        return min((len(s) for s in self.data[v].values()), default=0)

    def repeat(self, racing_now: List[Any], repeat: int) -> int:
        """One repeat of those racing that lack it (a race's ``run``)."""
        late = [v for v in racing_now if self.taken(v) < repeat]
        for v in late:
            self.launch(v)
        return len(late)

    def first(self, repeats: int) -> rule.Measurements:
        """Repeats 1 to ``repeats`` of every setting launched (a race's ``data_at``)."""
        return {v: {s: x[:repeats] for s, x in d.items()} for v, d in self.data.items() if d}


def tune(plan: TunePlan, case: Dict[str, Any], axes: List[str], truth: Truth, noise: float,
         rng: random.Random, race: Optional[racing.Racing], repeats: int, carry: bool,
         coarse: Optional[List[int]]) -> Tuple[Dict[str, Any], Bands, int]:
    """The steps of one case on drawn launches: the settings chosen, the last step's axes and
    bands, and the runs launched."""
    settings = dict(plan.defaults_for(case))
    runs, held = 0, None
    bands: Bands = ([], [])
    decision = plan.decision
    for step in plan.steps_for(case):
        values = [tuple(c[a] for a in step.axes) for c in plan.candidates(step, case)]
        incumbent = tuple(settings[a] for a in step.axes)
        if incumbent not in values:
            values.append(incumbent)
        keys = {v: tuple(dict(settings, **dict(zip(step.axes, v)))[a] for a in axes)
                for v in values}
        step_runs = Launches(truth, keys, noise, rng, coarse)
        data = step_runs.data
        if carry and held is not None:
            data[incumbent] = held
        if race is not None:
            found = racing.race(values, incumbent, race, decision, step_runs.repeat,
                                step_runs.first)
            runs += found.runs
            last = found.rounds[-1].repeats
        else:
            for v in values:
                while step_runs.taken(v) < repeats:
                    step_runs.launch(v)
                    runs += 1
            last = repeats
        final = {v: d for v, d in data.items() if d}
        outcome = rule.decide(final, incumbent, decision)
        if coarse is not None:
            found_sizes = coarse_sizes.refinement(outcome, final, decision.threshold)
            for v in found_sizes.candidates:
                for _ in range(last):
                    step_runs.launch(v, found_sizes.sizes)
                    runs += 1
            outcome = rule.decide({v: d for v, d in data.items() if d}, incumbent, decision)
        settings.update(dict(zip(step.axes, outcome.winner)))
        held = {s: x for s, x in data[outcome.winner].items() if coarse is None or s in coarse}
        bands = (step.axes, outcome.bands)
    return settings, bands, runs


def cells(axes: List[str], truth: Truth, chosen: Dict[str, Any], last: Bands
          ) -> Tuple[int, int]:
    """(cells within 5 % of the grid's best, cells): the last step's bands per size."""
    band_axes, bands = last
    sizes = sorted({s for by in truth.values() for s in by})
    within = 0
    for size in sizes:
        setting = dict(chosen)
        for band in bands:
            if band.first is not None and band.first <= size <= band.last:
                setting.update(dict(zip(band_axes, band.best)))
        key = tuple(setting[a] for a in axes)
        best = min(by[size] for by in truth.values() if size in by)
        within += truth[key][size] <= WITHIN * best
    return within, len(sizes)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grids", type=Path, required=True,
                   help="a tuner lab's results/bm-optimized3-36 (its grid-<case> campaigns)")
    p.add_argument("--plan", type=Path, default=PLAN)
    p.add_argument("--noise", type=float, default=0.0)
    p.add_argument("--realizations", type=int, default=30)
    p.add_argument("--cases", default="Allreduce,Allgather,Bcast,Reduce")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--racing", default=None, metavar="FIRST,ROUND,MOST")
    p.add_argument("--carry", action="store_true")
    p.add_argument("--coarse", type=int, default=None, metavar="N")
    p.add_argument("--repeats", type=int, default=None,
                   help="every candidate's repeats without racing (default: the plan's)")
    args = p.parse_args()
    plan = load_plan(args.plan)
    race = racing.Racing(*(int(x) for x in args.racing.split(","))) if args.racing else None
    repeats = args.repeats or int(plan.base.get("repeats", 1))
    wanted = args.cases.split(",")
    cases = [c for c in plan.case_list()
             if c.get("benchmarks") in wanted and c.get("nodes") == args.nodes]
    grids = {case_slug(c): truth_of(args.grids, plan, c) for c in cases}
    shares, ratios = [], []
    for seed in range(args.realizations):
        rng = random.Random(seed)
        good = total = runs = exhaustive = 0
        for case in cases:
            axes, truth = grids[case_slug(case)]
            msglog = plan.fill((plan.base.get("parameters") or {}).get("msglog"), case)
            coarse = (coarse_sizes.coarse(msglog, args.coarse, str(args.plan))
                      if args.coarse else None)
            chosen, last, ran = tune(plan, case, axes, truth, args.noise, rng, race, repeats,
                                     args.carry, coarse)
            w, n = cells(axes, truth, chosen, last)
            good, total, runs = good + w, total + n, runs + ran
            exhaustive += len(truth) * int(plan.base.get("repeats", 1))
        shares.append(good / total)
        ratios.append(runs / exhaustive)
    out = {"noise": args.noise, "realizations": args.realizations, "cases": wanted,
           "racing": args.racing, "carry": args.carry, "coarse": args.coarse,
           "repeats": repeats,
           "share_within": {"median": statistics.median(shares), "mean": statistics.mean(shares),
                            "min": min(shares), "max": max(shares),
                            "realizations_at_least_90pct": sum(s >= 0.9 for s in shares)},
           "run_ratio": {"median": statistics.median(ratios), "max": max(ratios)}}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
