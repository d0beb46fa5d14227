"""A point as one Slurm job step: srun, or the MPI's own launcher inside the allocation.

Inside an allocation every point becomes one job step:
``srun --mpi=<plugin> -N <nodes> --ntasks-per-node=<r> -n <nodes*r> --cpus-per-task=<c>
--cpu-bind=verbose,cores --distribution=<block|cyclic>...`` (``--cpu-bind=verbose,map_cpu:<list>``
when machine.yaml declares the mapping's cpu_map) using the machine's facts (site-configs/<machine>/machine.yaml)
and the flavour's (commstack.flavours): the --mpi plugin of the PMI it speaks, its placement
variables, or its own launcher when machine.yaml names one. Points needing fewer nodes than
allocated run on a subset (Slurm picks the nodes).
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from commstack.benchmarks.registry import Benchmark
from commstack.launch.builder import LaunchSpec, build
from commstack.launch.command import LaunchCommand
from commstack.launch.stack import ResolvedStack
from commstack.machine import Machine
from commstack.matrix.model import Point
from commstack.placement.cpu_map import cpu_list
from commstack.placement.model import Expected
from commstack.schedulers import own_launcher
from commstack.schedulers.allocation import Allocation

SRUN = "srun"
# srun's own report of each task's binding ("cpu-bind=MASK - n1, task 0 0 [pid]: mask 0x1 set").
SRUN_BINDING = "--cpu-bind=verbose,cores"
DEFAULT_DISTRIBUTION = {"block": ["--distribution=block:block"], "cyclic": ["--distribution=cyclic:cyclic"]}
# The flavour's PMI (commstack.flavours.base.Flavour.pmi) -> srun's --mpi plugin.
MPI_PLUGIN = {"pmix": "pmix", "pmi2": "pmi2", "cray-pmi": "cray_shasta"}


def srun(spec: LaunchSpec) -> LaunchCommand:
    """A point as one step of its allocation: srun, or the MPI's own launcher where machine.yaml
    names one, or one task running a node-local conduit's spawner."""
    command = spec.facts.launcher.get("command", SRUN)
    if spec.node_local:
        launcher, env, expected = _node_local(spec)
    elif command != SRUN:
        launcher, env, expected = own_launcher.in_allocation(
            spec, [command, *spec.facts.launcher.get("args", [])])
    else:
        launcher, env, expected = _step(spec)
    return LaunchCommand.of(spec, launcher, env, expected)


def _step(spec: LaunchSpec) -> Tuple[List[str], Dict[str, str], Expected]:
    req, mapping = spec.request, spec.request.mapping
    args = list(spec.facts.launcher.get("args") or [f"--mpi={MPI_PLUGIN[spec.flavour.pmi]}"])
    binding = (f"{SRUN_BINDING.split(',')[0]},map_cpu:{cpu_list(spec.cpus)}" if spec.cpus
               else SRUN_BINDING)
    per_task = cpus_per_task(spec)
    argv = [SRUN, "-v", *args, "-N", str(req.nodes), f"--ntasks-per-node={req.ranks_per_node}",
            "-n", str(req.ranks), *per_task, binding, "--kill-on-bad-exit=1"]
    distribution: List[str] = []
    if mapping:
        declared = _declared_distribution(spec)
        distribution = declared if declared is not None else DEFAULT_DISTRIBUTION[mapping]
    expected = dataclasses.replace(
        spec.expected, reports=(*spec.expected.reports, "slurm"),
        node_order=_node_order(distribution), cpus=spec.cpus,
        cpus_per_rank=int(per_task[0].split("=")[1]) if per_task else None)
    return argv + distribution, spec.flavour.step_env(spec.placement, spec.env), expected


def _declared_distribution(spec: LaunchSpec) -> Optional[List[str]]:
    """srun's arguments for the point's mapping (machine.yaml's mapping.<m>.srun), or None when
    not declared."""
    args = spec.facts.mapping_facts.get(SRUN)
    return None if args is None else [str(a) for a in args]


def srun_command(point: Point, benchmark: Benchmark, stack: ResolvedStack,
                 machine: Optional[Machine], allocation: Allocation) -> LaunchCommand:
    return srun(build(point, benchmark, stack, machine, allocation))


def cpus_per_task(spec: LaunchSpec) -> List[str]:
    """``--cpus-per-task``: the point's ``cpus_per_task``, else NERSC's rule from the machine's
    node facts: threads per core x floor(cores per node / ranks per node), so each rank gets
    whole cores and all of its hardware threads (docs.nersc.gov/jobs: ``-c`` = 2 x
    floor(128 / tasks per node) on Perlmutter's 128-core SMT2 nodes). With more ranks than cores,
    floor(logical CPUs / ranks), at least 1; never more than the allocation holds per node
    divided by the ranks (a job that is not exclusive holds fewer CPUs than the node has). Nothing
    without node facts."""
    per_node = spec.request.ranks_per_node
    asked = spec.point.get("cpus_per_task")
    if asked is not None:
        return [f"--cpus-per-task={int(asked)}"]
    node = spec.facts.node
    if not node.get("sockets") or not node.get("cores_per_socket"):
        return []
    cores = int(node["sockets"]) * int(node["cores_per_socket"])
    threads = int(node.get("threads_per_core") or 1)
    value = threads * (cores // per_node) if cores >= per_node else (cores * threads) // per_node
    allocation = spec.allocation
    if allocation is not None and allocation.cpus_per_node:
        value = min(value, allocation.cpus_per_node // per_node)
    return [f"--cpus-per-task={max(1, value)}"]


def _node_order(args: List[str]) -> Optional[str]:
    """block or cyclic: how srun's --distribution (or -m) deals ranks over nodes."""
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if arg.startswith("--distribution=") else (
            args[i + 1] if arg in ("-m", "--distribution") and i + 1 < len(args) else None)
        if value:
            first = value.split(":")[0]
            return first if first in ("block", "cyclic") else None
    return None


def _node_local(spec: LaunchSpec) -> Tuple[List[str], Dict[str, str], Expected]:
    """One task on one node, with the cores of every process, running the conduit's spawner."""
    req = spec.request
    spawn = spec.flavour.local(spec.stack.launcher, req, spec.placement, spec.env)
    argv = [SRUN, "-v", "-N", "1", "-n", "1", f"--cpus-per-task={req.ranks_per_node}",
            "--cpu-bind=none", "--kill-on-bad-exit=1", *spawn.argv]
    # The one srun task is the spawner, not a rank: srun's report would say nothing of ranks.
    return argv, spawn.env, spec.expected
