"""A tuning plan's step sweeps as matrices, for review before anything runs (`commstack plan`).

Which candidates a step sweeps after the first depends on earlier winners; a review shows each
step as if every earlier step kept its default (the plan's `defaults`), with every named setting
the step uses (the pre-flight's filtering needs the stacks, which a review does not have).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List

from commstack.matrix.load import matrix_from_text
from commstack.matrix.model import Matrix, MatrixError
from commstack.tune.plan import TunePlan
from commstack.tune.staged import case_slug, step_matrix_text, tuned_parameters


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
            text = step_matrix_text(plan, case, dict(defaults), step.axes, candidates, used)
            where = plan.path.parent / case_slug(case) / step.name / "matrix.yaml"
            yield StepSweep(case, step.name, list(step.axes), matrix_from_text(where, text))
