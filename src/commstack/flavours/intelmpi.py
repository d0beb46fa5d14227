"""Intel MPI: hydra's mpirun, I_MPI_* variables, pinning by I_MPI_PIN_*, I_MPI_DEBUG's pin table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

from commstack.flavours.base import (
    COMMON_FAMILIES,
    Hydra,
    Placement,
    VersionTool,
)

# I_MPI_DEBUG=4 prints "MPI startup(): Rank Pid Node name Pin cpu" for every rank.
PIN_TABLE_LEVEL = "4"


class IntelMPI(Hydra):
    name = "intelmpi"
    label = "Intel MPI"
    env_families = ("UCX_", "I_MPI_", "FI_", "MPIR_CVAR_", *COMMON_FAMILIES)
    pmi = "pmi2"  # also needs I_MPI_PMI_LIBRARY, a machine fact (launchers.intelmpi.env)
    binding_report = "intelmpi"
    version_tools = (VersionTool("version.txt", ("{launcher}", "-V"),
                                 r"Version\s+(\S+)(?:\s+Build\s+(\S+))?"),
                     VersionTool("impi_info.txt", ("impi_info",)))
    spack_packages = ("intel-oneapi-mpi", "intel-mpi")
    toolchain = "impi"  # Betzy's tables
    # hydra (mpirun) pins by these variables; in a scheduler's step they do nothing (tested: the
    # step's binding, or none, is what the pin table then shows), so steps get only the report's
    # variable.
    placement_env_in_steps = False
    # sched_yield while polling (Intel MPI Library Developer Reference, I_MPI_THREAD_YIELD=2);
    # measured under flux run, 4 ranks on 2 cores: IMB PingPong+Allreduce 49 s -> 2 s unbound.
    oversubscribed_env = {"I_MPI_THREAD_YIELD": "2"}
    placements = {
        "block": Placement.of(env={"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "compact"}),
        "cyclic": Placement.of(env={"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "scatter"}),
    }

    def ucx_evidence(self, env: Dict[str, str], conduit: Optional[str] = None) -> Optional[str]:
        for name in ("FI_PROVIDER", "I_MPI_OFI_PROVIDER"):
            if env.get(name, "").strip() == "mlx":
                return f"{name}=mlx (Intel MPI's UCX-based provider)"
        return None

    def variable_tools(self) -> Dict[str, Tuple[str, ...]]:
        # -a -e: every variable, expert ones too (plain impi_info lists about a fifth of them).
        # Its MPIR_CVAR_ list is partial (Intel MPI reads more), so that family is not checked.
        return {**super().variable_tools(), "I_MPI_": ("impi_info", "-a", "-e")}

    def stack_env(self, root: Optional[str]) -> Dict[str, str]:
        return {"I_MPI_ROOT": root} if root else {}

    def found_variables(self) -> Dict[str, Tuple[Callable[[], Optional[str]], str]]:
        return {"I_MPI_ROOT": (_beside_python, "bash scripts/setup_venv.sh, then use "
                               ".venv/bin/commstack, whose Python holds Intel MPI (impi-rt)")}

    def report_env(self, env: Dict[str, str]) -> Dict[str, str]:
        return {} if "I_MPI_DEBUG" in env else {"I_MPI_DEBUG": PIN_TABLE_LEVEL}


def _beside_python() -> Optional[str]:
    """The Intel MPI that pip installed (impi-rt) beside the Python running commstack, if any:
    scripts/setup_venv.sh puts it in the project's venv."""
    return sys.prefix if (Path(sys.prefix) / "bin" / "mpiexec.hydra").is_file() else None


FLAVOUR = IntelMPI()
