"""A case's verify: the tuned setting against the default, side by side in one campaign, and
per message size where tuned is faster, slower or neither by the plan's rule."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from commstack import flavours
from commstack.launch.builder import LaunchError
from commstack.launch.stack import StackError
from commstack.matrix import settings as S
from commstack.matrix.load import matrix_from_text
from commstack.matrix.model import MatrixError
from commstack.plan import prepare
from commstack.tune import decide as rule
from commstack.tune import sizes as coarse_sizes
from commstack.tune.case_run import CaseRun
from commstack.tune.measurements import measurements, single_benchmark
from commstack.tune.runnable import runnable_settings
from commstack.tune.state import VERIFY
from commstack.tune.step_campaign import StepCampaign
from commstack.tune.step_matrix import step_matrix_text


@dataclass
class Verified:
    check: Dict[str, Any]  # tuned vs default: see verify_case; ``not_run``: why there is none
    runs: int
    block: S.Settings  # the named settings as the verify launched them

    @property
    def tuned_stands(self) -> bool:
        """Tuned is faster somewhere, or could not be verified: the steps' choice stands."""
        return bool(self.check["faster"]) or "not_run" in self.check


def verify_tuned(run: CaseRun, settings: Dict[str, Any], names: List[str],
                 default: Dict[str, Any], tuned: Dict[str, Any]) -> Verified:
    """The case's verify campaign swept (``settings``: those the steps left) and read back."""
    plan = run.plan
    unverifiable = simulator_refuses(run, settings, names, tuned)
    if unverifiable:
        run.log(f"{run.directory.name}: verify: not run: {unverifiable}")
        return Verified({"faster": [], "slower": [], "same": [], "rule": plan.decision.text(),
                         "not_run": unverifiable, "data": {}}, 0, {})
    verify_dir = run.directory / VERIFY
    pair = [default, tuned] if tuned != default else [default]
    runnable = runnable_settings(run, settings, names, pair, default, verify_dir)
    if len(runnable.candidates) != len(pair):
        raise MatrixError(f"{verify_dir}: the tuned setting cannot run here: "
                          + "; ".join(s["text"] for s in runnable.skipped))
    state = run.state(VERIFY, len(plan.steps) + 1, default)
    runs = StepCampaign(run, settings, names, verify_dir, state, runnable.block).sweep(pair)
    return Verified(verify_case(run, names, default, tuned), runs, runnable.block)


def simulator_refuses(run: CaseRun, settings: Dict[str, Any], names: List[str],
                      tuned: Dict[str, Any]) -> Optional[str]:
    """Why a simulator cannot run the tuned setting (SimGrid SMPI forces one algorithm per
    collective, so a per-size value cannot be simulated), or None: a real stack's verify runs,
    and fails as any sweep does when it cannot."""
    plan = run.plan
    stacks = (plan.base.get("stacks") or {}).values()
    if not any(flavours.get(str(s.get("flavour"))).simulated for s in stacks
               if str(s.get("flavour")) in flavours.FLAVOURS):
        return None
    text = step_matrix_text(plan, run.case, settings, names, [tuned], plan.settings or None)
    matrix = matrix_from_text(Path(VERIFY) / "matrix.yaml", text)
    try:
        prepare(matrix, run.machine, None, review=True)
    except (LaunchError, StackError) as exc:
        return (f"{exc}; the steps' choice stands as they decided it, measured against the "
                "incumbent in each step")
    return None


def verify_case(run: CaseRun, names: List[str], default: Dict[str, Any],
                tuned: Dict[str, Any]) -> Dict[str, Any]:
    """Tuned vs default per message size by the plan's rule (the sizes one family): where tuned
    is faster, slower, or neither. Every run of the two settings in this case is pooled (the
    verify sweep, side by side, plus the steps that measured them)."""
    plan = run.plan
    single = single_benchmark(plan, run.case)
    data = coarse_sizes.merged(*(measurements(step_dir, names, single) for step_dir in
                                 sorted(p.parent for p in run.directory.glob("*/matrix.yaml"))))
    default_key = tuple(default[n] for n in names)
    tuned_key = tuple(tuned[n] for n in names)
    found = {"faster": [], "slower": [], "same": []}
    if tuned_key != default_key and default_key in data and tuned_key in data:
        sizes = rule.compare_sizes(data[default_key], data[tuned_key], plan.decision)
        found = {"faster": sizes[rule.BETTER], "slower": sizes[rule.WORSE],
                 "same": sizes[rule.SAME]}
    return {**found, "rule": plan.decision.text(),
            "data": {"default": data.get(default_key, {}), "tuned": data.get(tuned_key, {})}}
