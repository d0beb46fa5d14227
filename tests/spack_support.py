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


GASNET_ENV = SPACK_ENVS_DIR / "gasnet-smp-udp"
GASNET_2025_8_0 = "bd5919099477d1d2f59c247d006e9d1ac017c9190c974f5e069667418e5bf48d"


def gasnet_skip_reason():
    """Why the GASNet-EX tests cannot be built here, or None."""
    reason = spack_skip_reason()
    if reason:
        return reason
    archive = (find_mirror() / "_source-cache" / "archive" / GASNET_2025_8_0[:2]
               / f"{GASNET_2025_8_0}.tar.gz")
    if not archive.exists():
        return ("skipped: GASNet 2025.8.0 not in the mirror (commstack mirror --package gasnet "
                "--clones DIR --out MIRROR, with a clone of github.com/StanfordLegion/gasnet)")
    return None


def install_gasnet(workdir: Path) -> Path:
    """GASNet-EX testlarge/testsmall/testam for the smp and udp conduits; the view's bin."""
    return install_view_bin(GASNET_ENV, workdir, "testlarge-smp")
