"""A tuning plan's step sweeps as matrices, for review before anything runs (`commstack plan`).

Which candidates a step sweeps after the first depends on earlier winners; a review shows each
step as if every earlier step kept its default (the plan's `defaults`), with every named setting
the step uses (the pre-flight's filtering needs the stacks, which a review does not have).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

from commstack.markdown_table import table
from commstack.matrix.expand import expand
from commstack.matrix.load import matrix_from_text
from commstack.matrix.model import Matrix, MatrixError
from commstack.tune.plan import TunePlan
from commstack.tune.staged import case_slug, tuned_parameters
from commstack.tune.step_matrix import coarse_of, step_matrix_text


@dataclass
class StepSweep:
    case: Dict[str, Any]
    step: str
    axes: List[str]
    matrix: Matrix


def step_sweeps(plan: TunePlan) -> Iterator[StepSweep]:
    missing = [n for n in tuned_parameters(plan) if n not in plan.defaults]
    if missing:
        raise MatrixError(f"{plan.path}: defaults: no default for {', '.join(missing)}")
    for case in plan.case_list():
        defaults = plan.defaults_for(case)
        for step in plan.steps_for(case):
            candidates = plan.candidates(step, case)
            incumbent = {axis: defaults[axis] for axis in step.axes}
            if incumbent not in candidates:
                candidates.append(incumbent)
            fixed = {k: v for k, v in plan.defaults.items() if k not in step.axes}
            rows = [dict(fixed, **c) for c in candidates]
            used = {axis: {name: plan.settings[axis][name] for name in named
                           if any(str(r.get(axis)) == name for r in rows)}
                    for axis, named in plan.settings.items()}
            used = {axis: named for axis, named in used.items() if named}
            where = plan.path.parent / case_slug(case) / step.name / "matrix.yaml"
            text = step_matrix_text(plan, case, dict(defaults), step.axes, candidates, used,
                                    sizes=coarse_of(plan, case, where))
            yield StepSweep(case, step.name, list(step.axes), matrix_from_text(where, text))


def expected_runs(plan: TunePlan, budget: Optional[int] = None) -> List[str]:
    """The runs the plan takes, per case and step, before anything runs: every candidate at
    ``base.repeats`` (no racing), and with ``racing:`` the fewest a race takes (the first round,
    every challenger dropped after it) and the most (every candidate to ``racing.most``, or the
    ``budget``); with ``carry_incumbent``, a step after the first launches every candidate
    but the incumbent; the verify sweep (default and tuned at
    ``base.repeats``) and the exhaustive grid of every step's values at ``base.repeats``."""
    repeats = int(plan.base.get("repeats", 1))
    rows, totals = [], [0, 0, 0]
    grids = 0
    first_steps = {_case(case): plan.steps_for(case)[0].name for case in plan.case_list()
                   if plan.steps_for(case)}
    for sweep in step_sweeps(plan):
        count = len(expand(sweep.matrix))
        if plan.carry_incumbent and first_steps.get(_case(sweep.case)) != sweep.step:
            count -= 1  # the incumbent's runs are the step before's
        plain = count * repeats
        if plan.racing:
            fewest = count * plan.racing.first  # every challenger dropped after one round
            most = count * plan.racing.most  # none dropped
            if budget is not None:
                most = min(most, max(budget, fewest))
            raced = [fewest, most]
        else:
            raced = [plain, plain]
        totals = [totals[0] + plain, totals[1] + raced[0], totals[2] + raced[1]]
        rows.append([_case(sweep.case), sweep.step, count, plain,
                     f"{raced[0]}-{raced[1]}" if plan.racing else "-"])
    cases = plan.case_list()
    for case in cases:
        values: Dict[str, set] = {}
        for step in plan.steps_for(case):
            for cand in plan.candidates(step, case):
                for key, value in cand.items():
                    values.setdefault(key, set()).add(str(value))
        size = 1
        for found in values.values():
            size *= len(found)
        grids += size * repeats
    verify = 2 * repeats * len(cases)
    lines = [f"# {plan.path}: {len(cases)} case(s), base.repeats {repeats}"
             + (f"; {plan.racing.text()}" if plan.racing else "; no racing (every candidate "
                "takes base.repeats)") + (f"; budget {budget} runs per step" if budget else "")
             + ("; incumbents carried (a step after the first does not run its incumbent "
                "again)" if plan.carry_incumbent else "")
             + (f"; every {plan.coarse_sizes}th size of msglog first (a step then refines "
                "where its best changes: runs of the candidates near the best there, not counted "
                "here)" if plan.coarse_sizes else ""),
             ""]
    lines += table(["case", "step", "candidates run", "runs without racing", "raced: fewest-most"],
                   rows, "llrrr")
    lines += ["", f"steps: {totals[0]} runs without racing"
              + (f", {totals[1]}-{totals[2]} raced" if plan.racing else "")
              + f"; verify: at most {verify}; the exhaustive grid of every step's values: "
              f"{grids} runs"]
    return lines


def _case(case: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "-"
