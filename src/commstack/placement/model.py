"""Plain data of placement: what a launch asked for, and where one rank was bound."""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple


@dataclass(frozen=True)
class Expected:
    """What a launch asked of placement, and which binding reports it asked for."""

    mapping: Optional[str]
    ranks_per_node: int
    nodes: int = 1
    oversubscribed: bool = False
    reports: Tuple[str, ...] = ()  # parser names (placement.reports), most authoritative first
    node_order: Optional[str] = None  # block | cyclic: ranks over nodes (srun's --distribution)
    cpus: Optional[Tuple[int, ...]] = None  # the machine's CPU map: each local rank's CPU
    cpus_per_rank: Optional[int] = None  # srun --cpus-per-task: processors each rank may hold
    cpu_span: int = 1  # with ``cpus``: the consecutive cores from its CPU a rank may hold
    # A simulated launch: each rank's host (a simulated NUMA domain, ``node0-numa1``), in order.
    hosts: Optional[Tuple[str, ...]] = None


@dataclass(frozen=True)
class Binding:
    """One rank's binding as a report stated it.

    Reports name processors differently: OS indices (Slurm masks, Intel MPI, hydra), hwloc
    logical processor or core indices (Open MPI). Exactly one of ``cpus``, ``logical_pus`` and
    ``logical_cores`` is set for a bound rank; none when the report says the rank is not bound
    (or bound to every processor). ``rank`` is the global rank, ``local`` its index among the
    ranks of its node (hydra reports only that); ``host`` is None when the report has none."""

    rank: Optional[int]
    cpus: Optional[FrozenSet[int]] = None
    host: Optional[str] = None
    local: Optional[int] = None
    logical_pus: Optional[FrozenSet[int]] = None
    logical_cores: Optional[FrozenSet[int]] = None
    node: Optional[int] = None  # which node, when the report names none (hydra): 0, 1, ...

    @property
    def bound(self) -> bool:
        return any(x is not None for x in (self.cpus, self.logical_pus, self.logical_cores))
