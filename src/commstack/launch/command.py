"""Turn a point into the exact launch command: argv plus the environment it sets.

What each flavour's launcher makes of ranks, placement and exported variables is the flavour
module's (commstack.flavours); this module gathers a point's values and the machine's facts.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from commstack import flavours
from commstack.benchmarks.registry import Benchmark
from commstack.flavours import Flavour, FlavourError, Placement, Request, RunFile, ucc_tune
from commstack.launch.stack import ResolvedStack, apply_env
from commstack.machine import Machine
from commstack.matrix import parameters as P
from commstack.matrix.model import Point
from commstack.placement.cpu_map import CpuMapError
from commstack.placement.model import Expected
from commstack.store.files import write_new


class LaunchError(ValueError):
    """A point that this launcher cannot run as asked."""


@dataclass
class LaunchCommand:
    argv: List[str]
    env: Dict[str, str] = field(default_factory=dict)  # set on top of the caller's environment
    prepends: Dict[str, List[str]] = field(default_factory=dict)  # PATH-like: dirs put first
    oversubscribed: bool = False
    ranks: int = 1
    executable: str = ""  # the benchmark binary (absolute path)
    expected: Optional[Expected] = None  # what placement the run must show (checked after it)
    # Files the launch reads: until placed, their variables hold the bare file name.
    files: Tuple[RunFile, ...] = ()

    def placed(self, directory: Path) -> "LaunchCommand":
        """This command for a run in ``directory``: its files written there (never over an
        existing one) and their variables naming them by absolute path."""
        if not self.files:
            return self
        env = dict(self.env)
        for item in self.files:
            path = directory.resolve() / item.name
            write_new(path, item.text.encode())
            env[item.variable] = str(path)
        return dataclasses.replace(self, env=env)

    def notes(self) -> List[str]:
        """What the record says of the files this command launched with, and of a per-size
        UCC_TL_UCP_TUNE in its environment."""
        return [item.note for item in self.files if item.note] + ucc_tune.notes(self.env)

    def full_env(self) -> Dict[str, str]:
        return apply_env(os.environ, self.env, self.prepends)

    def shell(self) -> str:
        """One line a user can paste into a shell to run exactly this."""
        assignments = [f"{k}={shlex.quote(os.pathsep.join(dirs))}:\"${k}\""
                       for k, dirs in sorted(self.prepends.items())]
        assignments += [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        prefix = ["env", *assignments] if assignments else []
        return " ".join(prefix + [shlex.quote(a) for a in self.argv])


def available_cores() -> int:
    return len(os.sched_getaffinity(0))


def point_env(point: Point, benchmark: Benchmark) -> Dict[str, str]:
    """Environment variables the point's env and mca parameters set."""
    env: Dict[str, str] = {}
    for name, value in point.params:
        kind = P.classify(name, benchmark)
        if kind.env_name:
            env[kind.env_name] = "1" if value is True else "0" if value is False else str(value)
    return env


def launch_files(point: Point, flavour: Flavour, ranks: int, env: Dict[str, str]
                 ) -> Tuple[Dict[str, str], Tuple[RunFile, ...]]:
    """The flavour's environment as launched and the files it reads (Flavour.launch_files)."""
    try:
        ucc_tune.check_env(env)  # UCC reads it whichever MPI loads UCC
        return flavour.launch_files(env, ranks)
    except FlavourError as exc:
        raise LaunchError(f"point {point.id}: {exc}") from None


def benchmark_params(point: Point, benchmark: Benchmark) -> Dict[str, object]:
    return {
        k: v for k, v in point.params if k in benchmark.options or k == "executable"
    }


def benchmark_argv(point: Point, benchmark: Benchmark, stack: ResolvedStack) -> List[str]:
    """The benchmark's argv with its executable found in the stack (absolute path)."""
    argv = benchmark.argv(benchmark_params(point, benchmark))
    argv[0] = stack.find(argv[0])
    return argv


def machine_launcher(machine: Optional[Machine], flavour: str, allocation: object) -> Optional[str]:
    """machine.yaml's launcher for a flavour on this node (launchers.<flavour>.command), when
    launching locally (no ``allocation``) and it is not srun."""
    command = ((machine.launcher(flavour) if machine else None) or {}).get("command")
    return command if allocation is None and command not in (None, "srun") else None


def placement_for(point: Point, stack: ResolvedStack, machine: Optional[Machine]) -> Placement:
    """The point's mapping as the stack's flavour is told it: machine.yaml first, then the
    flavour's built-in placement."""
    flavour = flavours.get(stack.flavour)
    mapping = point.get("mapping")
    declared = machine.flavour_placement(flavour.name, mapping) if machine and mapping else None
    try:
        placement = flavour.placement(mapping, declared)
    except FlavourError as exc:
        raise LaunchError(f"point {point.id}: stack {stack.name!r}: {exc}") from None
    cpu_map = machine.cpu_map(mapping, flavour.name) if machine and mapping else None
    if cpu_map is None:
        return placement
    try:
        return placement.filled(cpu_map.placeholders(int(point.get("ranks_per_node", 2))))
    except CpuMapError as exc:
        raise LaunchError(f"point {point.id}: mapping.{mapping}.cpu_map: {exc}") from None


def mapped_cpus(point: Point, machine: Optional[Machine], flavour: Optional[str] = None
                ) -> Optional[Tuple[int, ...]]:
    """Each local rank's CPU by machine.yaml's mapping.<m>.cpu_map, or None when it has none;
    with ``flavour`` (its own launcher places the ranks) by that flavour's own cpu_map when it
    declares one, and only when its declared placement uses the map ({cpus},
    {ranks_per_socket} or {cores_per_rank})."""
    mapping = point.get("mapping")
    cpu_map = machine.cpu_map(mapping, flavour) if machine and mapping else None
    if cpu_map is None:
        return None
    if flavour is not None:
        declared = machine.flavour_placement(flavour, mapping) if machine else None
        text = " ".join([*declared.args, *declared.env_dict.values()]) if declared else ""
        if not any(f"{{{name}}}" in text for name in ("cpus", "ranks_per_socket", "cores_per_rank")):
            return None
    try:
        return cpu_map.cpus(int(point.get("ranks_per_node", 2)))
    except CpuMapError as exc:
        raise LaunchError(f"point {point.id}: mapping.{mapping}.cpu_map: {exc}") from None


def mapped_span(point: Point, machine: Optional[Machine], flavour: str) -> int:
    """The cores from its map CPU each rank of ``flavour``'s own launcher may hold
    (placement.cpu_map.CpuMap.span); 1 without a map it uses."""
    if mapped_cpus(point, machine, flavour) is None or machine is None:
        return 1
    cpu_map = machine.cpu_map(point.get("mapping"), flavour)
    return cpu_map.span(int(point.get("ranks_per_node", 2))) if cpu_map else 1


def expected(flavour: Flavour, req: Request, *more_reports: str,
             node_order: Optional[str] = None, cpus: Optional[Tuple[int, ...]] = None,
             cpus_per_rank: Optional[int] = None, cpu_span: int = 1) -> Expected:
    reports = tuple(r for r in (flavour.binding_report, *more_reports) if r)
    return Expected(req.mapping, req.ranks_per_node, req.nodes, req.oversubscribed, reports,
                    node_order, cpus, cpus_per_rank, cpu_span)


def local_command(
    point: Point, benchmark: Benchmark, stack: ResolvedStack, cores: int = 0,
    machine: Optional[Machine] = None,
) -> LaunchCommand:
    """The flavour's launcher for a point on this node."""
    nodes = int(point.get("nodes", 1))
    if nodes != 1:
        raise LaunchError(
            f"point {point.id}: nodes={nodes}, but the local launcher runs on this node only "
            "(run inside a Slurm allocation for several nodes)"
        )
    ranks = int(point.get("ranks_per_node", 2))
    cores = cores or available_cores()
    wanted = point.get("oversubscribe", "auto")
    oversubscribed = ranks > cores if wanted == "auto" else bool(wanted)
    if ranks > cores and wanted is False:
        raise LaunchError(
            f"point {point.id}: {ranks} ranks on {cores} cores needs oversubscription, "
            "but oversubscribe is false"
        )
    flavour = flavours.get(stack.flavour)
    if not flavour.launches_locally:
        raise LaunchError(
            f"point {point.id}: stack {stack.name!r} is {flavour.name}, which is launched with "
            "srun inside a Slurm allocation, not locally"
        )
    req = Request(ranks, 1, point.get("mapping"), oversubscribed, os.geteuid() == 0,
                  stack.stack.conduit)
    placement = placement_for(point, stack, machine)
    argv_bench = benchmark_argv(point, benchmark, stack)
    env = stack.env_delta()
    env.update(point_env(point, benchmark))
    env, files = launch_files(point, flavour, req.ranks, env)
    launch = flavour.local(stack.launcher, req, placement, env)
    argv = launch.argv + list(stack.stack.launcher_args)
    return LaunchCommand(argv + argv_bench, launch.env, stack.prepends(), oversubscribed, ranks,
                         executable=argv_bench[0],
                         expected=expected(flavour, req,
                                           cpus=mapped_cpus(point, machine, flavour.name),
                                           cpu_span=mapped_span(point, machine, flavour.name)),
                         files=files)
