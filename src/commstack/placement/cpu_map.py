"""Explicit per-rank CPU lists generated from a machine's node facts (machine.yaml
``mapping.<m>.cpu_map``), for studies that define their mappings by CPU lists.

Oracle's BM.Optimized3.36 study (oracle-japan/ocitutorials, tutorials/_hpc/benchmark/
cpu-binding.md; shared research oci_mapping.md) places k ranks per node by NUMA domain: its block
splits the ranks evenly over the node's NUMA domains, consecutive ranks in one domain from its
first core (NPS1, k=4: 0,1,18,19; NPS2, k=8: 0,1,9,10,18,19,27,28); its cyclic deals them
round-robin over the domains (NPS1: 0,18,1,19,...; NPS2: 0,9,18,27,1,10,...); one rank per node
sits on the NIC's socket (map_cpu:18).

GHEX-BENCH's Betzy runs (ghexbench run/betzy/compute/bench.xml) pin Intel MPI with
I_MPI_PIN_PROCESSOR_LIST=$(seq -s, 0 2 127) at 64 ranks per node and $(seq -s, 0 1 127) at 128:
``spread`` lays k ranks evenly over the node's cores, rank r on core r * cores / k.

The domains are node.sockets x node.numa_per_socket, each of cores_per_socket / numa_per_socket
cores, numbered domain by domain (domain d holds d*cores_per_domain ...), as Linux numbers the
first hardware thread of each core; a rank's CPU is its core's first hardware thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

ORDERS = ("block", "cyclic", "spread")


class CpuMapError(ValueError):
    """A CPU map that cannot be made for this many ranks on this node."""


@dataclass(frozen=True)
class CpuMap:
    """How ranks are laid on a node's cores: ``order`` over ``sockets`` x ``numa_per_socket``
    NUMA domains of ``cores_per_socket / numa_per_socket`` cores; ``one_rank``: the CPU of a
    single rank per node (None: the first core)."""

    order: str
    sockets: int
    cores_per_socket: int
    one_rank: Optional[int] = None
    numa_per_socket: int = 1

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise CpuMapError(f"order {self.order!r} is not one of {', '.join(ORDERS)}")
        if self.numa_per_socket < 1 or self.cores_per_socket % self.numa_per_socket:
            raise CpuMapError(f"{self.cores_per_socket} cores per socket do not split into "
                              f"{self.numa_per_socket} NUMA domains of equal size")

    @classmethod
    def from_facts(cls, declared: Dict[str, Any], node: Dict[str, Any]) -> "CpuMap":
        return cls(str(declared["order"]), int(node["sockets"]), int(node["cores_per_socket"]),
                   declared.get("one_rank"), int(node.get("numa_per_socket", 1)))

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def domains(self) -> int:
        """NUMA domains per node."""
        return self.sockets * self.numa_per_socket

    @property
    def cores_per_domain(self) -> int:
        return self.cores_per_socket // self.numa_per_socket

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
        if self.order == "spread":
            if self.cores % k:
                raise CpuMapError(f"spread lays ranks evenly over the node's {self.cores} cores; "
                                  f"{k} ranks per node do not divide them")
            return tuple(r * (self.cores // k) for r in range(k))
        size = self.cores_per_domain
        if self.order == "cyclic":
            return tuple((r % self.domains) * size + r // self.domains for r in range(k))
        if k % self.domains:
            raise CpuMapError(f"block splits ranks evenly over the {self.domains} NUMA domains "
                              f"({self.sockets} sockets x {self.numa_per_socket}); {k} ranks per "
                              "node do not split evenly")
        per_domain = k // self.domains
        return tuple(d * size + i for d in range(self.domains) for i in range(per_domain))

    def span(self, ranks_per_node: int) -> int:
        """How many consecutive cores from its CPU a rank may hold: spread gives each of k ranks
        cores / k (Open MPI's ppr:N:socket:pe=M binds all M; Intel MPI's list, the first);
        block and cyclic one."""
        if self.order != "spread" or ranks_per_node < 1:
            return 1
        return max(1, self.cores // ranks_per_node)

    def placeholders(self, ranks_per_node: int) -> Dict[str, str]:
        """What ``{cpus}`` (the list, comma-separated), ``{ranks_per_socket}`` and
        ``{cores_per_rank}`` stand for in a flavour's placement arguments and variables."""
        per_socket = ranks_per_node // self.sockets if ranks_per_node % self.sockets == 0 else 0
        return {"cpus": cpu_list(self.cpus(ranks_per_node)),
                "ranks_per_socket": str(per_socket),
                "cores_per_rank": str(self.span(ranks_per_node))}


def cpu_list(cpus: Tuple[int, ...]) -> str:
    return ",".join(map(str, cpus))
