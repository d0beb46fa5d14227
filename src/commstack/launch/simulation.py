"""A simulator's launch (a flavour with ``simulated``, SimGrid SMPI): on this node, whatever the
allocation, of the machine the facts describe; its nodes, ranks per node and mapping are the
simulated machine's."""

from __future__ import annotations

from typing import Optional

from commstack.benchmarks.registry import Benchmark
from commstack.flavours import FlavourError, Placement, Request
from commstack.launch.spec import LaunchError, LaunchSpec, benchmark_files
from commstack.launch.stack import ResolvedStack
from commstack.machine import LaunchFacts, Machine
from commstack.matrix import parameters as P
from commstack.matrix.model import Point
from commstack.placement.cpu_map import CpuMapError
from commstack.placement.model import Expected


def build(point: Point, benchmark: Benchmark, stack: ResolvedStack,
               machine: Optional[Machine], inputs: P.LaunchInputs) -> LaunchSpec:
    """The point's simulated launch (``inputs``: what it reads of the point)."""
    flavour = stack.kind
    where = f"point {point.id}: stack {stack.name!r}"
    if machine is None:
        raise LaunchError(f"{where} is {flavour.label}, which simulates a machine: it needs that "
                          "machine's facts (site-configs/<machine>/machine.yaml with simulation:)")
    if stack.stack.launcher_args:
        raise LaunchError(f"{where}: launcher_args {' '.join(stack.stack.launcher_args)} cannot "
                          f"run inside a simulation; drop them from the {flavour.label} stack")
    mapping = point.get("mapping")
    ranks = int(point.get("ranks_per_node", 2))
    wanted = point.get("oversubscribe", "auto")
    over = ranks > machine.cores_per_node
    if over and wanted is False:
        raise LaunchError(f"{where}: {ranks} ranks per node on the simulated node's "
                          f"{machine.cores_per_node} cores needs oversubscription, but "
                          "oversubscribe is false")
    request = Request(ranks, int(point.get("nodes", 1)), mapping, over)
    cpus = None
    if mapping:
        try:
            cpu_map = machine.cpu_map(mapping)
            cpus = cpu_map.cpus(request.ranks_per_node) if cpu_map else None
        except CpuMapError as exc:
            raise LaunchError(f"{where}: mapping.{mapping}.cpu_map: {exc}") from None
    argv = benchmark.argv(inputs.options)
    argv[0] = stack.find(argv[0])
    env = stack.env_delta()
    env.update(inputs.env)
    try:
        launch, files, simulation = flavour.simulate(
            stack.launcher, request, env, inputs.flavour_options, machine.facts, cpus,
            stack.stack.noise)
    except FlavourError as exc:
        raise LaunchError(f"{where}: {exc}") from None
    expected = Expected(mapping, request.ranks_per_node, request.nodes,
                        reports=(flavour.binding_report,) if flavour.binding_report else (),
                        node_order="block", hosts=simulation.hosts)
    return LaunchSpec(point, stack, flavour, LaunchFacts(), request, Placement(), launch.env,
                      tuple(files) + benchmark_files(benchmark, inputs.options), argv, expected,
                      simulated=(launch, simulation))
