"""One point cut down to the test cluster: nodes, ranks per node and CPUs per rank within what
it has, then the benchmark family's own `scale_down` (sizes, iterations, decompositions)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict

from commstack.benchmarks.base import Benchmark


@dataclass(frozen=True)
class Budget:
    """What one rehearsal point may use: the cluster's nodes, and the cores they share
    (tests/cluster/slurm-up.sh: N=3 nodes in namespaces of this one machine). Ranks of all
    nodes together stay within the cores where they can: UCX and MPI busy-poll, and an
    oversubscribed step on 2 cores takes minutes instead of a second (measured: IMB Alltoall
    over UCX tcp, 2 nodes x 2 ranks or 3 nodes x 1 rank, 100 s; 2 nodes x 1 rank, 3 s)."""

    nodes: int = min(3, len(os.sched_getaffinity(0)))  # at least one core per node
    cores: int = len(os.sched_getaffinity(0))

    def ranks_per_node(self, nodes: int) -> int:
        return max(1, self.cores // nodes)


def scale_point(params: Dict[str, Any], benchmark: Benchmark, budget: Budget,
                node_local: bool = False) -> Dict[str, Any]:
    """``params`` for the cluster. ``node_local``: the local stack runs on one node only (GASNet-EX
    smp-conduit), so the point's ranks go onto one node."""
    out = dict(params)
    nodes = int(out.get("nodes", 1))
    per_node = int(out.get("ranks_per_node", 2))
    if node_local:
        per_node, nodes = nodes * per_node, 1
    out["nodes"] = min(nodes, budget.nodes)
    out["ranks_per_node"] = max(1, min(per_node, budget.ranks_per_node(out["nodes"])))
    if "cpus_per_task" in out:
        out["cpus_per_task"] = max(1, min(int(out["cpus_per_task"]),
                                          budget.cores // out["ranks_per_node"]))
    if benchmark.scale_down:
        out = benchmark.scale_down(out, out["nodes"] * out["ranks_per_node"])
    return out
