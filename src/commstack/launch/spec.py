"""What a point's launch is made of (:class:`LaunchSpec`), whoever makes it: the builder on a
machine (commstack.launch.builder) or a simulator (commstack.launch.simulation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from commstack.benchmarks.registry import Benchmark
from commstack.flavours import Flavour, Launch, Placement, Request, RunFile
from commstack.launch.stack import ResolvedStack
from commstack.machine import LaunchFacts
from commstack.matrix.model import Point
from commstack.placement.model import Expected
from commstack.schedulers.allocation import Allocation


class LaunchError(ValueError):
    """A point that this launcher cannot run as asked."""


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a point's command line is made of; ``allocation`` None: a launch on this node."""

    point: Point
    stack: ResolvedStack
    flavour: Flavour
    facts: LaunchFacts
    request: Request
    placement: Placement  # the machine's CPU map filled in
    env: Dict[str, str]  # the point's variables as launched, before the launcher adds its own
    files: Tuple[RunFile, ...]
    benchmark_argv: List[str]  # its executable by absolute path
    # What placement the run must show (checked after it); a launcher adds what it knows more.
    expected: Expected
    cpus: Optional[Tuple[int, ...]] = None  # each local rank's CPU by the machine's CPU map
    # Where the flavour's own launcher places the ranks by a map (its own, else the mapping's):
    # only when the machine's placement for it uses the map ({cpus}, {ranks_per_socket},
    # {cores_per_rank}).
    launcher_cpus: Optional[Tuple[int, ...]] = None
    launcher_span: int = 1  # with launcher_cpus: the cores from its CPU a rank may hold
    allocation: Optional[Allocation] = None
    # A simulated flavour's launch and what it simulates (flavour.simulate), made here.
    simulated: Optional[Tuple[Launch, Any]] = None

    @property
    def executable(self) -> str:
        return self.benchmark_argv[0]

    @property
    def node_local(self) -> bool:
        """A conduit whose processes share one node: its own spawner starts them all."""
        return self.stack.stack.conduit in self.flavour.node_local_conduits


def benchmark_files(benchmark: Benchmark, options: Dict[str, Any]) -> Tuple[RunFile, ...]:
    """The files the benchmark's own options write into the run's folder (IMB's -msglen)."""
    return tuple(RunFile(name, text, variable, f"{name}: written for the benchmark's arguments")
                 for name, text, variable in benchmark.files(options))
