"""Launching points inside a Slurm allocation with srun.

Inside an allocation (SLURM_JOB_ID set) every point becomes one job step:
``srun --mpi=<plugin> -N <nodes> --ntasks-per-node=<r> -n <nodes*r> --cpus-per-task=<c>
--cpu-bind=verbose,cores --distribution=<block|cyclic>...`` (``--cpu-bind=verbose,map_cpu:<list>``
when machine.yaml declares the mapping's cpu_map) using the machine's facts (site-configs/<machine>/machine.yaml)
and the flavour's (commstack.flavours): its --mpi plugin, its placement variables, or its own
launcher when machine.yaml names one. Points needing fewer nodes than allocated run on a subset
(Slurm picks the nodes).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from commstack import flavours
from commstack.benchmarks.registry import Benchmark
from commstack.flavours import Flavour, Placement, Request
from commstack.launch.command import (
    LaunchCommand,
    LaunchError,
    benchmark_argv,
    expected,
    launch_files,
    mapped_cpus,
    mapped_span,
    placement_for,
    point_env,
)
from commstack.launch.stack import ResolvedStack
from commstack.machine import Machine
from commstack.matrix.model import Point
from commstack.placement.cpu_map import cpu_list

# srun's own report of each task's binding ("cpu-bind=MASK - n1, task 0 0 [pid]: mask 0x1 set").
SRUN_BINDING = "--cpu-bind=verbose,cores"
DEFAULT_DISTRIBUTION = {"block": ["--distribution=block:block"], "cyclic": ["--distribution=cyclic:cyclic"]}
_TIME_LEFT = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


@dataclass
class Allocation:
    """The Slurm allocation this process runs in."""

    job_id: str
    nodes: List[str] = field(default_factory=list)
    partition: Optional[str] = None
    deadline: Optional[float] = None  # epoch seconds; None when unlimited or unknown
    cpus_per_node: Optional[int] = None  # the fewest CPUs the job holds on one of its nodes

    @classmethod
    def from_environment(cls) -> Optional["Allocation"]:
        job = os.environ.get("SLURM_JOB_ID")
        if not job:
            return None
        nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
        return cls(job, expand_nodelist(nodelist), os.environ.get("SLURM_JOB_PARTITION"),
                   _deadline(job), fewest_cpus(os.environ.get("SLURM_JOB_CPUS_PER_NODE", "")))

    def remaining_s(self) -> Optional[float]:
        return None if self.deadline is None else self.deadline - time.time()


def fewest_cpus(cpus_per_node: str) -> Optional[int]:
    """SLURM_JOB_CPUS_PER_NODE ("2(x3),1", as sbatch documents it) -> its smallest count."""
    counts = [int(m) for m in re.findall(r"(\d+)(?:\(x\d+\))?", cpus_per_node)]
    return min(counts) if counts else None


def expand_nodelist(nodelist: str) -> List[str]:
    """n[1-3],m5 -> [n1, n2, n3, m5] (python-hostlist when installed, else scontrol)."""
    if not nodelist:
        return []
    try:
        import hostlist  # python-hostlist

        return list(hostlist.expand_hostlist(nodelist))
    except ImportError:
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                             text=True, timeout=30)
        return out.stdout.split()


def _deadline(job: str) -> Optional[float]:
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%L"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _TIME_LEFT.match(out)
    if not m:
        return None  # UNLIMITED, NOT_SET or unknown
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return time.time() + ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def srun_command(point: Point, benchmark: Benchmark, stack: ResolvedStack,
                 machine: Optional[Machine], allocation: Allocation) -> LaunchCommand:
    nodes = int(point.get("nodes", 1))
    if allocation.nodes and nodes > len(allocation.nodes):
        raise LaunchError(f"point {point.id}: nodes={nodes}, but the allocation has "
                          f"{len(allocation.nodes)} ({','.join(allocation.nodes)})")
    per_node = int(point.get("ranks_per_node", 2))
    flavour = flavours.get(stack.flavour)
    mapping = point.get("mapping")
    req = Request(per_node, nodes, mapping, False, os.geteuid() == 0, stack.stack.conduit)
    placement = placement_for(point, stack, machine)
    if stack.stack.conduit in flavour.node_local_conduits:
        return node_local(point, benchmark, stack, machine, flavour, req, placement)
    launcher = (machine.launcher(flavour.name) if machine else None) or {}
    if stack.stack.allocation_launcher == "own":  # the stack's mpirun; launchers.<flavour>'s
        launcher = {"command": stack.launcher}    # arguments and variables are srun's, not its
    env, files = launch_files(point, flavour, req.ranks,
                              _environment(point, benchmark, stack, machine, launcher))
    command = launcher.get("command", "srun")
    if command != "srun":
        return dataclasses.replace(
            mpirun_in_allocation(point, benchmark, stack, launcher, flavour, req, placement, env,
                                 machine), files=files)
    args = list(launcher.get("args") or [f"--mpi={flavour.srun_plugin}"])
    cpus = mapped_cpus(point, machine)
    binding = f"{SRUN_BINDING.split(',')[0]},map_cpu:{cpu_list(cpus)}" if cpus else SRUN_BINDING
    per_task = cpus_per_task(point, machine, allocation)
    argv = ["srun", "-v", *args, "-N", str(nodes), f"--ntasks-per-node={per_node}",
            "-n", str(nodes * per_node), *per_task, binding,
            "--kill-on-bad-exit=1"]
    distribution: List[str] = []
    if mapping:
        declared = machine.srun_distribution(mapping) if machine else None
        distribution = declared if declared is not None else DEFAULT_DISTRIBUTION[mapping]
    argv += distribution + list(stack.stack.launcher_args)
    bench = benchmark_argv(point, benchmark, stack)
    return LaunchCommand(argv + bench, flavour.srun_env(placement, env), stack.prepends(), False,
                         nodes * per_node, executable=bench[0],
                         expected=expected(flavour, req, "slurm",
                                           node_order=_node_order(distribution), cpus=cpus,
                                           cpus_per_rank=int(per_task[0].split("=")[1])
                                           if per_task else None),
                         files=files)


def cpus_per_task(point: Point, machine: Optional[Machine],
                  allocation: Optional[Allocation] = None) -> List[str]:
    """``--cpus-per-task``: the point's ``cpus_per_task``, else NERSC's rule from the machine's
    node facts: threads per core x floor(cores per node / ranks per node), so each rank gets
    whole cores and all of its hardware threads (docs.nersc.gov/jobs: ``-c`` = 2 x
    floor(128 / tasks per node) on Perlmutter's 128-core SMT2 nodes). With more ranks than cores,
    floor(logical CPUs / ranks), at least 1; never more than the allocation holds per node
    divided by the ranks (a job that is not exclusive holds fewer CPUs than the node has). Nothing
    without node facts."""
    per_node = int(point.get("ranks_per_node", 2))
    asked = point.get("cpus_per_task")
    if asked is not None:
        return [f"--cpus-per-task={int(asked)}"]
    node = machine.node if machine else {}
    if not node.get("sockets") or not node.get("cores_per_socket"):
        return []
    cores = int(node["sockets"]) * int(node["cores_per_socket"])
    threads = int(node.get("threads_per_core") or 1)
    value = threads * (cores // per_node) if cores >= per_node else (cores * threads) // per_node
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


def node_local(point: Point, benchmark: Benchmark, stack: ResolvedStack,
               machine: Optional[Machine], flavour: Flavour, req: Request,
               placement: Placement) -> LaunchCommand:
    """One task on one node, with the cores of every process, running the conduit's spawner."""
    if req.nodes != 1:
        raise LaunchError(f"point {point.id}: the {stack.stack.conduit} conduit runs on one node; "
                          f"nodes={req.nodes} needs a network conduit (ibv, ofi, ucx, mpi)")
    env, files = launch_files(point, flavour, req.ranks,
                              _environment(point, benchmark, stack, machine, {}))
    spawn = flavour.local(stack.launcher, req, placement, env)
    argv = ["srun", "-v", "-N", "1", "-n", "1", f"--cpus-per-task={req.ranks_per_node}",
            "--cpu-bind=none", "--kill-on-bad-exit=1", *spawn.argv, *stack.stack.launcher_args]
    bench = benchmark_argv(point, benchmark, stack)
    # The one srun task is the spawner, not a rank: srun's report would say nothing of ranks.
    return LaunchCommand(argv + bench, spawn.env, stack.prepends(), False, req.ranks_per_node,
                         executable=bench[0], expected=expected(flavour, req), files=files)


def mpirun_in_allocation(point: Point, benchmark: Benchmark, stack: ResolvedStack,
                         launcher: Dict, flavour: Flavour, req: Request, placement: Placement,
                         env: Dict[str, str], machine: Optional[Machine] = None) -> LaunchCommand:
    """The MPI's own launcher inside the allocation (it reads the node list from Slurm)."""
    command = [launcher["command"], *launcher.get("args", [])]
    try:
        launch = flavour.in_allocation(command, req, placement, env)
    except flavours.FlavourError as exc:
        raise LaunchError(f"point {point.id}: stack {stack.name!r}: {exc}") from None
    bench = benchmark_argv(point, benchmark, stack)
    return LaunchCommand(launch.argv + list(stack.stack.launcher_args) + bench, launch.env,
                         stack.prepends(), False, req.ranks, executable=bench[0],
                         expected=expected(flavour, req,
                                           cpus=mapped_cpus(point, machine, flavour.name),
                                           cpu_span=mapped_span(point, machine, flavour.name)))


def _environment(point: Point, benchmark: Benchmark, stack: ResolvedStack,
                 machine: Optional[Machine], launcher: Dict) -> Dict[str, str]:
    """Network variables, the launcher's (machine.yaml), the stack's and the point's."""
    env = dict(machine.network_env) if machine else {}
    env.update({k: str(v) for k, v in (launcher.get("env") or {}).items()})
    env.update(stack.env_delta())
    env.update(point_env(point, benchmark))
    return env


_ALLOCATION_GONE = re.compile(
    r"Expired or invalid job|Job/step already completing or completed|"
    r"job allocation \d+ has been revoked|Invalid job id specified|Job step aborted|"
    r"\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED AT", re.I)


def allocation_lost(stderr_text: str, job_id: Optional[str] = None) -> bool:
    """srun failed because the allocation no longer exists (cancelled, timed out, revoked).

    A step srun cancels itself (--kill-on-bad-exit after a task failed) prints the same
    "STEP ... CANCELLED" line, so with ``job_id`` the queue decides: a job still running has
    not lost its allocation, and the failure is the point's own."""
    if not _ALLOCATION_GONE.search(stderr_text):
        return False
    return job_id is None or not _still_running(job_id)


def _still_running(job_id: str) -> bool:
    try:
        out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True,
                             text=True, timeout=30).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "RUNNING" in out


_LAUNCH = re.compile(r"launching StepId=(\d+)\.(\d+) on host (\S+?),", re.M)


def step_provenance(stderr_text: str) -> Dict[str, object]:
    """Job id, step id and the step's nodes, from the lines `srun -v` prints per node."""
    launches = _LAUNCH.findall(stderr_text)
    nodes = list(dict.fromkeys(host for _, _, host in launches))
    return {
        "job_id": launches[0][0] if launches else None,
        "step_id": launches[0][1] if launches else None,
        "nodes": nodes,
    }
