"""Turn a point into the exact launch command: argv plus the environment it sets.

Each flavour's launcher spells rank count, placement and exported variables differently;
this module is the only place that knows those spellings for local runs.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Dict, List

from commstack.benchmarks.registry import Benchmark
from commstack.launch.stack import ResolvedStack, apply_env
from commstack.matrix import parameters as P
from commstack.matrix.model import Point

# block: consecutive ranks fill one NUMA domain first; cyclic: round-robin over NUMA domains.
OPENMPI_MAPPING = {"block": ["--map-by", "core"], "cyclic": ["--map-by", "numa"]}
MPICH_MAPPING = {"block": ["-map-by", "core"], "cyclic": ["-map-by", "numa"]}
INTELMPI_MAPPING = {
    "block": {"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "compact"},
    "cyclic": {"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "scatter"},
}


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


def benchmark_params(point: Point, benchmark: Benchmark) -> Dict[str, object]:
    return {
        k: v for k, v in point.params if k in benchmark.options or k == "executable"
    }


def benchmark_argv(point: Point, benchmark: Benchmark, stack: ResolvedStack) -> List[str]:
    """The benchmark's argv with its executable found in the stack (absolute path)."""
    argv = benchmark.argv(benchmark_params(point, benchmark))
    argv[0] = stack.find(argv[0])
    return argv


def gasnet_spawn(stack: ResolvedStack, ranks: int) -> List[str]:
    """A GASNet-EX conduit's spawner on this node: amudprun forks udp processes locally;
    gasnetrun_<conduit> takes -n for every other conduit."""
    if os.path.basename(stack.launcher).startswith("amudprun"):
        return [stack.launcher, "-np", str(ranks), "-spawn", "L"]
    return [stack.launcher, "-n", str(ranks)]


def local_command(
    point: Point, benchmark: Benchmark, stack: ResolvedStack, cores: int = 0
) -> LaunchCommand:
    """The mpirun/mpiexec command for a point on this node."""
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

    argv_bench = benchmark_argv(point, benchmark, stack)
    env = stack.env_delta()
    env.update(point_env(point, benchmark))
    mapping = point.get("mapping")
    flavour = stack.flavour

    if flavour == "openmpi":
        argv = [stack.launcher, "-np", str(ranks)]
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        if oversubscribed:
            argv.append("--oversubscribe")
        if mapping:
            spec = OPENMPI_MAPPING[mapping]
            argv += [spec[0], spec[1] + (":OVERSUBSCRIBE" if oversubscribed else "")]
            argv += ["--bind-to", "core:overload-allowed" if oversubscribed else "core"]
        for name in sorted(env):
            argv += ["-x", name]
    elif flavour == "gasnet":
        if mapping:
            raise LaunchError(f"point {point.id}: mapping is not available for GASNet-EX stacks "
                              "(set GASNET_ placement variables instead)")
        argv = gasnet_spawn(stack, ranks)
    elif flavour in ("intelmpi", "mpich"):
        argv = [stack.launcher, "-n", str(ranks), "-ppn", str(ranks)]
        if mapping and flavour == "intelmpi":
            env.update(INTELMPI_MAPPING[mapping])
        elif mapping:
            argv += ["-bind-to", "core", *MPICH_MAPPING[mapping]]
    else:
        raise LaunchError(
            f"point {point.id}: stack {stack.name!r} is {flavour}, which is launched with srun "
            "inside a Slurm allocation, not locally"
        )
    argv += list(stack.stack.launcher_args)
    return LaunchCommand(argv + argv_bench, env, stack.prepends(), oversubscribed, ranks,
                         executable=argv_bench[0])
