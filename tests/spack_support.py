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


OSU_OPENMPI_ENV = SPACK_ENVS_DIR / "osu-openmpi"
OSU_MPICH_ENV = SPACK_ENVS_DIR / "osu-mpich"
OSU_7_3 = "8fa25b8aaa34e4b07ab3a4f30b7690ab46b038b08d204a853a9b6aa7bdb02f2f"


def osu_skip_reason():
    """Why OSU Micro-Benchmarks 7.3 cannot be built here, or None."""
    reason = spack_skip_reason()
    if reason:
        return reason
    if not (find_mirror() / "_source-cache" / "archive" / OSU_7_3[:2] / f"{OSU_7_3}.tar.gz").exists():
        return ("skipped: OSU 7.3 not in the mirror (commstack mirror --package osu-micro-benchmarks "
                "--clones DIR --out MIRROR, with a clone of the repository named in "
                "packages/mirror-sources.tsv)")
    return None


def install_osu(env_src: Path, workdir: Path) -> Path:
    """OSU Micro-Benchmarks built by Spack; returns <view>/libexec/osu-micro-benchmarks/mpi, which
    holds pt2pt/, collective/, one-sided/ and startup/ (the recipe installs nothing in bin/)."""
    mpi = install_env(env_src, workdir) / ".spack-env" / "view" / "libexec" / "osu-micro-benchmarks" / "mpi"
    if not (mpi / "pt2pt" / "osu_latency").is_file():
        raise RuntimeError(f"spack install succeeded but {mpi}/pt2pt/osu_latency is missing")
    return mpi


def ompi_ucc_view_bin() -> Path:
    """bin/ of the view ompi-ucc of this checkout's environments/local (Open MPI 4.1.4 + UCC
    1.3.0 built by Spack, IMB-MPI1 against it), which scripts/setup_spack.sh installs; or
    $COMMSTACK_OMPI_UCC_BIN where set. One stack, one place: every UCC test uses it."""
    import os

    env = os.environ.get("COMMSTACK_OMPI_UCC_BIN")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "environments" / "local" / "views" / "ompi-ucc" / "bin"


def ompi_ucc_bin(need=("IMB-MPI1", "mpirun", "ompi_info")) -> Path:
    """The ompi-ucc view's bin/ (ompi_ucc_view_bin), or skip with the reason."""
    import pytest

    bindir = ompi_ucc_view_bin()
    missing = [exe for exe in need if not (bindir / exe).is_file()]
    if missing:
        pytest.skip(f"skipped: no Open MPI + UCC stack: {bindir} lacks {', '.join(missing)} "
                    "(bash scripts/setup_spack.sh installs environments/local and its view "
                    "ompi-ucc)")
    return bindir


def smpi_view_bin(need=("smpirun", "IMB-MPI1")) -> Path:
    """bin/ of environments/local's view smpi (SimGrid SMPI and the benchmarks built against it,
    scripts/setup_spack.sh), or skip with the reason."""
    import pytest

    bindir = Path(__file__).resolve().parents[1] / "environments" / "local" / "views" / "smpi" / "bin"
    missing = [exe for exe in need if not (bindir / exe).is_file()]
    if missing:
        pytest.skip(f"skipped: no SimGrid SMPI stack: {bindir} lacks {', '.join(missing)} "
                    "(bash scripts/setup_spack.sh installs environments/local and its view smpi)")
    return bindir
