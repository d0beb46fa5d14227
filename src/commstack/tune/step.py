"""One step of a case: its decision taken from another node type's campaign, or measured here
(the candidates the stack can run, an incumbent carried from the step before, raced or swept,
sizes refined) and decided by the plan's rule."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

from commstack.machine import Machine
from commstack.matrix.model import MatrixError
from commstack.store.files import read_json, write_new_json
from commstack.tune.carry import carried_incumbent, challengers
from commstack.tune.case_run import CaseRun
from commstack.tune.measurements import launched
from commstack.tune.plan import Step
from commstack.tune.runnable import runnable_settings
from commstack.tune.step_campaign import StepCampaign
from commstack.tune.step_decision import decide_step
from commstack.tune.step_matrix import coarse_of, step_parameters
from commstack.tune.step_race import race_step
from commstack.tune.step_refine import refine_step


def measured_elsewhere(step: Step, machine: Optional[Machine]) -> Optional[str]:
    """The node type a step is measured on when it is not this machine's node type; None when
    the step runs here (no ``node_type``, the same one, or a machine with one kind of node)."""
    if step.node_type is None or machine is None or not machine.node_types:
        return None
    if step.node_type not in machine.node_types:
        raise MatrixError(f"step {step.name}: node_type {step.node_type!r} is not a node type of "
                          f"{machine.name} ({', '.join(machine.node_types)})")
    return None if step.node_type == machine.node_type else step.node_type


def decision_from(step: Step, node_type: str, directory: Path,
                  elsewhere: Optional[Callable[[str], Path]]) -> dict:
    """The decision of ``step`` in the case ``directory`` of the campaign on ``node_type``."""
    if elsewhere is None:
        raise MatrixError(f"{directory.name}: step {step.name} is measured on node type "
                          f"{node_type!r} only, and no campaign of it is known")
    source = elsewhere(node_type) / directory.name / step.name / "decision.json"
    if not source.exists():
        raise MatrixError(f"{directory.name}: step {step.name} is measured on node type "
                          f"{node_type!r} only; tune there first (--node-type {node_type}): "
                          f"{source} does not exist yet")
    decision = dict(read_json(source))
    decision.update({"measured_on": node_type, "from": str(source)})
    return decision


def measure_step(run: CaseRun, step: Step, index: int, settings: Dict[str, Any],
                 source: Optional[Tuple[str, Path]]) -> Tuple[dict, int]:
    """The step run here and decided (its decision.json written); the runs it launched.
    ``settings``: those held; ``source``: the step whose campaign ran them (name, campaign)."""
    plan, case, step_dir = run.plan, run.case, run.directory / step.name
    candidates = plan.candidates(step, case)
    incumbent = {ax: settings[ax] for ax in step.axes}
    if incumbent not in candidates:
        candidates.append(incumbent)
    runnable = runnable_settings(run, settings, step.axes, candidates, incumbent, step_dir)
    for line in runnable.skipped:
        run.log(f"{run.directory.name}: step {step.name}: {line['text']}")
    coarse = coarse_of(plan, case, step_dir)
    incumbent_params = dict(step_parameters(plan, case, settings, step.axes, coarse), **incumbent)
    carried = carried_incumbent(plan.carry_incumbent, source, incumbent, runnable.candidates,
                                incumbent_params)
    state = dataclasses.replace(run.state(step.name, index, incumbent), skipped=runnable.skipped,
                                incumbent_from=carried.as_dict() if carried else None)
    campaign = StepCampaign(run, settings, step.axes, step_dir, state, runnable.block,
                            sizes=coarse)
    race = None
    repeats = int(plan.base.get("repeats", 1))
    if carried is not None and not plan.racing and carried.repeats < repeats:
        carried = None  # a race before left it fewer repeats: it runs here in full
    if plan.racing:
        runs, race = race_step(campaign, step, runnable.candidates, incumbent, carried)
        repeats = race["rounds"][-1]["repeats"]
    else:
        runs = campaign.sweep(challengers(runnable.candidates, incumbent, carried, repeats))
    refined = None
    if coarse is not None:
        refined = refine_step(campaign, step, incumbent, carried, coarse, repeats)
        runs += (refined or {}).get("runs", 0)
    decision = decide_step(run, step, incumbent, step_dir, carried)
    decision["skipped"] = runnable.skipped
    decision["left_out"] = runnable.left_out
    decision["runs"] = launched(step_dir) + (refined or {}).get("runs", 0)
    if carried is not None:
        decision["incumbent_from"] = carried.as_dict()
    if race is not None:
        decision["racing"] = race
    if refined is not None:
        decision["sizes"] = refined
    write_new_json(step_dir / "decision.json", decision)
    return decision, runs
