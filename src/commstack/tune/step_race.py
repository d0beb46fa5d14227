"""A step's candidates raced (commstack.tune.racing) in its campaign, a round at a time."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Hashable, List, Optional, Tuple

from commstack.matrix.model import MatrixError
from commstack.tune import racing
from commstack.tune.carry import Carried, challengers
from commstack.tune.measurements import launched, single_benchmark, step_data
from commstack.tune.plan import Step
from commstack.tune.step_campaign import StepCampaign


def race_step(campaign: StepCampaign, step: Step, candidates: List[Dict[str, Any]],
              incumbent: Dict[str, Any], carried: Optional[Carried] = None
              ) -> Tuple[int, Dict[str, Any]]:
    """The runs launched and the race as decision.json keeps it (its campaign takes the race's
    most repeats). A carried incumbent runs only the repeats it lacks: its rounds read the step
    before's runs."""
    plan, step_dir = campaign.run.plan, campaign.directory
    assert plan.racing is not None
    axes = step.axes
    keys = [tuple(c[ax] for ax in axes) for c in candidates]
    budget = campaign.run.budget
    if budget is not None and budget < len(keys) * plan.racing.first:
        raise MatrixError(f"{step_dir}: --budget {budget}: the race's first round alone takes "
                          f"{len(keys)} candidates x {plan.racing.first} repeats = "
                          f"{len(keys) * plan.racing.first} runs")
    campaign = dataclasses.replace(campaign, repeats=plan.racing.most)
    prepared = campaign.prepare(challengers(candidates, incumbent, carried, plan.racing.most))
    held = tuple(incumbent[ax] for ax in axes)
    single = single_benchmark(plan, campaign.run.case)

    def run(running: List[Hashable], repeat: int) -> int:
        to_launch = [c for c in running
                     if not (carried and c == held and repeat <= carried.repeats)]
        chosen = [p for p in prepared.points
                  if tuple(p.point.as_dict().get(ax) for ax in axes) in to_launch]
        return campaign.launch(dataclasses.replace(prepared, points=chosen), repeat)

    found = racing.race(keys, tuple(incumbent[ax] for ax in axes), plan.racing, plan.decision,
                        run, lambda repeats: step_data(step_dir, axes, single, carried,
                                                       repeats=repeats, refined=False),
                        budget, lambda: launched(step_dir))
    campaign.run.log(f"{step_dir.parent.name}: step {step.name}: raced {len(keys)} candidates, "
                     f"{launched(step_dir)} runs ({found.stopped}; "
                     + ", ".join(f"{len(r.dropped)} dropped at {r.repeats} repeats"
                                 for r in found.rounds if r.dropped) + ")")
    return found.runs, racing.race_dict(found, lambda c: dict(zip(axes, c)), plan.racing,
                                        budget)
