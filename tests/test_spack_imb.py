"""Spack builds IMB offline against Debian's Open MPI, and the result runs over UCX."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spack_support  # noqa: E402

pytestmark = pytest.mark.spack

MPIRUN = "mpirun.openmpi"


@pytest.fixture(scope="session")
def imb_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    return tmp_path_factory.mktemp("spack-imb")


@pytest.fixture(scope="session")
def imb_bin(imb_workdir: Path) -> Path:
    return spack_support.install_imb_openmpi(imb_workdir)


def test_install_is_idempotent_and_fast(imb_workdir: Path, imb_bin: Path) -> None:
    t0 = time.monotonic()
    again = spack_support.install_imb_openmpi(imb_workdir)
    elapsed = time.monotonic() - t0
    assert again == imb_bin
    assert elapsed < 120, f"second install took {elapsed:.0f} s"


@pytest.mark.mpi
def test_imb_pingpong_over_ucx(imb_bin: Path) -> None:
    if shutil.which(MPIRUN) is None:
        pytest.skip(f"skipped: {MPIRUN} not found (apt install openmpi-bin)")
    cmd = [
        MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2",
        "--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
        "-x", "UCX_TLS=self,sm",
        str(imb_bin / "IMB-MPI1"), "PingPong", "-msglog", "0:4",
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300
    )
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "# Benchmarking PingPong" in proc.stdout
    assert "# All processes entering MPI_Finalize" in proc.stdout


def test_imb_links_debian_openmpi(imb_bin: Path) -> None:
    out = subprocess.run(
        ["ldd", str(imb_bin / "IMB-MPI1")], stdout=subprocess.PIPE, text=True, check=True
    ).stdout
    m = re.search(r"^\s*libmpi\.so\.40 => (\S+)", out, re.MULTILINE)
    assert m, f"libmpi.so.40 not resolved:\n{out}"
    lib = os.path.realpath(m.group(1))
    assert lib.startswith(("/usr/lib/", "/lib/")), lib
    assert "openmpi" in lib or Path(lib).name.startswith("libmpi.so.40"), lib


def test_install_prefix_and_view_have_spec_json(imb_bin: Path) -> None:
    prefix = spack_support.installed_prefix(imb_bin / "IMB-MPI1")
    spec_json = prefix / ".spack" / "spec.json"
    assert spec_json.is_file(), spec_json
    nodes = json.loads(spec_json.read_text())["spec"]["nodes"]
    root = nodes[0]  # the first node is the installed package itself
    assert root["name"] == "intel-mpi-benchmarks"
    assert root["version"] == "2021.7"
    assert prefix.name == f"{root['name']}-{root['version']}-{root['hash']}"
    mpi = {n["name"]: n for n in nodes}["openmpi"]
    assert mpi["version"] == "4.1.4"
    assert mpi["external"]["path"] == "/usr"

    # The view keeps a copy of each package's metadata under <view>/.spack/<name>/.
    view_json = imb_bin.parent / ".spack" / "intel-mpi-benchmarks" / "spec.json"
    assert view_json.is_file(), view_json
    assert json.loads(view_json.read_text())["spec"]["nodes"][0]["hash"] == root["hash"]
