"""The matrix of one step of one case, as text: what the step's campaign sweeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from commstack.matrix import settings as S
from commstack.matrix.model import MatrixError
from commstack.tune import sizes as coarse_sizes
from commstack.tune.plan import TunePlan


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
    data = dict(base, parameters=step_parameters(plan, case, settings, axes, sizes))
    if block:
        data["settings"] = block
    data["zip"] = [{ax: [c[ax] for c in candidates] for ax in axes}]
    header = "# Written by `commstack tune`: one step of a staged tuning (candidates zipped).\n"
    return header + yaml.safe_dump(data, sort_keys=False)


def step_parameters(plan: TunePlan, case: Dict[str, Any], settings: Dict[str, Any],
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
    msglog = step_parameters(plan, case, {}, []).get(coarse_sizes.MSGLOG)
    if msglog is None:
        raise MatrixError(f"{where}: coarse_sizes: the case has no msglog (the range of sizes "
                          "to choose from)")
    return coarse_sizes.coarse(msglog, plan.coarse_sizes, str(where))
