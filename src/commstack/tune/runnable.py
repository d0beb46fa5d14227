"""A step's candidates the stack can run: named settings the pre-flight finds the stack without
are skipped, nothing launched for them (commstack.tune.capable)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from commstack import preflight
from commstack.launch.stack import StackError, resolve
from commstack.machine import Machine, machine_launcher
from commstack.matrix import settings as S
from commstack.matrix.load import matrix_from_text
from commstack.matrix.model import MatrixError, Stack
from commstack.preflight.capabilities import Components
from commstack.schedulers.allocation import Allocation
from commstack.tune import capable
from commstack.tune.case_run import CaseRun
from commstack.tune.step_matrix import step_matrix_text


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


def runnable_settings(run: CaseRun, settings: Dict[str, Any], axes: List[str],
                      candidates: List[Dict[str, Any]], incumbent: Dict[str, Any],
                      step_dir: Path) -> Runnable:
    """Drop the candidates whose named settings the stack cannot run (capable.check_setting);
    raise when the incumbent is one of them (there would be nothing to beat)."""
    plan, case = run.plan, run.case
    fixed = {k: v for k, v in settings.items() if k not in axes}
    rows = [dict(fixed, **c) for c in candidates]
    used = {axis: [n for n in named if any(str(r.get(axis)) == n for r in rows)]
            for axis, named in plan.settings.items()}
    used = {axis: names for axis, names in used.items() if names}
    if not used:
        return Runnable(candidates, {})
    full = {axis: {n: plan.settings[axis][n] for n in names} for axis, names in used.items()}
    text = step_matrix_text(plan, case, settings, axes, candidates, full)
    probe = matrix_from_text(step_dir / "matrix.yaml", text)
    base_stack = {**(plan.base.get("parameters") or {}), **case}.get("stack")
    comps: Dict[str, Optional[Components]] = {}
    checks: Dict[Tuple[str, str, str], capable.SettingCheck] = {}
    out = Runnable([], {})
    for cand, row in zip(candidates, rows):
        stack = row.get("stack") or base_stack or next(iter(probe.stacks))
        if stack not in comps:
            comps[stack] = _components(probe.stacks[stack], run.machine, run.allocation)
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

