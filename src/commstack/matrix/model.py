"""Plain data for a loaded matrix and the points it expands to."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from commstack.benchmarks.registry import Benchmark

DEFAULT_REPEATS = 5
DEFAULT_TIMEOUT_S = 600.0
ORDERS = ("shuffled", "fixed")  # order of the points within a repeat (commstack.run_order)


@dataclass(frozen=True)
class Adaptive:
    """``repeats: {min, max, ci}``: repeat a point until the 95 % interval of its median lies
    within +-``ci`` (relative) at every result row, after at least ``min`` and at most ``max``
    repeats (commstack.adaptive)."""

    min: int
    max: int
    ci: float


@dataclass(frozen=True)
class Stack:
    """A named MPI stack variant: which MPI, where its binaries are, how to launch.

    flavour ``gasnet`` is a GASNet-EX installation; ``conduit`` (smp, udp, mpi, ibv, ofi, ucx)
    picks its executables (``testlarge-<conduit>``) and launcher.
    """

    name: str
    flavour: str
    prefix: Optional[str] = None
    view: Optional[str] = None
    bin: Optional[str] = None
    launcher: Optional[str] = None
    launcher_args: Tuple[str, ...] = ()
    # Inside an allocation: "machine" (machine.yaml's launchers.<flavour>) or "own" (the stack's
    # own launcher, e.g. the mpirun a published study used instead of srun).
    allocation_launcher: str = "machine"
    env: Tuple[Tuple[str, str], ...] = ()
    optional: bool = False
    conduit: Optional[str] = None
    unresolved: Optional[str] = None  # why an optional stack cannot be used (unset variable)
    deviations: Tuple[str, ...] = ()  # from the published study's stack (records' notes)
    noise: float = 0.0  # simulated stacks: log-sd of a per-launch factor on every time

    @property
    def root(self) -> Optional[str]:
        """The installation root: a Spack view, else a prefix."""
        return self.view or self.prefix


@dataclass(frozen=True)
class Point:
    """One combination of parameter values; its id is stable across matrix edits."""

    benchmark: str
    params: Tuple[Tuple[str, Any], ...]

    @functools.cached_property  # a frozen dataclass: computed once, status asks 10,000s of times
    def id(self) -> str:
        blob = json.dumps([self.benchmark, list(self.params)], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.params)

    def get(self, name: str, default: Any = None) -> Any:
        return self.as_dict().get(name, default)


@dataclass
class Matrix:
    path: Path
    text: str
    campaign: str
    benchmark: Benchmark
    stacks: Dict[str, Stack]
    repeats: int = DEFAULT_REPEATS  # the most repeats a point takes (adaptive: its max)
    adaptive: Optional[Adaptive] = None  # repeats until precise (``repeats: {min, max, ci}``)
    order: str = "shuffled"  # of the points within a repeat: shuffled (seeded) or fixed
    seed: Optional[int] = None  # of the shuffled order; None: derived from the campaign name
    # "jobs": `commstack submit` takes each repeat in its own Slurm job
    # (docs/reference/slurm.md: Repeats across jobs).
    repeats_across: str = "allocation"
    timeout: float = DEFAULT_TIMEOUT_S
    description: str = ""
    parameters: Dict[str, Any] = field(default_factory=dict)
    product: Dict[str, List[Any]] = field(default_factory=dict)
    zip: List[Dict[str, List[Any]]] = field(default_factory=list)
    exclude: List[Dict[str, Any]] = field(default_factory=list)
    settings: Dict[str, Dict[str, Dict[str, Any]]] = field(default_factory=dict)  # named settings
    node_type: Optional[str] = None  # machine.yaml node_types; None: the machine's default
    deviations: List[str] = field(default_factory=list)  # from the published setup (records' notes)

    @property
    def first_repeats(self) -> int:
        """Repeats every point takes (adaptive: ``min``; then only points not yet precise)."""
        return self.adaptive.min if self.adaptive else self.repeats

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


class MatrixError(ValueError):
    """A matrix that cannot be run; the message names the file and the key."""


#: How a record's notes name a deviation of its campaign from the published setup it reproduces.
DEVIATION = "deviation from the published setup: "


def deviation_notes(matrix: "Matrix", stack: str) -> List[str]:
    """The notes every record of ``stack`` in ``matrix`` carries: the matrix's deviations, then
    the stack's own."""
    own = matrix.stacks[stack].deviations if stack in matrix.stacks else ()
    return [DEVIATION + d for d in [*matrix.deviations, *own]]
