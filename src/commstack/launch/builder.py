"""One point's launch, resolved once: its flavour, the machine's facts for it, the placement
request and the environment, from which the local (commstack.launch.command.local) and a
scheduler's step (commstack.schedulers: ``Scheduler.step``) command lines are made.

What each flavour's launcher makes of ranks, placement and exported variables is the flavour
module's (commstack.flavours); this module gathers a point's values and the machine's facts. A
simulator's launch is commstack.launch.simulation's; the shape both make, commstack.launch.spec's.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Dict, List, Optional

from commstack.benchmarks.registry import Benchmark
from commstack.flavours import FlavourError, Request, ucc_tune
from commstack.launch import simulation
from commstack.launch.spec import LaunchError, LaunchSpec, benchmark_files
from commstack.launch.stack import ResolvedStack
from commstack.machine import LaunchFacts, Machine
from commstack.matrix import parameters as P
from commstack.matrix.model import Point
from commstack.placement.cpu_map import CpuMapError
from commstack.placement.model import Expected
from commstack.schedulers.allocation import Allocation


def build(point: Point, benchmark: Benchmark, stack: ResolvedStack,
          machine: Optional[Machine] = None, allocation: Optional[Allocation] = None,
          cores: int = 0) -> LaunchSpec:
    """The point's launch on this node (no ``allocation``; ``cores``: this node's, 0 to ask) or
    as a step of ``allocation``; LaunchError for a point that cannot run so."""
    flavour = stack.kind
    inputs = P.launch_inputs(point, benchmark)
    if flavour.simulated:
        return simulation.build(point, benchmark, stack, machine, inputs)
    if allocation is None:
        request = _local_request(point, stack, cores or available_cores())
    else:
        request = _step_request(point, stack, allocation)
    mapping = request.mapping

    facts = machine.launch_facts(flavour.name, mapping) if machine else LaunchFacts()
    if allocation is not None and stack.stack.allocation_launcher == "own":
        # the stack's own mpirun; launchers.<flavour>'s arguments and variables are the step's
        facts = dataclasses.replace(facts, launcher={"command": stack.launcher})
    try:
        placement = flavour.placement(mapping, facts.placement)  # machine.yaml's, else built-in
    except FlavourError as exc:
        raise LaunchError(f"point {point.id}: stack {stack.name!r}: {exc}") from None
    declared = facts.placement
    text = " ".join([*declared.args, *declared.env_dict.values()]) if declared else ""
    uses_map = any(f"{{{name}}}" in text for name in ("cpus", "ranks_per_socket", "cores_per_rank"))
    cpus = launcher_cpus = None
    span = 1
    k = request.ranks_per_node
    try:
        if facts.cpu_map is not None:  # the step's CPU map
            cpus = facts.cpu_map.cpus(k)
        own = facts.flavour_cpu_map  # the flavour's own launcher's
        if own is not None:
            placement = placement.filled(own.placeholders(k))
            if uses_map:
                launcher_cpus, span = own.cpus(k), own.span(k)
    except CpuMapError as exc:
        raise LaunchError(f"point {point.id}: mapping.{mapping}.cpu_map: {exc}") from None

    argv = benchmark.argv(inputs.options)
    argv[0] = stack.find(argv[0])
    stack_env = stack.env_delta()
    own_files = benchmark_files(benchmark, inputs.options)
    env: Dict[str, str] = {}
    # A step gets the network's variables, and its launcher's unless a conduit's spawner runs it.
    if allocation is not None:
        env.update(facts.network_env)
        if stack.stack.conduit not in flavour.node_local_conduits:
            env.update({k: str(v) for k, v in (facts.launcher.get("env") or {}).items()})
    env.update(stack_env)
    env.update(inputs.env)
    try:
        ucc_tune.check_env(env)  # UCC reads it whichever MPI loads UCC
        env, files = flavour.launch_files(env, request.ranks)
    except FlavourError as exc:
        raise LaunchError(f"point {point.id}: {exc}") from None
    reports = (flavour.binding_report,) if flavour.binding_report else ()
    expected = Expected(request.mapping, request.ranks_per_node, request.nodes,
                        request.oversubscribed, reports)
    return LaunchSpec(point, stack, flavour, facts, request, placement, env,
                      tuple(files) + own_files, argv, expected, cpus, launcher_cpus, span,
                      allocation)


def available_cores() -> int:
    return len(os.sched_getaffinity(0))


def _local_request(point: Point, stack: ResolvedStack, cores: int) -> Request:
    nodes = int(point.get("nodes", 1))
    if nodes != 1:
        raise LaunchError(
            f"point {point.id}: nodes={nodes}, but the local launcher runs on this node only "
            "(run inside a Slurm allocation for several nodes)"
        )
    ranks = int(point.get("ranks_per_node", 2))
    wanted = point.get("oversubscribe", "auto")
    oversubscribed = ranks > cores if wanted == "auto" else bool(wanted)
    if ranks > cores and wanted is False:
        raise LaunchError(
            f"point {point.id}: {ranks} ranks on {cores} cores needs oversubscription, "
            "but oversubscribe is false"
        )
    if not stack.kind.launches_locally:
        raise LaunchError(
            f"point {point.id}: stack {stack.name!r} is {stack.kind.name}, which is launched "
            "with srun inside a Slurm allocation, not locally"
        )
    return Request(ranks, 1, point.get("mapping"), oversubscribed, os.geteuid() == 0,
                   stack.stack.conduit)


def _step_request(point: Point, stack: ResolvedStack, allocation: Allocation) -> Request:
    nodes = int(point.get("nodes", 1))
    if allocation.nodes and nodes > len(allocation.nodes):
        raise LaunchError(f"point {point.id}: nodes={nodes}, but the allocation has "
                          f"{len(allocation.nodes)} ({','.join(allocation.nodes)})")
    conduit = stack.stack.conduit
    if conduit in stack.kind.node_local_conduits and nodes != 1:
        raise LaunchError(f"point {point.id}: the {conduit} conduit runs on one node; "
                          f"nodes={nodes} needs a network conduit (ibv, ofi, ucx, mpi)")
    return Request(int(point.get("ranks_per_node", 2)), nodes, point.get("mapping"), False,
                   os.geteuid() == 0, conduit)


def benchmark_argv(point: Point, benchmark: Benchmark, stack: ResolvedStack) -> List[str]:
    """The benchmark's argv with its executable found in the stack (absolute path)."""
    argv = benchmark.argv(P.benchmark_params(point, benchmark))
    argv[0] = stack.find(argv[0])
    return argv
