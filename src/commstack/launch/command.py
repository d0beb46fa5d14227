"""The exact launch command (argv plus the environment it sets), and a point's on this node.

A point's launch is resolved once (commstack.launch.builder); ``local`` makes it the flavour's
launcher on this node, a scheduler's ``step`` (commstack.schedulers) a step of an allocation.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from commstack.benchmarks.registry import Benchmark
from commstack.flavours import RunFile, ucc_tune
from commstack.launch.builder import LaunchError, LaunchSpec, build  # noqa: F401 (LaunchError here as before)
from commstack.launch.stack import ResolvedStack, apply_env
from commstack.machine import Machine, machine_launcher  # noqa: F401 (as before)
from commstack.matrix.model import Point
from commstack.matrix.parameters import benchmark_params  # noqa: F401 (as before)
from commstack.placement.model import Expected
from commstack.shell_line import shell_line
from commstack.store.files import write_new


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
    simulation: Any = None  # a simulated launch's description (flavours.smpi.Simulation)

    @classmethod
    def of(cls, spec: LaunchSpec, launcher: List[str], env: Dict[str, str],
           expected: Expected) -> "LaunchCommand":
        """``launcher`` (the launcher's part of argv) and the stack's arguments before the
        point's benchmark, with the launch's environment ``env``."""
        return cls([*launcher, *spec.stack.stack.launcher_args, *spec.benchmark_argv], env,
                   spec.stack.prepends(), spec.request.oversubscribed, spec.request.ranks,
                   spec.executable, expected, spec.files,
                   spec.simulated[1] if spec.simulated else None)

    def placed(self, directory: Path) -> "LaunchCommand":
        """This command for a run in ``directory``: its files written there (never over an
        existing one), their variables naming them by absolute path, and ``${VARIABLE}`` in its
        arguments replaced by that path (a launcher that takes the file as an argument)."""
        simulation = self.simulation
        argv = list(self.argv)
        if simulation is not None:  # a simulator's run may draw what is its own (noise)
            argv, simulation = simulation.place(argv, directory)
        if not self.files:
            return dataclasses.replace(self, argv=argv, simulation=simulation)
        env = dict(self.env)
        for item in self.files:
            path = directory.resolve() / item.name
            write_new(path, item.text.encode())
            env[item.variable] = str(path)
            argv = [str(path) if a == "${%s}" % item.variable else a for a in argv]
        return dataclasses.replace(self, env=env, argv=argv, simulation=simulation)

    def notes(self) -> List[str]:
        """What the record says of the files this command launched with, and of a per-size
        UCC_TL_UCP_TUNE in its environment."""
        return [item.note for item in self.files if item.note] + ucc_tune.notes(self.env)

    def full_env(self) -> Dict[str, str]:
        return apply_env(os.environ, self.env, self.prepends)

    def shell(self) -> str:
        """One line a user can paste into a shell to run exactly this."""
        return shell_line(self.argv, self.env, self.prepends)


def local(spec: LaunchSpec) -> LaunchCommand:
    """The flavour's launcher for a point on this node."""
    if spec.simulated:
        return LaunchCommand.of(spec, spec.simulated[0].argv, spec.simulated[0].env, spec.expected)
    launch = spec.flavour.local(spec.stack.launcher, spec.request, spec.placement, spec.env)
    return LaunchCommand.of(spec, launch.argv, launch.env,
                            dataclasses.replace(spec.expected, cpus=spec.launcher_cpus,
                                               cpu_span=spec.launcher_span))


def local_command(point: Point, benchmark: Benchmark, stack: ResolvedStack, cores: int = 0,
                  machine: Optional[Machine] = None) -> LaunchCommand:
    return local(build(point, benchmark, stack, machine, cores=cores))
