"""Values of a matrix's ``${VAR}`` found on this machine when the variable is not set: the
binaries that this checkout's set-up scripts build (environments/local's views, tests/spack's
environments), and what a flavour finds itself (Intel MPI beside the running Python)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

from commstack import flavours

Found = Tuple[Callable[[], Optional[str]], str]  # (finder, how to get it when it is not found)


def _local_view_bin(view: str) -> Path:
    """bin/ of a view of this checkout's environments/local (src/commstack/matrix/found.py is
    four levels below the checkout; an installed commstack finds none)."""
    return Path(__file__).resolve().parents[3] / "environments" / "local" / "views" / view / "bin"


def _spack_env(name: str) -> Path:
    """The view of tests/spack/<name> installed by ``python -m commstack.spack tests/spack/<name>``
    (default work directory)."""
    return Path.home() / ".cache" / "commstack" / "envs" / name / ".spack-env" / "view"


def _quickstart_imb_openmpi() -> Optional[str]:
    """The IMB that scripts/quickstart.sh built against Debian Open MPI (tests/spack/imb-openmpi),
    else view ompi of environments/local (scripts/setup_spack.sh), if it is there."""
    for bindir in (_spack_env("imb-openmpi") / "bin", _local_view_bin("ompi")):
        if (bindir / "IMB-MPI1").is_file():
            return str(bindir)
    return None


def _built_osu(env: str) -> Found:
    """OSU's test folders (pt2pt/, collective/, ...) of tests/spack/<env>, if it is there."""
    def find() -> Optional[str]:
        mpi = _spack_env(env) / "libexec" / "osu-micro-benchmarks" / "mpi"
        return str(mpi) if (mpi / "pt2pt" / "osu_latency").is_file() else None
    return find, (f"python -m commstack.spack tests/spack/{env} --expect "
                  "libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency")


def _built_ompi_ucc() -> Optional[str]:
    """bin/ of the view ompi-ucc of environments/local (Open MPI 4.1.4 + UCC: mpirun,
    ompi_info, IMB-MPI1), which scripts/setup_spack.sh installs, if there."""
    bindir = _local_view_bin("ompi-ucc")
    if (bindir / "IMB-MPI1").is_file() and (bindir / "mpirun").is_file():
        return str(bindir)
    return None


FOUND: Dict[str, Found] = {
    **flavours.found_variables(),
    "COMMSTACK_IMB_OPENMPI_BIN": (_quickstart_imb_openmpi,
                                  "bash scripts/setup_spack.sh (view ompi of environments/local)"),
    "COMMSTACK_OSU_INTELMPI": _built_osu("osu-intelmpi"),
    "COMMSTACK_OSU_OPENMPI": _built_osu("osu-openmpi"),
    "COMMSTACK_OSU_MPICH": _built_osu("osu-mpich"),
    "COMMSTACK_OMPI_UCC_BIN": (_built_ompi_ucc,
                               "bash scripts/setup_spack.sh (view ompi-ucc of environments/local)"),
}


def found_value(name: str) -> Optional[str]:
    """The value of unset variable ``name`` found on this machine, or None."""
    return FOUND[name][0]() if name in FOUND else None


def how_to_get(name: str) -> Optional[str]:
    """How to build or install what ``name`` names when it is not found."""
    return FOUND[name][1] if name in FOUND else None
