"""Cray MPICH (HPE Cray PE): started only as a scheduler's step, through Cray PMI."""

from __future__ import annotations

from commstack.flavours.base import COMMON_FAMILIES, Flavour, Placement


class CrayMPICH(Flavour):
    name = "cray-mpich"
    label = "Cray MPICH"
    env_families = ("FI_", "MPIR_CVAR_", "MPICH_", *COMMON_FAMILIES)
    launches_locally = False
    pmi = "cray-pmi"
    # Placement is the step launcher's alone (its distribution and binding), which reports it.
    placements = {"block": Placement(), "cyclic": Placement()}
    spack_packages = ("cray-mpich",)
    external_probe = ("mpichversion",)

    def default_launcher(self, conduit: object = None) -> str:
        return "srun"


FLAVOUR = CrayMPICH()
