"""Shared test helpers: where the real MPIs of this machine are, and matrix writing."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def intel_mpi_root() -> "Path | None":
    """The Intel MPI from PyPI (impi-rt): I_MPI_ROOT, or the running Python's prefix."""
    for candidate in (os.environ.get("I_MPI_ROOT"), sys.prefix):
        if candidate and (Path(candidate) / "bin" / "IMB-MPI1").exists():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def impi_root() -> Path:
    root = intel_mpi_root()
    if root is None:
        pytest.skip("skipped: no Intel MPI (pip install impi-rt impi-devel; scripts/test.sh does)")
    os.environ["I_MPI_ROOT"] = str(root)
    return root


@pytest.fixture(scope="session")
def openmpi_launcher() -> str:
    exe = shutil.which("mpirun.openmpi")
    if exe is None:
        pytest.skip("skipped: no Debian Open MPI (apt install openmpi-bin libopenmpi-dev)")
    return exe


@pytest.fixture
def write_matrix(tmp_path: Path):
    """Write a matrix (YAML text, dedented) under tmp/matrices/local/<name>.yaml."""

    def write(text: str, name: str = "m") -> Path:
        path = tmp_path / "matrices" / "local" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture(scope="session")
def imb_openmpi_bin(tmp_path_factory) -> Path:
    """IMB built by Spack against Debian Open MPI (offline, from the source mirror)."""
    from tests import spack_support

    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    if shutil.which("mpirun.openmpi") is None:
        pytest.skip("skipped: no Debian Open MPI (apt install openmpi-bin libopenmpi-dev)")
    return spack_support.install_imb_openmpi(tmp_path_factory.mktemp("spack-imb"))


@pytest.fixture(scope="session")
def local_imb_bins(impi_root, tmp_path_factory) -> "dict[str, Path]":
    """A bin directory with IMB-MPI1 per local flavour: Intel MPI's wheel; Open MPI's and
    MPICH's from $COMMSTACK_IMB_OPENMPI_BIN / $COMMSTACK_IMB_MPICH_BIN when set, else built with
    Spack where Spack and its mirror are (a flavour with neither is left out)."""
    from tests import spack_support

    bins = {"intelmpi": impi_root / "bin"}
    spack = spack_support.spack_skip_reason() is None
    for flavour, variable, install, launcher in (
            ("openmpi", "COMMSTACK_IMB_OPENMPI_BIN", spack_support.install_imb_openmpi,
             "mpirun.openmpi"),
            ("mpich", "COMMSTACK_IMB_MPICH_BIN", spack_support.install_imb_mpich, "mpiexec.mpich")):
        if shutil.which(launcher) is None:
            continue
        if os.environ.get(variable):
            bins[flavour] = Path(os.environ[variable])
        elif spack:
            bins[flavour] = install(tmp_path_factory.mktemp(f"spack-{flavour}"))
            os.environ[variable] = str(bins[flavour])
    return bins


@pytest.fixture(scope="module")
def cluster():
    """The 3-node Slurm test cluster (tests/cluster), brought up if it is not up and torn down
    again by the module that brought it up; skipped with the reason where it cannot run."""
    from tests import slurm_cluster

    reason = slurm_cluster.skip_reason()
    if reason:
        pytest.skip(reason)
    started = slurm_cluster.bring_up()
    yield
    if started:
        slurm_cluster.tear_down()
