"""Spack helpers for the tests: the package's own, plus the test environments' locations."""

from __future__ import annotations

from pathlib import Path

from commstack.spack import (  # noqa: F401  (re-exported for the tests)
    find_mirror,
    find_spack,
    install_env,
    install_view_bin,
    installed_prefix,
    run_spack,
    spack_skip_reason,
)

SPACK_ENVS_DIR = Path(__file__).resolve().parent / "spack"
IMB_OPENMPI_ENV = SPACK_ENVS_DIR / "imb-openmpi"


def install_imb_openmpi(workdir: Path) -> Path:
    """IMB built by Spack against Debian's Open MPI; returns the view's bin directory."""
    return install_view_bin(IMB_OPENMPI_ENV, workdir, "IMB-MPI1")


IMB_MPICH_ENV = SPACK_ENVS_DIR / "imb-mpich"


def install_imb_mpich(workdir: Path) -> Path:
    """IMB built by Spack against Debian's MPICH; returns the view's bin directory."""
    return install_view_bin(IMB_MPICH_ENV, workdir, "IMB-MPI1")
