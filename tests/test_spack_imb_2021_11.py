"""IMB 2021.11 from commstack's own package repository, built offline by Spack against Debian's
Open MPI and MPICH (externals), and run.

From 2021.8 on IMB compiles with -Werror (the recipe drops it and keeps the MPI C++ binding
headers out) and adds the OpenMP flag for IMB-MT only for compiler names it knows (the recipe adds
it); packages/intel-mpi-benchmarks/package.py, edit() and build_targets. Build times are in each
prefix's .spack/install_times.json.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spack_support  # noqa: E402

pytestmark = pytest.mark.spack

ENV = spack_support.SPACK_ENVS_DIR / "imb-openmpi-2021.11"

MPICH_ENV = spack_support.SPACK_ENVS_DIR / "imb-mpich-2021.11"


def root_node(bindir: Path, exe: str = "IMB-MPI1") -> dict:
    prefix = spack_support.installed_prefix(bindir / exe)
    nodes = json.loads((prefix / ".spack" / "spec.json").read_text())["spec"]["nodes"]
    return {"prefix": prefix, "root": nodes[0], "by_name": {n["name"]: n for n in nodes}}


def run(cmd, timeout=300):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    return tmp_path_factory.mktemp("spack-imb-2021.11")


@pytest.fixture(scope="module")
def ompi_bin(workdir: Path) -> Path:
    return spack_support.install_view_bin(ENV, workdir, "IMB-MPI1")


@pytest.fixture(scope="module")
def mpich_bin(workdir: Path) -> Path:
    # Debian MPICH at /usr: commstack's mpich recipe compiles with /usr/bin/mpicc.mpich.
    if shutil.which("mpicc.mpich") is None or shutil.which("mpirun.mpich") is None:
        pytest.skip("skipped: no Debian MPICH (apt install mpich libmpich-dev)")
    return spack_support.install_view_bin(MPICH_ENV, workdir, "IMB-MPI1")


def test_builds_from_commstack_repo_against_debian_openmpi(ompi_bin: Path) -> None:
    info = root_node(ompi_bin)
    root = info["root"]
    assert (root["name"], root["version"], root["namespace"]) == (
        "intel-mpi-benchmarks", "2021.11", "commstack")
    assert root["parameters"]["mpi4"] is False  # a variant only our recipe has
    mpi = info["by_name"]["openmpi"]
    assert (mpi["version"], mpi["external"]["path"]) == ("4.1.4", "/usr")
    for suite in ("MPI1", "EXT", "IO", "NBC", "P2P", "RMA", "MT"):
        assert (ompi_bin / f"IMB-{suite}").is_file(), suite
    # The recipe stays with the build as provenance.
    assert (info["prefix"] / ".spack" / "repos" / "commstack" / "packages"
            / "intel-mpi-benchmarks" / "package.py").is_file()


def test_build_flags_in_log(ompi_bin: Path) -> None:
    import gzip

    log = gzip.decompress(
        (root_node(ompi_bin)["prefix"] / ".spack" / "spack-build-out.txt.gz").read_bytes()
    ).decode(errors="replace")
    # Only the selected suites, one after another (they share object files).
    assert re.search(r"make' '-j1' 'IMB-MPI1' 'IMB-EXT' 'IMB-IO' 'IMB-NBC' 'IMB-P2P' 'IMB-RMA' "
                     r"'IMB-MT' 'CPPFLAGS=-DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1'", log)
    compile_lines = [line for line in log.splitlines() if not line.startswith("==>")]
    assert not [line for line in compile_lines if "-Werror" in line]
    assert re.search(r"-fopenmp -c -o MT/MT_benchmark\.o", log)  # IMB-MT gets OpenMP
    assert not re.search(r"warning:", log), "the build should be warning-free with Debian Open MPI"


@pytest.mark.mpi
def test_pingpong_and_mt_run_with_debian_openmpi(ompi_bin: Path) -> None:
    if shutil.which("mpirun.openmpi") is None:
        pytest.skip("skipped: mpirun.openmpi not found (apt install openmpi-bin)")
    launch = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "2"]
    out = run(launch + [str(ompi_bin / "IMB-MPI1"), "PingPong", "-msglog", "0:4"])
    assert "Intel(R) MPI Benchmarks 2021.11, MPI-1 part" in out
    assert "# Benchmarking PingPong" in out and "# All processes entering MPI_Finalize" in out
    ldd = run(["ldd", str(ompi_bin / "IMB-MT")])
    assert "libgomp" in ldd and "libmpi.so.40" in ldd
    out = run(launch + [str(ompi_bin / "IMB-MT"), "PingPongMT", "-count", "1,1024",
                        "-repeat", "100"])
    assert "# Benchmarking PingPongMT" in out


@pytest.mark.mpi
def test_builds_and_runs_with_debian_mpich(mpich_bin: Path) -> None:
    info = root_node(mpich_bin)
    assert info["root"]["namespace"] == "commstack" and info["root"]["version"] == "2021.11"
    assert info["by_name"]["mpich"]["version"] == "4.0.2"
    ldd = run(["ldd", str(mpich_bin / "IMB-MPI1")])
    assert "libmpich.so" in ldd and "libmpi.so.40" not in ldd, ldd
    out = run(["mpirun.mpich", "-np", "2", str(mpich_bin / "IMB-MPI1"), "PingPong",
               "-msglog", "0:4"])
    assert "# Benchmarking PingPong" in out and "# All processes entering MPI_Finalize" in out
    assert "#processes = 2" in out
