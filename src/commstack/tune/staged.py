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

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Hashable, List, Optional, Set, Tuple

import yaml

import commstack
from commstack import flavours, preflight
from commstack import simulated as sim
from commstack.aggregate import metric_of, result_rows
from commstack.launch.allocation import Allocation
from commstack.launch.builder import LaunchError
from commstack.launch.stack import StackError, resolve
from commstack.machine import Machine, machine_launcher
from commstack.matrix import settings as S
from commstack.matrix.load import load_matrix, matrix_from_text
from commstack.matrix.model import MatrixError, Stack
from commstack.plan import prepare
from commstack.preflight.capabilities import Components
from commstack.store.campaign import Campaign
from commstack.store.files import read_json, write_new, write_new_json
from commstack.sweep import SweepResult, run_sweep
from commstack.tune import capable, racing
from commstack.tune import decide as rule
from commstack.tune import sizes as coarse_sizes
from commstack.tune.carry import Carried, challengers
from commstack.tune.carry import measured as carried_from
from commstack.tune.per_size import per_size_settings
from commstack.tune.plan import Step, TunePlan
from commstack.tune.state import KEY, TuneState


class TuneInterrupted(Exception):
    """A step's sweep was interrupted; rerun the same command to continue."""


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


def measured_elsewhere(step: Step, machine: Optional[Machine]) -> Optional[str]:
    """The node type a step is measured on when it is not this machine's node type; None when
    the step runs here (no ``node_type``, the same one, or a machine with one kind of node)."""
    if step.node_type is None or machine is None or not machine.node_types:
        return None
    if step.node_type not in machine.node_types:
        raise MatrixError(f"step {step.name}: node_type {step.node_type!r} is not a node type of "
                          f"{machine.name} ({', '.join(machine.node_types)})")
    return None if step.node_type == machine.node_type else step.node_type


def _decision_from(step: Step, node_type: str, case: Dict[str, Any], directory: Path,
                   elsewhere: Optional[Callable[[str], Path]]) -> dict:
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


def run_case(plan: TunePlan, case: Dict[str, Any], directory: Path, machine: Optional[Machine],
             allocation: Optional[Allocation], log: Callable[[str], None],
             elsewhere: Optional[Callable[[str], Path]] = None,
             retry_failed: bool = False, budget: Optional[int] = None) -> CaseResult:
    """``budget``: the runs each raced step launches at most (the race stops before a round
    that would go past it; its decision is taken on the runs made, and says so)."""
    defaults = plan.defaults_for(case)
    settings = dict(defaults)
    done_steps: List[dict] = []
    runs = 0
    source: Optional[Tuple[str, Path]] = None  # the step whose campaign ran the settings held
    for index, step in enumerate(plan.steps, start=1):
        if not plan.applies(step, case):
            continue
        step_dir = directory / step.name
        decision_file = step_dir / "decision.json"
        other = measured_elsewhere(step, machine)
        if other is not None:
            decision = _decision_from(step, other, case, directory, elsewhere)
        elif decision_file.exists():
            decision = read_json(decision_file)
        else:
            candidates = plan.candidates(step, case)
            incumbent = {ax: settings[ax] for ax in step.axes}
            if incumbent not in candidates:
                candidates.append(incumbent)
            runnable = runnable_settings(plan, case, settings, step.axes, candidates, incumbent,
                                         step_dir, machine, allocation)
            for line in runnable.skipped:
                log(f"{directory.name}: step {step.name}: {line['text']}")
            study = dataclasses.replace(_study(plan, case, step.name, index, incumbent),
                                        skipped=runnable.skipped)
            coarse = coarse_of(plan, case, step_dir)
            carried = _carried(plan, case, settings, step.axes, incumbent, runnable.candidates,
                               source, coarse)
            if carried is not None:
                study = dataclasses.replace(study, incumbent_from=carried.as_dict())
            race = None
            repeats = int(plan.base.get("repeats", 1))
            if carried is not None and not plan.racing and carried.repeats < repeats:
                carried = None  # a race before left it fewer repeats: it runs here in full
            if plan.racing:
                ran, race = _race(plan, case, settings, step, runnable.candidates, incumbent,
                                  step_dir, machine, allocation, log, study, runnable.block,
                                  retry_failed, budget, carried, coarse)
                runs += ran
                repeats = race["rounds"][-1]["repeats"]
            else:
                runs += _sweep(plan, case, settings, step.axes,
                               challengers(runnable.candidates, incumbent, carried, repeats),
                               step_dir, machine, allocation, log, study, runnable.block,
                               retry_failed, sizes=coarse)
            refined = None
            if coarse is not None:
                refined = _refine(plan, case, settings, step, incumbent, step_dir, carried,
                                  coarse, repeats, machine, allocation, log, study,
                                  runnable.block, retry_failed)
                runs += (refined or {}).get("runs", 0)
            decision = _decide(plan, step, case, incumbent, step_dir, carried)
            decision["skipped"] = runnable.skipped
            decision["left_out"] = runnable.left_out
            decision["runs"] = _launched(step_dir) + (refined or {}).get("runs", 0)
            if carried is not None:
                decision["incumbent_from"] = carried.as_dict()
            if race is not None:
                decision["racing"] = race
            if refined is not None:
                decision["sizes"] = refined
            write_new_json(decision_file, decision)
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
    verify_dir = directory / "verify"
    unverifiable = _simulator_refuses(plan, case, settings, names, tuned, machine)
    if unverifiable:
        log(f"{directory.name}: verify: not run: {unverifiable}")
        check = {"faster": [], "slower": [], "same": [], "rule": plan.decision.text(),
                 "not_run": unverifiable, "data": {}}
        return CaseResult(case, tuned, done_steps, directory, runs, dict(tuned), default, check,
                          tuned, case_kind(directory))
    pair = [default, tuned] if tuned != default else [default]
    runnable = runnable_settings(plan, case, settings, names, pair, default, verify_dir, machine,
                                 allocation)
    if len(runnable.candidates) != len(pair):
        raise MatrixError(f"{verify_dir}: the tuned setting cannot run here: "
                          + "; ".join(s["text"] for s in runnable.skipped))
    runs += _sweep(plan, case, settings, names, pair, verify_dir, machine, allocation, log,
                   _study(plan, case, "verify", len(plan.steps) + 1, default), runnable.block,
                   retry_failed)
    check = verify_case(plan, case, directory, names, default, tuned)
    final = tuned if tuned == default or check["faster"] else default
    if final != tuned:
        log(f"{directory.name}: verify: {KEPT_DEFAULT} (tuned "
            + ", ".join(f"{k}={v}" for k, v in tuned.items()) + " is faster at no size)")
    return CaseResult(case, final, done_steps, directory, runs,
                      S.apply(final, runnable.block) if runnable.block else dict(final), default,
                      check, tuned, case_kind(directory))


def _simulator_refuses(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any],
                       names: List[str], tuned: Dict[str, Any], machine: Optional[Machine]
                       ) -> Optional[str]:
    """Why a simulator cannot run the tuned setting (SimGrid SMPI forces one algorithm per
    collective, so a per-size value cannot be simulated), or None: a real stack's verify runs,
    and fails as any sweep does when it cannot."""
    stacks = (plan.base.get("stacks") or {}).values()
    if not any(flavours.get(str(s.get("flavour"))).simulated for s in stacks
               if str(s.get("flavour")) in flavours.FLAVOURS):
        return None
    text = step_matrix_text(plan, case, settings, names, [tuned], plan.settings or None)
    matrix = matrix_from_text(Path("verify") / "matrix.yaml", text)
    try:
        prepare(matrix, machine, None, review=True)
    except (LaunchError, StackError) as exc:
        return (f"{exc}; the steps' choice stands as they decided it, measured against the "
                "incumbent in each step")
    return None


def case_kind(directory: Path) -> sim.Kind:
    """Whether a case's runs (its step campaigns and verify under ``directory``) were simulated,
    and on which platforms, or measured."""
    return sim.kind_of_campaigns(sorted(p.parent for p in directory.glob("*/matrix.yaml")))


def verify_case(plan: TunePlan, case: Dict[str, Any], directory: Path, names: List[str],
                default: Dict[str, Any], tuned: Dict[str, Any]) -> Dict[str, Any]:
    """Tuned vs default per message size by the plan's rule (the sizes one family): where tuned
    is faster, slower, or neither. Every run of the two settings in this case is pooled (the
    verify sweep, side by side, plus the steps that measured them)."""
    single = _single_benchmark(plan, case)
    data = coarse_sizes.merged(*(measurements(step_dir, names, single) for step_dir in
                                 sorted(p.parent for p in directory.glob("*/matrix.yaml"))))
    default_key = tuple(default[n] for n in names)
    tuned_key = tuple(tuned[n] for n in names)
    found = {"faster": [], "slower": [], "same": []}
    if tuned_key != default_key and default_key in data and tuned_key in data:
        sizes = rule.compare_sizes(data[default_key], data[tuned_key], plan.decision)
        found = {"faster": sizes[rule.BETTER], "slower": sizes[rule.WORSE],
                 "same": sizes[rule.SAME]}
    return {**found, "rule": plan.decision.text(),
            "data": {"default": data.get(default_key, {}), "tuned": data.get(tuned_key, {})}}


@dataclass
class Runnable:
    """A step's candidates the stack can run, the named settings as launched, and the rest."""

    candidates: List[Dict[str, Any]]
    block: S.Settings  # the matrix's `settings:` (only the names used, as launched)
    skipped: List[Dict[str, Any]] = field(default_factory=list)
    left_out: List[str] = field(default_factory=list)


def _components(stack: Stack, machine: Optional[Machine], allocation: Optional[Allocation]
                ) -> Optional[Components]:
    """The pre-flight's component listing of a stack, or None when it cannot say (the pre-flight
    of the sweep then warns or refuses as usual)."""
    try:
        resolved = resolve(stack, machine_launcher(machine, stack.flavour, allocation))
    except StackError:
        return None
    caps = preflight.default().capabilities(resolved)
    if caps.flavour.component_tool() is None:
        return None
    comps = caps.components()
    return comps if isinstance(comps, Components) else None


def runnable_settings(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any],
                      axes: List[str], candidates: List[Dict[str, Any]],
                      incumbent: Dict[str, Any], step_dir: Path, machine: Optional[Machine],
                      allocation: Optional[Allocation]) -> Runnable:
    """Drop the candidates whose named settings the stack cannot run (capable.check_setting);
    raise when the incumbent is one of them (there would be nothing to beat)."""
    fixed = {k: v for k, v in settings.items() if k not in axes}
    rows = [dict(fixed, **c) for c in candidates]
    used = {axis: [n for n in named if any(str(r.get(axis)) == n for r in rows)]
            for axis, named in plan.settings.items()}
    used = {axis: names for axis, names in used.items() if names}
    if not used:
        return Runnable(candidates, {})
    full = {axis: {n: plan.settings[axis][n] for n in names} for axis, names in used.items()}
    probe = matrix_from_text(step_dir / "matrix.yaml",
                             step_matrix_text(plan, case, settings, axes, candidates, full))
    base_stack = {**(plan.base.get("parameters") or {}), **case}.get("stack")
    comps: Dict[str, Optional[Components]] = {}
    checks: Dict[Tuple[str, str, str], capable.SettingCheck] = {}
    out = Runnable([], {})
    for cand, row in zip(candidates, rows):
        stack = row.get("stack") or base_stack or next(iter(probe.stacks))
        if stack not in comps:
            comps[stack] = _components(probe.stacks[stack], machine, allocation)
        why = None
        for axis in used:
            name = str(row[axis])
            key = (stack, axis, name)
            if key not in checks:
                found = comps[stack]
                checks[key] = (capable.check_setting(full[axis][name], found) if found
                               else capable.SettingCheck(dict(full[axis][name])))
            check = checks[key]
            if check.skipped:
                why = why or check.skipped
                entry = {"axis": axis, "setting": name, "stack": stack, "reason": check.skipped,
                         "text": capable.skipped_text(name, check.skipped)}
                if entry not in out.skipped:
                    out.skipped.append(entry)
        if why is None:
            out.candidates.append(cand)
        elif cand == incumbent:
            raise MatrixError(f"{plan.path}: {', '.join(f'{k}={v}' for k, v in incumbent.items())}"
                              f" (the incumbent of {step_dir.name}) cannot run on stack {stack!r}: "
                              f"{why}; choose a default the stack can run")
    for axis, names in used.items():
        out.block[axis] = {}
        for name in names:
            mine = [c for (_, a, n), c in checks.items() if (a, n) == (axis, name) and not c.skipped]
            if not mine:
                continue
            kept = {p: v for p, v in full[axis][name].items()
                    if any(p in c.params for c in mine)}  # left out only where no stack has it
            out.block[axis][name] = kept
            out.left_out += [f"{name}: {text}" for c in mine for text in c.left_out
                             if f"{name}: {text}" not in out.left_out]
    return out


def step_matrix_text(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any],
                     axes: List[str], candidates: List[Dict[str, Any]],
                     block: Optional[S.Settings] = None, repeats: Optional[int] = None,
                     sizes: Optional[List[int]] = None) -> str:
    """The matrix of one step of one case: the plan's base and the case, the settings held so
    far, and the step's ``candidates`` over ``axes`` (the review of a plan prints the same);
    ``repeats``: the step's, when not the base's (a race's most); ``sizes``: the message sizes
    its runs measure, when not the case's msglog range (commstack.tune.sizes)."""
    base = {k: v for k, v in plan.base.items() if k != "parameters"}
    if repeats is not None:
        base["repeats"] = repeats
    data = dict(base, parameters=_parameters(plan, case, settings, axes, sizes))
    if block:
        data["settings"] = block
    data["zip"] = [{ax: [c[ax] for c in candidates] for ax in axes}]
    header = "# Written by `commstack tune`: one step of a staged tuning (candidates zipped).\n"
    return header + yaml.safe_dump(data, sort_keys=False)


def _parameters(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any],
                axes: List[str], sizes: Optional[List[int]] = None) -> Dict[str, Any]:
    """A step's fixed parameters: the plan's base and the case, and the settings held so far
    but for the step's own axes; ``sizes`` in place of the msglog range."""
    parameters = {k: plan.fill(v, case) for k, v in (plan.base.get("parameters") or {}).items()}
    parameters.update(case)
    parameters.update({k: v for k, v in settings.items() if k not in axes})
    if sizes is not None:
        parameters.pop(coarse_sizes.MSGLOG, None)
        parameters[coarse_sizes.MSGLEN] = ",".join(map(str, sizes))
    return parameters


def coarse_of(plan: TunePlan, case: Dict[str, Any], where: Path) -> Optional[List[int]]:
    """The coarse sizes a case's steps measure first (None: the plan measures every size)."""
    if plan.coarse_sizes is None:
        return None
    msglog = _parameters(plan, case, {}, []).get(coarse_sizes.MSGLOG)
    if msglog is None:
        raise MatrixError(f"{where}: coarse_sizes: the case has no msglog (the range of sizes "
                          "to choose from)")
    return coarse_sizes.coarse(msglog, plan.coarse_sizes, str(where))


def _carried(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any], axes: List[str],
             incumbent: Dict[str, Any], candidates: List[Dict[str, Any]],
             source: Optional[Tuple[str, Path]], sizes: Optional[List[int]]
             ) -> Optional[Carried]:
    """The incumbent's runs in the step before (``source``: its name and campaign), when the
    plan carries incumbents, the step has a challenger and the incumbent was run there as this
    step would run it."""
    if not plan.carry_incumbent or source is None or incumbent not in candidates \
            or len(candidates) < 2:
        return None
    return carried_from(source[0], source[1],
                        dict(_parameters(plan, case, settings, axes, sizes), **incumbent))


def _study(plan: TunePlan, case: Dict[str, Any], step: str, index: int,
           incumbent: Dict[str, Any]) -> TuneState:
    """What a step campaign's campaign.json says about the tuning it belongs to (``tune``):
    reports show the study's sections only for such campaigns, with this incumbent as the
    default every candidate must beat, by this rule."""
    return TuneState(str(plan.path), case, step, index, [s.name for s in plan.steps_for(case)],
                     list(incumbent), incumbent, plan.decision)


def _sweep(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any], axes: List[str],
           candidates: List[Dict[str, Any]], step_dir: Path, machine: Optional[Machine],
           allocation: Optional[Allocation], log: Callable[[str], None],
           study: TuneState, block: Optional[S.Settings] = None,
           retry_failed: bool = False, repeats: Optional[int] = None,
           sizes: Optional[List[int]] = None) -> int:
    prepared = _step_campaign(plan, case, settings, axes, candidates, step_dir, machine,
                              allocation, study, block, repeats, sizes)
    return _run(prepared, step_dir, log, retry_failed)


def _run(prepared, step_dir: Path, log: Callable[[str], None], retry_failed: bool,
         repeat: Optional[int] = None) -> int:
    """One sweep of a step's campaign (of one repeat when given); the runs it launched."""
    result: SweepResult = run_sweep(prepared, step_dir, log=log, retry_failed=retry_failed,
                                    only_repeat=repeat)
    if result.interrupted:
        raise TuneInterrupted(f"{step_dir}: interrupted; run the same command to continue")
    if result.deferred:
        raise TuneInterrupted(f"{step_dir}: {result.deferred} runs left for a longer allocation")
    return result.ran


def _step_campaign(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any],
                   axes: List[str], candidates: List[Dict[str, Any]], step_dir: Path,
                   machine: Optional[Machine], allocation: Optional[Allocation],
                   study: TuneState, block: Optional[S.Settings] = None,
                   repeats: Optional[int] = None, sizes: Optional[List[int]] = None):
    """The step's campaign (its matrix written once, campaign.json with the study) and its
    sweep prepared."""
    step_dir.mkdir(parents=True, exist_ok=True)
    text = step_matrix_text(plan, case, settings, axes, candidates, block, repeats, sizes)
    matrix_path = step_dir / "matrix.yaml"
    if matrix_path.exists():
        if matrix_path.read_text() != text:
            raise MatrixError(f"{matrix_path}: the plan or an earlier decision changed since this "
                              "step started; tune into a new campaign (--campaign) or remove it")
    else:
        write_new(matrix_path, text.encode())
    matrix = load_matrix(matrix_path)
    campaign = Campaign(step_dir)  # written before run_sweep's, so it carries the marker
    campaign.ensure({"campaign": campaign.name, "machine": campaign.machine,
                     "benchmark": matrix.benchmark.name, "created": time.time(),
                     "matrix": str(matrix.path), "commstack_version": commstack.__version__,
                     KEY: study.as_dict()})
    return prepare(matrix, machine, allocation)


def _race(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any], step: Step,
          candidates: List[Dict[str, Any]], incumbent: Dict[str, Any], step_dir: Path,
          machine: Optional[Machine], allocation: Optional[Allocation],
          log: Callable[[str], None], study: TuneState, block: Optional[S.Settings],
          retry_failed: bool, budget: Optional[int], carried: Optional[Carried] = None,
          sizes: Optional[List[int]] = None) -> Tuple[int, Dict[str, Any]]:
    """A step's candidates raced (commstack.tune.racing): the runs launched and the race as
    decision.json keeps it. A carried incumbent runs only the repeats it lacks: its rounds read
    the step before's runs."""
    assert plan.racing is not None
    axes = step.axes
    keys = [tuple(c[ax] for ax in axes) for c in candidates]
    if budget is not None and budget < len(keys) * plan.racing.first:
        raise MatrixError(f"{step_dir}: --budget {budget}: the race's first round alone takes "
                          f"{len(keys)} candidates x {plan.racing.first} repeats = "
                          f"{len(keys) * plan.racing.first} runs")
    prepared = _step_campaign(plan, case, settings, axes,
                              challengers(candidates, incumbent, carried, plan.racing.most),
                              step_dir, machine, allocation, study, block, plan.racing.most,
                              sizes)
    held = tuple(incumbent[ax] for ax in axes)
    single = _single_benchmark(plan, case)

    def run(racing: List[Hashable], repeat: int) -> int:
        launched = [c for c in racing
                    if not (carried and c == held and repeat <= carried.repeats)]
        chosen = [p for p in prepared.points
                  if tuple(p.point.as_dict().get(ax) for ax in axes) in launched]
        return _run(dataclasses.replace(prepared, points=chosen), step_dir, log, retry_failed,
                    repeat)

    found = racing.race(keys, tuple(incumbent[ax] for ax in axes), plan.racing, plan.decision,
                        run, lambda repeats: step_data(step_dir, axes, single, carried,
                                                       repeats=repeats, refined=False),
                        budget, lambda: _launched(step_dir))
    log(f"{step_dir.parent.name}: step {step.name}: raced {len(keys)} candidates, "
        f"{_launched(step_dir)} runs ({found.stopped}; "
        + ", ".join(f"{len(r.dropped)} dropped at {r.repeats} repeats" for r in found.rounds
                    if r.dropped) + ")")
    return found.runs, racing.race_dict(found, lambda c: dict(zip(axes, c)), plan.racing,
                                        budget)


REFINE = "refine"  # a step's campaign of the sizes between coarse ones (commstack.tune.sizes)


def _refine(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any], step: Step,
            incumbent: Dict[str, Any], step_dir: Path, carried: Optional[Carried],
            coarse: List[int], repeats: int, machine: Optional[Machine],
            allocation: Optional[Allocation], log: Callable[[str], None],
            study: TuneState, block: Optional[S.Settings], retry_failed: bool
            ) -> Optional[Dict[str, Any]]:
    """The sizes between two coarse ones whose bests differ, measured by those bests and the
    incumbent in ``<step>/refine`` (a campaign of its own); what decision.json says of it."""
    single = _single_benchmark(plan, case)
    key = tuple(incumbent[ax] for ax in step.axes)
    data = step_data(step_dir, step.axes, single, carried, refined=False)
    if key not in data:
        return None  # _decide names the problem
    outcome = rule.decide(data, key, plan.decision)
    found = coarse_sizes.refinement(outcome, data, plan.decision.threshold)
    named = [dict(zip(step.axes, c)) for c in found.candidates]
    described = {"coarse": coarse, **found.as_dict(lambda c: dict(zip(step.axes, c)))}
    if not found.sizes:
        log(f"{step_dir.parent.name}: step {step.name}: the same best between every two coarse "
            "sizes; nothing to refine")
        return dict(described, runs=0)
    refine_dir = step_dir / REFINE
    _sweep(plan, case, settings, step.axes, named, refine_dir, machine, allocation, log,
           dataclasses.replace(study, refine=True), block, retry_failed, repeats, found.sizes)
    described["runs"] = _launched(refine_dir)
    log(f"{step_dir.parent.name}: step {step.name}: refined "
        + ", ".join(f"{a}-{b}" for a, b in found.between) + f" bytes: {len(found.sizes)} sizes "
        f"x {len(named)} candidates, {described['runs']} runs")
    return described


def _single_benchmark(plan: TunePlan, case: Dict[str, Any]) -> Optional[str]:
    benchmark = case.get("benchmarks", (plan.base.get("parameters") or {}).get("benchmarks"))
    return benchmark if isinstance(benchmark, str) and " " not in benchmark else None


def step_data(step_dir: Path, axes: List[str], benchmark: Optional[str],
              carried: Optional[Carried], processes: Optional[Set[int]] = None,
              repeats: Optional[int] = None, refined: bool = True
              ) -> Dict[Tuple, Dict[Optional[int], List[float]]]:
    """A step's measurements (:func:`measurements`), its carried incumbent's read where they
    were made, and (``refined``) those of the sizes it refined."""
    data = measurements(step_dir, axes, benchmark, processes, repeats)
    if carried is not None:  # its repeats there, and those it lacked, run here
        upto = carried.repeats if repeats is None else min(repeats, carried.repeats)
        data = coarse_sizes.merged(measurements(carried.directory, axes, benchmark, processes,
                                                upto, carried.points), data)
    refine = step_dir / REFINE
    if refined and (refine / "matrix.yaml").exists():
        data = coarse_sizes.merged(data, measurements(refine, axes, benchmark, processes,
                                                      repeats))
    return data


def _launched(step_dir: Path) -> int:
    """Every attempt the step's campaign holds (a run launched, whatever became of it)."""
    return sum(1 for _ in step_dir.glob("points/*/rep*.try*/record.json"))


def measurements(campaign_dir: Path, axes: List[str], benchmark: Optional[str],
                 processes: Optional[Set[int]] = None, repeats: Optional[int] = None,
                 points: Optional[FrozenSet[str]] = None
                 ) -> Dict[Tuple, Dict[Optional[int], List[float]]]:
    """Per candidate (tuple of axis values) and message size: the metric of every repeat (of
    repeats 1 to ``repeats`` when given: a race's round), taken from the rows at the largest
    process count of the case's benchmark (each record's such count is added to ``processes``
    when given); ``points``: of these points only (a carried incumbent's)."""
    found: Dict[Tuple, Dict[Optional[int], List[float]]] = {}
    by_record: Dict[str, Tuple[dict, List[dict]]] = {}
    records = Campaign(campaign_dir).records()
    if repeats is not None:
        records = (r for r in records if r.repeat <= repeats)
    if points is not None:
        records = (r for r in records if r.point_id in points)
    for rec, row in result_rows(records):
        if row.get("status", "ok") == "ok" and (
                benchmark is None or row.get("benchmark", benchmark).lower() == benchmark.lower()):
            by_record.setdefault(id(rec), (rec, []))[1].append(row)
    for rec, rows in by_record.values():
        top = max((r.get("np") or 0) for r in rows)
        if processes is not None and top:
            processes.add(top)
        key = tuple(rec.params.get(ax) for ax in axes)
        for row in rows:
            metric = metric_of(row, rec.benchmark)
            if metric is None or (row.get("np") or 0) != top:
                continue
            value = float(row[metric[0]])
            found.setdefault(key, {}).setdefault(row.get("bytes"), []).append(
                value if metric[1] else 1.0 / value)  # bandwidth: lower 1/bw is better
    return found


def _decide(plan: TunePlan, step: Step, case: Dict[str, Any], incumbent: Dict[str, Any],
            step_dir: Path, carried: Optional[Carried] = None) -> dict:
    single = _single_benchmark(plan, case)
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

    kind = sim.kind_of_campaign(step_dir)
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

