"""MPICH: hydra's mpiexec, MPIR_CVAR_*/MPICH_* variables, -bind-to/-map-by, HYDRA_TOPO_DEBUG."""

from __future__ import annotations

from typing import Dict, Sequence

from commstack.flavours.base import (
    COMMON_FAMILIES,
    Flavour,
    Launch,
    Placement,
    Request,
    VersionTool,
)


class MPICH(Flavour):
    name = "mpich"
    label = "MPICH"
    env_families = ("UCX_", "FI_", "MPIR_CVAR_", "MPICH_", *COMMON_FAMILIES)
    srun_plugin = "pmi2"
    binding_report = "hydra"
    version_tools = (VersionTool("mpichversion.txt", ("mpichversion",)),)
    placements = {
        "block": Placement.of(["-bind-to", "core", "-map-by", "core"]),
        "cyclic": Placement.of(["-bind-to", "core", "-map-by", "numa"]),
    }

    def default_launcher(self, conduit: object = None) -> str:
        return "mpiexec"

    def report_env(self, env: Dict[str, str]) -> Dict[str, str]:
        # hydra prints "process <i> binding: 0100..." per process on stdout. (Before MPICH 4 it
        # printed the plan without binding; the placement check flags that.)
        return {} if "HYDRA_TOPO_DEBUG" in env else {"HYDRA_TOPO_DEBUG": "1"}

    def local(self, launcher: str, req: Request, placement: Placement,
              env: Dict[str, str]) -> Launch:
        argv = [launcher, "-n", str(req.ranks_per_node), "-ppn", str(req.ranks_per_node)]
        return Launch(argv + list(placement.args), self.placed_env(placement, env))

    def in_allocation(self, command: Sequence[str], req: Request, placement: Placement,
                      env: Dict[str, str]) -> Launch:
        argv = [*command, "-n", str(req.ranks), "-ppn", str(req.ranks_per_node)]
        return Launch(argv + list(placement.args), self.placed_env(placement, env))


FLAVOUR = MPICH()
