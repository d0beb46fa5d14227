"""A step's refined sizes: the sizes between two coarse ones whose bests differ, measured by
those bests and the incumbent in ``<step>/refine``, a campaign of its own (commstack.tune.sizes)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

from commstack.tune import decide as rule
from commstack.tune import sizes as coarse_sizes
from commstack.tune.carry import Carried
from commstack.tune.measurements import REFINE, launched, single_benchmark, step_data
from commstack.tune.plan import Step
from commstack.tune.step_campaign import StepCampaign


def refine_step(campaign: StepCampaign, step: Step, incumbent: Dict[str, Any],
                carried: Optional[Carried], coarse: List[int], repeats: int
                ) -> Optional[Dict[str, Any]]:
    """What decision.json says of the refined sizes of the step measured in ``campaign`` (None:
    the incumbent has no runs, which the step's decision names)."""
    plan, step_dir, log = campaign.run.plan, campaign.directory, campaign.run.log
    single = single_benchmark(plan, campaign.run.case)
    key = tuple(incumbent[ax] for ax in step.axes)
    data = step_data(step_dir, step.axes, single, carried, refined=False)
    if key not in data:
        return None
    outcome = rule.decide(data, key, plan.decision)
    found = coarse_sizes.refinement(outcome, data, plan.decision.threshold)
    named = [dict(zip(step.axes, c)) for c in found.candidates]
    described = {"coarse": coarse, **found.as_dict(lambda c: dict(zip(step.axes, c)))}
    if not found.sizes:
        log(f"{step_dir.parent.name}: step {step.name}: the same best between every two coarse "
            "sizes; nothing to refine")
        return dict(described, runs=0)
    refine_dir = step_dir / REFINE
    dataclasses.replace(campaign, directory=refine_dir,
                        state=dataclasses.replace(campaign.state, refine=True), repeats=repeats,
                        sizes=found.sizes).sweep(named)
    described["runs"] = launched(refine_dir)
    log(f"{step_dir.parent.name}: step {step.name}: refined "
        + ", ".join(f"{a}-{b}" for a, b in found.between) + f" bytes: {len(found.sizes)} sizes "
        f"x {len(named)} candidates, {described['runs']} runs")
    return described
