"""The pre-flight over a plan: every point's variables against its stack's capabilities.

Checked per point: the environment its parameters set (``UCX_TLS``, ``mca.x`` as
``OMPI_MCA_x``, ...) and its stack's ``env``; not what commstack adds itself (placement and
report variables). The verdict for one (stack, variables) pair is computed once per process, so
a sweep of thousands of points costs a handful of tool runs (and none when the disk cache holds
them).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

from commstack.launch.stack import ResolvedStack, StackError
from commstack.matrix.parameters import matrix_name, point_env
from commstack.plan import Plan
from commstack.preflight import rules
from commstack.preflight.capabilities import Components, StackCapabilities, UcxResources
from commstack.preflight.tools import ToolCache

ALLOW_FLAG = "--allow-unlisted"
_MCA = "OMPI_MCA_"


class PreflightError(StackError):
    """A plan asking a stack for what it cannot do (exit 2, nothing launched)."""


@dataclass(frozen=True)
class Problem:
    stack: str
    variable: str
    value: str
    reason: str
    overridable: bool


@dataclass
class StackVerdict:
    """The answer for one stack and one set of variables."""

    problems: List[Problem] = field(default_factory=list)
    unchecked: Dict[str, str] = field(default_factory=dict)  # variable -> why not checked
    warnings: List[str] = field(default_factory=list)


@dataclass
class Verdict:
    problems: Dict[Problem, List[str]] = field(default_factory=dict)  # -> point ids
    unchecked: Dict[str, Dict[str, str]] = field(default_factory=dict)  # point id -> variable -> why
    warnings: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # per stack: HCOLL present or absent, ...
    tool_runs: int = 0
    tool_hits: int = 0

    @property
    def refused(self) -> bool:
        return bool(self.problems)

    def messages(self) -> List[str]:
        """One line per problem: the same objection to several values of a variable is one."""
        grouped: Dict[Tuple, Tuple[List[str], List[str]]] = {}
        for problem, points in self.problems.items():
            values, where = grouped.setdefault(
                (problem.stack, problem.variable, problem.reason, problem.overridable), ([], []))
            values.append(problem.value)
            where += [p for p in points if p not in where]
        out = []
        for (stack, variable, reason, overridable), (values, points) in grouped.items():
            shown = ", ".join(points[:3]) + (f" and {len(points) - 3} more" if len(points) > 3 else "")
            name = matrix_name(variable)
            hint = f" (run it anyway, unchecked: {ALLOW_FLAG} {name})" if overridable else ""
            # Sorted: the points come in the sweep's (shuffled) order, the message should not.
            value = values[0] if len(values) == 1 else "{" + ", ".join(sorted(map(str, values))) + "}"
            out.append(f"stack {stack!r}, {name}={value} "
                       f"(point{'s' if len(points) > 1 else ''} {shown}): {reason}{hint}")
        return out

    def error(self) -> PreflightError:
        lines = self.messages()
        return PreflightError(f"pre-flight refused {len(lines)} problem(s); nothing was launched:\n"
                              + "\n".join(f"  {line}" for line in lines))


def _stack_key(stack: ResolvedStack) -> Tuple:
    return (stack.name, stack.flavour, stack.stack.root, stack.launcher, tuple(stack.bin_dirs),
            tuple(stack.lib_dirs), tuple(stack.stack.env))




def normalise(names: Iterable[str]) -> FrozenSet[str]:
    """--allow-unlisted values: env names, or matrix names (mca.x means OMPI_MCA_x); commas too."""
    out = set()
    for text in names:
        for name in (n.strip() for n in text.split(",")):
            if name:
                out.add(_MCA + name[4:] if name.startswith("mca.") else name)
    return frozenset(out)


class Preflight:
    """Capabilities and verdicts, remembered for this process (``commstack tune`` runs many
    sweeps; each stack's tools run once)."""

    def __init__(self, tools: Optional[ToolCache] = None) -> None:
        self.tools = tools or ToolCache()
        self._stacks: Dict[Tuple, StackCapabilities] = {}
        self._verdicts: Dict[Tuple, StackVerdict] = {}

    def capabilities(self, stack: ResolvedStack) -> StackCapabilities:
        key = _stack_key(stack)
        if key not in self._stacks:
            self._stacks[key] = StackCapabilities(stack, self.tools)
        return self._stacks[key]

    def check(self, plan: Plan, allow_unlisted: Iterable[str] = ()) -> Verdict:
        allow = normalise(allow_unlisted)
        runs, hits = self.tools.runs, self.tools.hits
        verdict = Verdict()
        seen_stacks: Dict[str, ResolvedStack] = {}
        for prepared in plan.points:
            stack = prepared.stack
            seen_stacks[stack.name] = stack
            requested = dict(stack.stack.env)
            requested.update(point_env(prepared.point, plan.matrix.benchmark))
            key = (_stack_key(stack), tuple(sorted(requested.items())), allow)
            if key not in self._verdicts:
                self._verdicts[key] = check_variables(self.capabilities(stack), requested, allow)
            found = self._verdicts[key]
            simulation = prepared.command.simulation
            if simulation is not None:
                key = (_stack_key(stack), prepared.command.executable, simulation.settings)
                if key not in self._verdicts:
                    self._verdicts[key] = check_simulated(self.capabilities(stack),
                                                          prepared.command.executable,
                                                          simulation.settings)
                found = _joined(found, self._verdicts[key])
            for problem in found.problems:
                verdict.problems.setdefault(problem, []).append(prepared.point.id)
            if found.unchecked:
                verdict.unchecked[prepared.point.id] = dict(found.unchecked)
            verdict.warnings += [w for w in found.warnings if w not in verdict.warnings]
        for stack in seen_stacks.values():
            verdict.notes += stack_notes(self.capabilities(stack))
        verdict.tool_runs, verdict.tool_hits = self.tools.runs - runs, self.tools.hits - hits
        verdict.notes.append(f"tools: {verdict.tool_runs} run, {verdict.tool_hits} answers from the cache")
        return verdict


def stack_notes(caps: StackCapabilities) -> List[str]:
    """What a report should know of a stack: HCOLL and UCC present or absent (Open MPI)."""
    if caps.flavour.component_tool() is None:
        return []
    comps = caps.components()
    name = caps.stack.name
    if not isinstance(comps, Components):
        return [f"stack {name!r}: components could not be checked ({comps})"]
    said = []
    for component in ("hcoll", "ucc"):
        said.append(f"coll/{component} {'present' if comps.has('coll', component) else 'absent'}")
    return [f"stack {name!r}: " + ", ".join(said)]


def check_variables(caps: StackCapabilities, requested: Dict[str, str],
                    allow: FrozenSet[str]) -> StackVerdict:
    out = StackVerdict()
    listers = caps.flavour.variable_tools()
    name_of_stack = caps.stack.name
    for name, value in sorted(requested.items()):
        finding: Optional[rules.Finding] = None
        if name.startswith(_MCA) and caps.flavour.component_tool() is not None:
            comps = caps.components()
            if not isinstance(comps, Components):
                _unchecked(out, name_of_stack, name, comps)
                continue
            finding = rules.mca_parameter(name[len(_MCA):], value, comps)
        else:
            prefix = next((p for p in listers if name.startswith(p)), None)
            if prefix is None:
                continue  # a family no tool lists (FI_, OMP_, HCOLL_, ...): not checked by name
            listing = caps.names(prefix)
            if listing.names is None:
                _unchecked(out, name_of_stack, name, listing.source)
                continue
            finding = rules.listed_name(name, listing)
        if finding is not None and finding.overridable and name in allow:
            out.unchecked[name] = f"let through by {ALLOW_FLAG}: {finding.reason}"
            continue
        if finding is None and name.startswith("UCX_"):
            finding = _ucx_value(caps, name, value)
        if finding is not None:
            out.problems.append(Problem(name_of_stack, name, value, finding.reason,
                                        finding.overridable))
    return out


def check_simulated(caps: StackCapabilities, executable: str,
                    settings: Tuple[Tuple[str, str], ...]) -> StackVerdict:
    """A simulator's settings (SMPI's --cfg) against what the installed simulator lists."""
    env = caps.listing_env()

    def run(argv: List[str]) -> str:
        return caps.tools.run(argv[0], argv[1:], env).text

    found = caps.flavour.check_settings(caps.stack.launcher, executable, settings, run)
    return StackVerdict([Problem(caps.stack.name, key.replace("smpi/", "smpi.", 1), value, why, False)
                         for key, value, why in found])


def _joined(a: StackVerdict, b: StackVerdict) -> StackVerdict:
    return StackVerdict(a.problems + b.problems, {**a.unchecked, **b.unchecked},
                        a.warnings + [w for w in b.warnings if w not in a.warnings])


def _unchecked(out: StackVerdict, stack: str, name: str, why: str) -> None:
    out.unchecked[name] = f"could not be checked: {why}"
    warning = f"stack {stack!r}: {matrix_name(name)} could not be checked ({why})"
    if warning not in out.warnings:
        out.warnings.append(warning)


def _ucx_value(caps: StackCapabilities, name: str, value: str) -> Optional[rules.Finding]:
    ucx = caps.ucx()
    if not isinstance(ucx, UcxResources):
        return None  # ucx_info -c -a listed the name, so this is a broken -d: the run will say
    if name == "UCX_TLS":
        finding = rules.ucx_transports(value, ucx)
        if finding:
            return finding
    if name == "UCX_NET_DEVICES":
        finding = rules.ucx_devices(value, ucx)
        if finding:
            return finding
    return rules.ucx_value(name, value, caps.ucx_value_errors(name, value), ucx.version)


_DEFAULT: Optional[Preflight] = None


def default() -> Preflight:
    """This process's pre-flight (its memory spans the sweeps of one ``commstack tune``)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Preflight()
    return _DEFAULT


def check_plan(plan: Plan, allow_unlisted: Iterable[str] = (),
               preflight: Optional[Preflight] = None) -> Verdict:
    """The verdict for a plan; raises PreflightError when it refuses anything."""
    verdict = (preflight or default()).check(plan, allow_unlisted)
    if verdict.refused:
        raise verdict.error()
    return verdict


def add_allow_argument(parser: "argparse.ArgumentParser") -> None:
    parser.add_argument(ALLOW_FLAG, action="append", default=[], metavar="NAME",
                        help="run a variable or MCA parameter the stack's tools do not list "
                             "(repeatable; the record marks it unchecked; docs/explanation/preflight.md)")
