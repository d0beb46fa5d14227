"""Explicit per-rank CPU lists generated from a machine's node facts (machine.yaml
``mapping.<m>.cpu_map``), for studies that define their mappings by CPU lists.

Oracle's BM.Optimized3.36 study (oracle-japan/ocitutorials, tutorials/_hpc/benchmark/
cpu-binding.md) binds k ranks per node with ``--cpu-bind=map_cpu:``: its block splits the ranks
evenly over the sockets, consecutive ranks in one socket from its first core (k=4: 0,1,18,19);
its cyclic (``--cpu-bind=cores`` with Slurm's default block:cyclic) deals them round-robin over
the sockets (0,18,1,19); one rank per node sits on the NIC's socket (map_cpu:18).

Cores are numbered socket by socket (socket s holds s*cores_per_socket ...), as Linux numbers
the first hardware thread of each core; a rank's CPU is its core's first hardware thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

ORDERS = ("block", "cyclic")


class CpuMapError(ValueError):
    """A CPU map that cannot be made for this many ranks on this node."""


@dataclass(frozen=True)
class CpuMap:
    """How ranks are laid on a node's cores: ``order`` over ``sockets`` x ``cores_per_socket``;
    ``one_rank``: the CPU of a single rank per node (None: the first core)."""

    order: str
    sockets: int
    cores_per_socket: int
    one_rank: Optional[int] = None

    @classmethod
    def from_facts(cls, declared: Dict[str, Any], node: Dict[str, Any]) -> "CpuMap":
        return cls(str(declared["order"]), int(node["sockets"]), int(node["cores_per_socket"]),
                   declared.get("one_rank"))

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    def cpus(self, ranks_per_node: int) -> Tuple[int, ...]:
        """The CPU of each rank on a node, by its index on the node."""
        k = ranks_per_node
        if k < 1 or k > self.cores:
            raise CpuMapError(f"{k} ranks per node do not fit one per core on "
                              f"{self.sockets} x {self.cores_per_socket} cores")
        if k == 1:
            cpu = 0 if self.one_rank is None else int(self.one_rank)
            if not 0 <= cpu < self.cores:
                raise CpuMapError(f"one_rank: CPU {cpu} is not one of the node's {self.cores}")
            return (cpu,)
        if self.order == "cyclic":
            return tuple((r % self.sockets) * self.cores_per_socket + r // self.sockets
                         for r in range(k))
        if k % self.sockets:
            raise CpuMapError(f"block splits ranks evenly over the {self.sockets} sockets; "
                              f"{k} ranks per node do not split evenly")
        per_socket = k // self.sockets
        return tuple(s * self.cores_per_socket + i
                     for s in range(self.sockets) for i in range(per_socket))

    def placeholders(self, ranks_per_node: int) -> Dict[str, str]:
        """What ``{cpus}`` (the list, comma-separated) and ``{ranks_per_socket}`` stand for in a
        flavour's placement arguments and variables."""
        per_socket = ranks_per_node // self.sockets if ranks_per_node % self.sockets == 0 else 0
        return {"cpus": cpu_list(self.cpus(ranks_per_node)),
                "ranks_per_socket": str(per_socket)}


def cpu_list(cpus: Tuple[int, ...]) -> str:
    return ",".join(map(str, cpus))
