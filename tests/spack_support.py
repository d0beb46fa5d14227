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


IMB_OMPI_UCC_ENV = SPACK_ENVS_DIR / "imb-ompi-ucc"
#: sha256 of Debian's openmpi_4.1.4.orig.tar.xz (openmpi@4.1.4-debian) and of UCC 1.3.0's tag archive
OMPI_4_1_4_DEBIAN = "ddaee7dbdb01eb4fab1fda5b5e03e8bbff026711806c095c1f39bb410f99f263"
UCC_1_3_0 = "b56379abe5f1c125bfa83be305d78d81a64aa271b7b5fff0ac17b86725ff3acf"


def ompi_ucc_skip_reason():
    """Why the Open MPI 4.1.4 + UCC 1.3.0 stack cannot be built here, or None."""
    import shutil

    reason = spack_skip_reason()
    if reason:
        return reason
    cache = find_mirror() / "_source-cache" / "archive"
    for sha, ext, what in ((OMPI_4_1_4_DEBIAN, "tar.xz", "openmpi"), (UCC_1_3_0, "tar.gz", "ucc")):
        if not (cache / sha[:2] / f"{sha}.{ext}").exists():
            return (f"skipped: {what} source not in the mirror (commstack mirror --package {what}; "
                    "see README, 'Open MPI + UCC')")
    missing = [t for t in ("autoconf", "automake", "libtoolize") if shutil.which(t) is None]
    if missing:
        return f"skipped: UCC's autogen.sh needs {', '.join(missing)} (apt install autoconf automake libtool)"
    return None


def install_imb_ompi_ucc(workdir: Path) -> Path:
    """IMB built by Spack against its own Open MPI 4.1.4 + UCC (Debian's UCX); returns the view's
    bin directory, which also holds that Open MPI's mpirun and ompi_info."""
    return install_view_bin(IMB_OMPI_UCC_ENV, workdir, "IMB-MPI1")


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


def ompi_ucc_bin() -> Path:
    """bin/ of the Open MPI + UCC test stack (tests/spack/imb-ompi-ucc), or skip with the reason."""
    import pytest

    from commstack.spack import cache_root

    bindir = cache_root() / "envs" / "imb-ompi-ucc" / ".spack-env" / "view" / "bin"
    if not all((bindir / exe).is_file() for exe in ("IMB-MPI1", "mpirun", "ompi_info")):
        reason = ompi_ucc_skip_reason()
        pytest.skip(reason or f"skipped: no UCC stack built ({bindir} lacks IMB-MPI1/mpirun/"
                    "ompi_info; python -m commstack.spack tests/spack/imb-ompi-ucc builds it)")
    return bindir
