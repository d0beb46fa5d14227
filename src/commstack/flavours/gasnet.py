"""GASNet-EX: the conduit's own spawner (gasnetrun_<conduit>, amudprun for udp), GASNET_* variables.

The tests print no binding report; a mapping needs machine.yaml's mapping.<m>.gasnet."""

from __future__ import annotations

import os
from typing import Dict, Optional, Sequence

from commstack.flavours.base import COMMON_FAMILIES, Flavour, Launch, Placement, Request, with_env


class GasnetEX(Flavour):
    name = "gasnet"
    label = "GASNet-EX"
    env_families = ("UCX_", "FI_", "GASNET_", *COMMON_FAMILIES)
    conduits = ("smp", "udp", "mpi", "ibv", "ofi", "ucx")
    node_local_conduits = ("smp", "udp")  # one node; the spawner forks the processes
    pmi = "pmi2"  # network conduits start in a scheduler's step through PMI
    placements: Dict[str, Placement] = {}  # GASNet-EX does not bind by itself

    def ucx_evidence(self, env: Dict[str, str], conduit: Optional[str] = None) -> Optional[str]:
        return "GASNet-EX ucx conduit" if conduit == "ucx" else None

    def default_launcher(self, conduit: Optional[str] = None) -> str:
        return "amudprun" if conduit == "udp" else f"gasnetrun_{conduit}"

    def local(self, launcher: str, req: Request, placement: Placement,
              env: Dict[str, str]) -> Launch:
        # amudprun forks udp processes locally with -spawn L; gasnetrun_<conduit> takes -n.
        if os.path.basename(launcher).startswith("amudprun"):
            argv = [launcher, "-np", str(req.ranks_per_node), "-spawn", "L"]
        else:
            argv = [launcher, "-n", str(req.ranks_per_node)]
        return Launch(argv + list(placement.args), with_env(env, placement.env_dict))

    def in_allocation(self, command: Sequence[str], req: Request, placement: Placement,
                      env: Dict[str, str]) -> Launch:
        argv = [*command, "-n", str(req.ranks), "-N", str(req.nodes)]
        return Launch(argv + list(placement.args), with_env(env, placement.env_dict))


FLAVOUR = GasnetEX()
