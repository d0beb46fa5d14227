"""MPICH: hydra's mpiexec, MPIR_CVAR_*/MPICH_* variables, -bind-to/-map-by, HYDRA_TOPO_DEBUG."""

from __future__ import annotations

from typing import Dict, Tuple

from commstack.flavours.base import (
    COMMON_FAMILIES,
    Hydra,
    Placement,
    VersionTool,
)


class MPICH(Hydra):
    name = "mpich"
    label = "MPICH"
    env_families = ("UCX_", "FI_", "MPIR_CVAR_", "MPICH_", *COMMON_FAMILIES)
    pmi = "pmi2"
    binding_report = "hydra"
    version_tools = (VersionTool("mpichversion.txt", ("mpichversion",),
                                 r"MPICH Version:\s*(\S+)"),)
    spack_packages = ("mpich",)
    external_probe = ("mpichversion",)
    placements = {
        "block": Placement.of(["-bind-to", "core", "-map-by", "core"]),
        "cyclic": Placement.of(["-bind-to", "core", "-map-by", "numa"]),
    }

    def default_launcher(self, conduit: object = None) -> str:
        return "mpiexec"

    def variable_tools(self) -> Dict[str, Tuple[str, ...]]:
        # mpivars prints every control variable (MPIR_CVAR_*) of the library it is linked with.
        return {**super().variable_tools(), "MPIR_CVAR_": ("mpivars",)}

    def report_env(self, env: Dict[str, str]) -> Dict[str, str]:
        # hydra prints "process <i> binding: 0100..." per process on stdout. (Before MPICH 4 it
        # printed the plan without binding; the placement check flags that.)
        return {} if "HYDRA_TOPO_DEBUG" in env else {"HYDRA_TOPO_DEBUG": "1"}


FLAVOUR = MPICH()
