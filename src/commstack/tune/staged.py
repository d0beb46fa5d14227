"""Run a tuning plan: per case, each step is a sweep whose winner is fixed into the next steps.

Layout under results/<machine>/<campaign>/<case>/:
  <step>/            an ordinary campaign (matrix.yaml, points/, index/ ...)
  <step>/decision.json   what the step chose (written once: a rerun continues after it)
  verify/            default vs tuned, side by side
  tuned/             ucx.env, mca-params.conf, decision.json, tuned_vs_default.png

A step over named settings (plan ``settings:``) first asks the pre-flight what the stack has:
settings it cannot run are skipped, nothing launched for them, and the step's decision.json
says why (commstack.tune.capable).

A tune whose runs were simulated (a simulated flavour, SimGrid SMPI: commstack.simulated) says
so: each step's decision.json has ``simulated`` (the simulator and platform), and the case's
result carries the kind of its runs (``CaseResult.kind``) for what ``tuned/`` exports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from commstack import simulated as sim
from commstack.machine import Machine
from commstack.matrix import settings as S
from commstack.matrix.model import MatrixError
from commstack.schedulers.allocation import Allocation
from commstack.store.campaign_kind import kind_of_campaigns
from commstack.store.files import read_json
from commstack.tune.case_run import CaseRun
from commstack.tune.per_size import per_size_settings
from commstack.tune.plan import TunePlan
from commstack.tune.step import decision_from, measure_step, measured_elsewhere
from commstack.tune.verify import verify_tuned


@dataclass
class CaseResult:
    case: Dict[str, Any]
    settings: Dict[str, Any]  # the tuned values of every tuned parameter
    steps: List[dict]
    directory: Path
    runs: int
    launched: Dict[str, Any] = field(default_factory=dict)  # settings with named ones expanded
    defaults: Dict[str, Any] = field(default_factory=dict)  # the case's untuned configuration
    verify: Dict[str, Any] = field(default_factory=dict)  # tuned vs default: see verify_case
    chosen: Dict[str, Any] = field(default_factory=dict)  # what the steps chose
    # Simulated (on which platform) or measured: the runs of the steps run here and the verify
    kind: sim.Kind = sim.MEASURED

    @property
    def kept_default(self) -> bool:
        """The steps chose something else, but the verify found no significant gain over the
        default at any size: the default is what the case exports."""
        return self.chosen != self.settings


KEPT_DEFAULT = "kept the default: no significant gain"


def case_slug(case: Dict[str, Any]) -> str:
    parts = []
    for key, value in case.items():
        short = {"nodes": "n", "ranks_per_node": "ppn"}.get(key, "")
        text = str(value).replace(" ", "-").lower()
        parts.append(f"{short}{text}" if short else text)
    return "_".join(parts) or "case"


def tuned_parameters(plan: TunePlan) -> List[str]:
    names: List[str] = []
    for step in plan.steps:
        names += [n for n in step.axes if n not in names]
    return names


def run_plan(plan: TunePlan, root: Path, machine: Optional[Machine], allocation: Optional[Allocation],
             log: Callable[[str], None] = print,
             elsewhere: Optional[Callable[[str], Path]] = None,
             retry_failed: bool = False, budget: Optional[int] = None) -> List[CaseResult]:
    """``elsewhere(node_type)``: the campaign of this plan on another node type, where a step
    declared ``node_type: <that one>`` was measured (its decision is taken from there).
    ``retry_failed``: steps not decided yet run their failed runs again (a new attempt).
    ``budget``: runs per raced step at most (``run_case``)."""
    missing = [n for n in tuned_parameters(plan) if n not in plan.defaults]
    if missing:
        raise MatrixError(f"{plan.path}: defaults: no default for {', '.join(missing)} (the "
                          "untuned value is the incumbent every candidate must beat)")
    if budget is not None and plan.racing is None:
        raise MatrixError(f"{plan.path}: --budget: the plan does not race its candidates (add "
                          "racing: {first: 4, round: 2}); without racing every step takes "
                          "every candidate's repeats")
    return [run_case(plan, case, root / case_slug(case), machine, allocation, log, elsewhere,
                     retry_failed, budget)
            for case in plan.case_list()]


def run_case(plan: TunePlan, case: Dict[str, Any], directory: Path, machine: Optional[Machine],
             allocation: Optional[Allocation], log: Callable[[str], None],
             elsewhere: Optional[Callable[[str], Path]] = None,
             retry_failed: bool = False, budget: Optional[int] = None) -> CaseResult:
    """Each step of the case in turn, its winner held for the steps after it; then the tuned
    setting verified against the default. ``budget``: the runs each raced step launches at most
    (the race stops before a round that would go past it; its decision is taken on the runs
    made, and says so)."""
    run = CaseRun(plan, case, directory, machine, allocation, log, retry_failed, budget)
    defaults = plan.defaults_for(case)
    settings = dict(defaults)
    done_steps: List[dict] = []
    runs = 0
    source: Optional[Tuple[str, Path]] = None  # the step whose campaign ran the settings held
    for index, step in enumerate(plan.steps, start=1):
        if not plan.applies(step, case):
            continue
        step_dir = directory / step.name
        other = measured_elsewhere(step, machine)
        if other is not None:
            decision = decision_from(step, other, directory, elsewhere)
        elif (step_dir / "decision.json").exists():
            decision = read_json(step_dir / "decision.json")
        else:
            decision, ran = measure_step(run, step, index, settings, source)
            runs += ran
        log(f"{directory.name}: step {step.name}: "
            + ("keeps " if not decision["changed"] else "chooses ")
            + ", ".join(f"{k}={v}" for k, v in decision["winner"].items())
            + (f" (measured on {other}: {decision['from']})" if other else ""))
        settings.update(decision["winner"])
        done_steps.append(decision)
        if other is not None:
            source = None
        elif decision["changed"] or not decision.get("incumbent_from"):
            source = (step.name, step_dir)  # else the runs held stay where they were made
    names = tuned_parameters(plan)
    default = {n: defaults[n] for n in names}
    tuned = per_size_settings(done_steps, {n: settings[n] for n in names})
    verified = verify_tuned(run, settings, names, default, tuned)
    final = tuned if tuned == default or verified.tuned_stands else default
    if final != tuned:
        log(f"{directory.name}: verify: {KEPT_DEFAULT} (tuned "
            + ", ".join(f"{k}={v}" for k, v in tuned.items()) + " is faster at no size)")
    return CaseResult(case, final, done_steps, directory, runs + verified.runs,
                      S.apply(final, verified.block) if verified.block else dict(final), default,
                      verified.check, tuned, case_kind(directory))


def case_kind(directory: Path) -> sim.Kind:
    """Whether a case's runs (its step campaigns and verify under ``directory``) were simulated,
    and on which platforms, or measured."""
    return kind_of_campaigns(sorted(p.parent for p in directory.glob("*/matrix.yaml")))
