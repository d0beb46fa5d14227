"""Launching points inside a Slurm allocation with srun.

Inside an allocation (SLURM_JOB_ID set) every point becomes one job step:
``srun --mpi=<pmix|pmi2> -N <nodes> --ntasks-per-node=<r> -n <nodes*r> --cpu-bind=cores
--distribution=<block|cyclic>...`` using the machine's facts (site-configs/<machine>/machine.yaml).
Points needing fewer nodes than allocated run on a subset (Slurm picks the nodes).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from commstack.benchmarks.registry import Benchmark
from commstack.launch.command import (
    LaunchCommand,
    LaunchError,
    benchmark_argv,
    gasnet_spawn,
    point_env,
)
from commstack.launch.stack import ResolvedStack
from commstack.machine import Machine
from commstack.matrix.model import Point

# --mpi plugin per flavour when the machine does not say: Debian/most builds of Open MPI speak
# PMIx; MPICH and Intel MPI speak PMI2 (Intel MPI also needs I_MPI_PMI_LIBRARY, a machine fact).
# GASNet-EX network conduits (ibv, ofi, ucx, mpi) start under srun through PMI as well.
DEFAULT_MPI_PLUGIN = {"openmpi": "pmix", "mpich": "pmi2", "intelmpi": "pmi2",
                      "cray-mpich": "cray_shasta", "gasnet": "pmi2"}
# Conduits whose processes share one node and are spawned by the conduit's own launcher.
NODE_LOCAL_CONDUITS = ("smp", "udp")
DEFAULT_DISTRIBUTION = {"block": ["--distribution=block:block"], "cyclic": ["--distribution=cyclic:cyclic"]}
_TIME_LEFT = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


@dataclass
class Allocation:
    """The Slurm allocation this process runs in."""

    job_id: str
    nodes: List[str] = field(default_factory=list)
    partition: Optional[str] = None
    deadline: Optional[float] = None  # epoch seconds; None when unlimited or unknown

    @classmethod
    def from_environment(cls) -> Optional["Allocation"]:
        job = os.environ.get("SLURM_JOB_ID")
        if not job:
            return None
        nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
        return cls(job, expand_nodelist(nodelist), os.environ.get("SLURM_JOB_PARTITION"),
                   _deadline(job))

    def remaining_s(self) -> Optional[float]:
        return None if self.deadline is None else self.deadline - time.time()


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
    if stack.stack.conduit in NODE_LOCAL_CONDUITS:
        return node_local_gasnet(point, benchmark, stack, machine, nodes, per_node)
    launcher = (machine.launcher(stack.flavour) if machine else None) or {}
    command = launcher.get("command", "srun")
    if command != "srun":
        return mpirun_in_allocation(point, benchmark, stack, launcher, nodes, per_node)
    args = list(launcher.get("args") or [f"--mpi={DEFAULT_MPI_PLUGIN[stack.flavour]}"])
    argv = ["srun", "-v", *args, "-N", str(nodes), f"--ntasks-per-node={per_node}",
            "-n", str(nodes * per_node), "--cpu-bind=cores", "--kill-on-bad-exit=1"]
    mapping = point.get("mapping")
    if mapping:
        placement = machine.placement(mapping) if machine else {}
        argv += placement.get("srun", DEFAULT_DISTRIBUTION[mapping])
    argv += list(stack.stack.launcher_args)
    bench = benchmark_argv(point, benchmark, stack)
    env = _environment(point, benchmark, stack, machine, launcher)
    return LaunchCommand(argv + bench, env, stack.prepends(), False, nodes * per_node,
                         executable=bench[0])


def node_local_gasnet(point: Point, benchmark: Benchmark, stack: ResolvedStack,
                      machine: Optional[Machine], nodes: int, per_node: int) -> LaunchCommand:
    """One task on one node, with the cores of every process, running the conduit's spawner."""
    if nodes != 1:
        raise LaunchError(f"point {point.id}: the {stack.stack.conduit} conduit runs on one node; "
                          f"nodes={nodes} needs a network conduit (ibv, ofi, ucx, mpi)")
    if point.get("mapping"):
        raise LaunchError(f"point {point.id}: mapping is not available for GASNet-EX stacks")
    argv = ["srun", "-v", "-N", "1", "-n", "1", f"--cpus-per-task={per_node}", "--cpu-bind=none",
            "--kill-on-bad-exit=1", *gasnet_spawn(stack, per_node), *stack.stack.launcher_args]
    bench = benchmark_argv(point, benchmark, stack)
    env = _environment(point, benchmark, stack, machine, {})
    return LaunchCommand(argv + bench, env, stack.prepends(), False, per_node, executable=bench[0])


def mpirun_in_allocation(point: Point, benchmark: Benchmark, stack: ResolvedStack,
                         launcher: Dict, nodes: int, per_node: int) -> LaunchCommand:
    """The MPI's own launcher inside the allocation (it reads the node list from Slurm)."""
    ranks = nodes * per_node
    argv = [launcher["command"], *launcher.get("args", [])]
    if stack.flavour == "openmpi":
        argv += ["-np", str(ranks), "--map-by", f"ppr:{per_node}:node"]
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
    elif stack.flavour == "gasnet":  # gasnetrun_<conduit> -n <processes> -N <nodes>
        argv += ["-n", str(ranks), "-N", str(nodes)]
    else:
        argv += ["-n", str(ranks), "-ppn", str(per_node)]
    bench = benchmark_argv(point, benchmark, stack)
    env = _environment(point, benchmark, stack, None, launcher)
    if stack.flavour == "openmpi":
        for name in sorted(env):
            argv += ["-x", name]
    return LaunchCommand(argv + bench, env, stack.prepends(), False, ranks, executable=bench[0])


def _environment(point: Point, benchmark: Benchmark, stack: ResolvedStack,
                 machine: Optional[Machine], launcher: Dict) -> Dict[str, str]:
    env = dict(machine.network_env) if machine else {}
    env.update({k: str(v) for k, v in (launcher.get("env") or {}).items()})
    env.update(stack.env_delta())
    env.update(point_env(point, benchmark))
    mapping = point.get("mapping")
    if mapping and stack.flavour == "intelmpi" and machine:
        env.update(machine.placement(mapping).get("intelmpi_env", {}))
    return env


_ALLOCATION_GONE = re.compile(
    r"Expired or invalid job|Job/step already completing or completed|"
    r"job allocation \d+ has been revoked|Invalid job id specified|Job step aborted|"
    r"\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED AT", re.I)


def allocation_lost(stderr_text: str) -> bool:
    """srun failed because the allocation no longer exists (cancelled, timed out, revoked)."""
    return bool(_ALLOCATION_GONE.search(stderr_text))


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
