"""A step's decision by the plan's rule over its measurements, as decision.json keeps it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Hashable, Optional, Set

from commstack.matrix.model import MatrixError
from commstack.store.campaign_kind import kind_of_campaign
from commstack.tune import decide as rule
from commstack.tune.carry import Carried
from commstack.tune.case_run import CaseRun
from commstack.tune.measurements import single_benchmark, step_data
from commstack.tune.plan import Step


def decide_step(run: CaseRun, step: Step, incumbent: Dict[str, Any], step_dir: Path,
                carried: Optional[Carried] = None) -> dict:
    plan, case = run.plan, run.case
    single = single_benchmark(plan, case)
    tops: Set[int] = set()
    data = step_data(step_dir, step.axes, single, carried, tops)
    key = tuple(incumbent[ax] for ax in step.axes)
    if key not in data:
        raise MatrixError(f"{step_dir}: the incumbent {incumbent} has no successful runs; "
                          "see its records (commstack status / report)")
    per_group: Dict[Hashable, rule.Outcome] = {}
    if step.per:
        outcome, per_group = rule.decide_per_group(data, key, step.axes, step.per, plan.decision)
    else:
        outcome = rule.decide(data, key, plan.decision)

    def named(cand: Hashable) -> Dict[str, Any]:
        return dict(zip(step.axes, cand))

    kind = kind_of_campaign(step_dir)
    return {
        **({"simulated": kind.describe()} if kind.simulated else {}),
        "step": step.name,
        "case": case,
        "axes": step.axes,
        "incumbent": named(outcome.incumbent),
        "winner": named(outcome.winner),
        "changed": outcome.changed,
        "rule": {**plan.decision.as_dict(), "text": plan.decision.text()},
        "scores": [{"setting": named(c), "wins": s.wins, "losses": s.losses,
                    "median_speedup": s.median_speedup} for c, s in outcome.scores.items()],
        "bands": [{"from_bytes": b.first, "to_bytes": b.last, "best": named(b.best),
                   "gain": b.gain} for b in outcome.bands],
        "per": step.per,
        # The one process count the sizes were measured at (None: several): UCC's per-size
        # alltoall/allgather ranges are written for that team size alone.
        "processes": next(iter(tops)) if len(tops) == 1 else None,
        "per_group": {str(v): named(o.winner) for v, o in per_group.items()},
        "candidates": len(data),
    }

