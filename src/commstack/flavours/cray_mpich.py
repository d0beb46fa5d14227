"""Cray MPICH (HPE Cray PE): started by srun only, through Cray PMI (Slurm's cray_shasta)."""

from __future__ import annotations

from commstack.flavours.base import COMMON_FAMILIES, Flavour, Placement


class CrayMPICH(Flavour):
    name = "cray-mpich"
    label = "Cray MPICH"
    env_families = ("FI_", "MPIR_CVAR_", "MPICH_", *COMMON_FAMILIES)
    launches_locally = False
    srun_plugin = "cray_shasta"
    # Placement is srun's alone (--distribution, --cpu-bind), reported by --cpu-bind=verbose.
    placements = {"block": Placement(), "cyclic": Placement()}
    spack_packages = ("cray-mpich",)
    external_probe = ("mpichversion",)

    def default_launcher(self, conduit: object = None) -> str:
        return "srun"


FLAVOUR = CrayMPICH()
