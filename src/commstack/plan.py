"""A campaign's plan: the matrix expanded and every point's command built, before anything is
launched (commstack.sweep runs it; commstack.preflight checks it first)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from commstack.benchmarks.registry import Benchmark
from commstack.launch.builder import benchmark_argv, build
from commstack.launch.command import LaunchCommand, local
from commstack.launch.stack import ResolvedStack, StackError, resolve
from commstack.machine import Machine, machine_launcher
from commstack.matrix.expand import expand
from commstack.matrix.model import Matrix, Point
from commstack.matrix.parameters import matrix_name
from commstack.schedulers import registry
from commstack.schedulers.allocation import Allocation


@dataclass
class PreparedPoint:
    point: Point
    stack: ResolvedStack
    command: LaunchCommand
    # The same command plus the variables that make the MPI name the collective components it
    # used (flavour.evidence_env): run once per point and session, its timings never used.
    evidence: Optional[LaunchCommand] = None
    unresolved: List[str] = field(default_factory=list)  # review mode: what is not here


@dataclass
class Plan:
    matrix: Matrix
    points: List[PreparedPoint]
    skipped: List[Tuple[Point, str]] = field(default_factory=list)  # optional stacks missing
    machine: Optional[Machine] = None
    allocation: Optional[Allocation] = None


def prepare(matrix: Matrix, machine: Optional[Machine] = None,
            allocation: Optional[Allocation] = None, select: Callable[[Point], bool] = lambda p: True,
            review: bool = False) -> Plan:
    """Expand and build every command; raise on any problem before anything is launched.

    Inside an allocation points become steps of its scheduler's, otherwise local mpirun/mpiexec
    runs.
    ``select`` keeps a subset of the points (one node-count group, one shard of an array).
    ``review``: stacks not installed here do not stop the plan; each prepared point's stack lists
    what is unresolved (`commstack plan` of another machine's campaign; nothing is launched).
    """
    points = [p for p in expand(matrix) if select(p)]
    resolved: Dict[str, ResolvedStack] = {}
    missing: Dict[str, str] = {}
    for name in sorted({p.get("stack") for p in points}):
        stack = matrix.stacks[name]
        try:
            resolved[name] = resolve(stack, machine_launcher(machine, stack.flavour, allocation),
                                     review)
        except StackError as exc:
            if not stack.optional:
                raise
            missing[name] = str(exc)
    plan = Plan(matrix, [], machine=machine, allocation=allocation)
    for point in points:
        name = point.get("stack")
        if name in missing:
            plan.skipped.append((point, missing[name]))
            continue
        stack = resolved[name]
        known = len(stack.unresolved)  # the stack's own; a point adds its executables' below
        try:
            command, extra = _command(point, matrix.benchmark, stack, machine, allocation)
            evidence = _command(_with_env_params(point, extra), matrix.benchmark, stack, machine,
                                allocation)[0] if extra else None
        except StackError as exc:
            if not matrix.stacks[name].optional:
                raise
            plan.skipped.append((point, str(exc)))
            continue
        finally:
            unresolved = list(dict.fromkeys(stack.unresolved))
            del stack.unresolved[known:]
        plan.points.append(PreparedPoint(point, stack, command, evidence, unresolved))
    return plan


def _command(point: Point, benchmark: Benchmark, stack: ResolvedStack, machine: Optional[Machine],
             allocation: Optional[Allocation]) -> Tuple[LaunchCommand, Dict[str, str]]:
    """The point's command, and the variables its evidence run adds (flavour.evidence_env)."""
    spec = build(point, benchmark, stack, machine, allocation)
    command = (local(spec) if allocation is None or spec.simulated
               else registry.of(allocation, machine).step(spec))
    return command, spec.flavour.evidence_env(command.env)


def _with_env_params(point: Point, env: Dict[str, str]) -> Point:
    """``point`` with ``env`` added as parameters (OMPI_MCA_x as mca.x, others by name)."""
    extra = {matrix_name(k): v for k, v in env.items()}
    return Point(point.benchmark, tuple(sorted(dict(point.params, **extra).items())))


def skipped_points(matrix: Matrix, points: List[Point], machine: Optional[Machine] = None
                   ) -> Dict[str, str]:
    """Point id -> why `run` skips it on this machine: an optional stack whose launcher or
    benchmark executable is missing (the same rule as ``prepare``, without building commands;
    the launcher as a local run finds it, machine.yaml's when it names one)."""
    stacks: Dict[str, "ResolvedStack | str"] = {}
    reasons: Dict[str, str] = {}
    for point in points:
        stack = matrix.stacks[point.get("stack")]
        if not stack.optional:
            continue
        if stack.name not in stacks:
            try:
                stacks[stack.name] = resolve(stack, machine_launcher(machine, stack.flavour, None))
            except StackError as exc:
                stacks[stack.name] = str(exc)
        found = stacks[stack.name]
        if isinstance(found, str):
            reasons[point.id] = found
            continue
        try:
            benchmark_argv(point, matrix.benchmark, found)
        except StackError as exc:
            reasons[point.id] = str(exc)
    return reasons
