"""A point as one Flux job of its instance: ``flux run``, or the MPI's own launcher inside it.

Inside a Flux instance (``flux alloc``, ``flux batch``, ``flux start``) every point becomes one
job: ``flux run -v -N <nodes> --tasks-per-node=<r> -o cpu-affinity=verbose,per-task
-o exit-on-error --taskmap=<block|cyclic> ...`` (flux-core 0.81, flux-run(1), flux-shell(1)).

* ``--tasks-per-node`` asks for whole nodes and starts r tasks on each, as many as the point
  wants even past the node's cores (an oversubscribed point shares them); with the point's
  ``cpus_per_task``, ``-n <ranks> -c <c>`` instead (Flux then places tasks by cores).
* ``cpu-affinity=per-task`` gives each task an even share of its node's cores, consecutive
  tasks consecutive cores; ``map:<cpu>;<cpu>...`` when machine.yaml declares the mapping's
  cpu_map. ``verbose`` makes each job shell print every task's CPUs: the placement evidence
  (commstack.placement.reports.flux).
* ``--taskmap=block|cyclic`` deals ranks over nodes as Slurm's --distribution does; machine.yaml's
  ``mapping.<m>.flux`` replaces it.
* The PMI: Flux's default, ``simple`` (the PMI-1 wire protocol, and the libpmi.so / libpmi2.so
  it installs), serves MPICH, Intel MPI (its own PMI-1 client) and Open MPI 4 (its ``flux``
  component dlopens Flux's libpmi.so); Cray MPICH needs flux-coral2's ``cray-pals``, Open MPI 5
  flux-pmix's ``pmix`` (machine.yaml's launchers.<flavour>.args: ``["-o", "pmi=pmix"]``).
* ``exit-on-error``: the job ends as soon as a task fails (Slurm's --kill-on-bad-exit).
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from commstack.launch.builder import LaunchError, LaunchSpec
from commstack.launch.command import LaunchCommand
from commstack.placement.cpu_map import cpu_list
from commstack.placement.model import Expected
from commstack.schedulers import own_launcher

FLUX = "flux"
RUN = [FLUX, "run", "-v"]  # -v: the job id on stderr (flux-run(1))
REPORT = "flux"  # commstack.placement.reports' parser of the job shell's affinity lines
DEFAULT_TASKMAP = {"block": ["--taskmap=block"], "cyclic": ["--taskmap=cyclic"]}
# The flavour's PMI (commstack.flavours.base.Flavour.pmi) -> the job shell's pmi option, where
# Flux's default (simple) does not serve it.
PMI_OPTION = {"cray-pmi": ["-o", "pmi=cray-pals"]}


def flux_run(spec: LaunchSpec) -> LaunchCommand:
    """A point as one job of the instance, or its MPI's own launcher where machine.yaml names
    one, or one task running a node-local conduit's spawner."""
    command = spec.facts.launcher.get("command", FLUX)
    if spec.node_local:
        launcher, env, expected = _node_local(spec)
    elif command != FLUX:
        launcher, env, expected = own_launcher.in_allocation(
            spec, [command, *spec.facts.launcher.get("args", [])])
    else:
        if _oversubscribed(spec):  # the record says so where its numbers stand
            spec = dataclasses.replace(
                spec, request=dataclasses.replace(spec.request, oversubscribed=True))
        launcher, env, expected = _job(spec)
    return LaunchCommand.of(spec, launcher, env, expected)


def _job(spec: LaunchSpec) -> Tuple[List[str], Dict[str, str], Expected]:
    req, mapping = spec.request, spec.request.mapping
    over = req.oversubscribed
    args = list(spec.facts.launcher.get("args") or PMI_OPTION.get(spec.flavour.pmi, []))
    asked = spec.point.get("cpus_per_task")
    shape = (["-N", str(req.nodes), "-n", str(req.ranks), "-c", str(int(asked))] if asked
             else ["-N", str(req.nodes), f"--tasks-per-node={req.ranks_per_node}"])
    affinity = f"map:{cpu_list(spec.cpus).replace(',', ';')}" if spec.cpus else "per-task"
    taskmap: List[str] = []
    if mapping:
        declared = spec.facts.mapping_facts.get(FLUX)
        taskmap = [str(a) for a in declared] if declared is not None else DEFAULT_TASKMAP[mapping]
    argv = [*RUN, *shape, "-o", f"cpu-affinity=verbose,{affinity}", "-o", "exit-on-error",
            *taskmap, *args]
    expected = dataclasses.replace(
        spec.expected, reports=(*spec.expected.reports, REPORT), node_order=_node_order(taskmap),
        cpus=spec.cpus, cpus_per_rank=int(asked) if asked else _share(spec), oversubscribed=over)
    env = spec.flavour.step_env(spec.placement, spec.env)
    if over:
        env = {**spec.flavour.oversubscribed_env, **env}
    return argv, env, expected


def _oversubscribed(spec: LaunchSpec) -> bool:
    """More ranks on a node than the cores the instance holds there: Flux starts them (tasks per
    node, not cores, were asked), per-task affinity puts several on a core, and the flavour's
    ranks are told to yield. Refused where the point says ``oversubscribe: false``."""
    cores = _node_cores(spec)
    over = cores is not None and spec.request.ranks_per_node > cores
    wanted = spec.point.get("oversubscribe", "auto")
    if over and wanted is False:
        raise LaunchError(f"point {spec.point.id}: {spec.request.ranks_per_node} ranks per node "
                          f"on {cores} cores needs oversubscription, but oversubscribe is false")
    return over if wanted == "auto" else bool(wanted)


def _node_cores(spec: LaunchSpec) -> Optional[int]:
    """The cores the instance holds on a node (its R), else machine.yaml's node."""
    allocation, node = spec.allocation, spec.facts.node
    if allocation is not None and allocation.cpus_per_node:
        return allocation.cpus_per_node
    if node.get("sockets") and node.get("cores_per_socket"):
        return int(node["sockets"]) * int(node["cores_per_socket"])
    return None


def _share(spec: LaunchSpec) -> Optional[int]:
    """The cores per-task affinity gives each rank: its node's cores shared evenly, at least one."""
    cores = _node_cores(spec)
    return max(1, cores // spec.request.ranks_per_node) if cores else None


def _node_order(args: List[str]) -> Optional[str]:
    """block or cyclic: how --taskmap deals ranks over nodes."""
    for arg in args:
        if arg.startswith("--taskmap="):
            scheme = arg.split("=", 1)[1]
            return scheme if scheme in ("block", "cyclic") else None
    return None


def _node_local(spec: LaunchSpec) -> Tuple[List[str], Dict[str, str], Expected]:
    """One task on one whole node, unbound, running the conduit's spawner (its processes share
    the node's cores however many they are)."""
    req = spec.request
    spawn = spec.flavour.local(spec.stack.launcher, req, spec.placement, spec.env)
    argv = [*RUN, "-N", "1", "--tasks-per-node=1", "-o", "cpu-affinity=off", "-o",
            "exit-on-error", *spawn.argv]
    # The one task is the spawner, not a rank: the shell's report would say nothing of ranks.
    return argv, spawn.env, spec.expected
