"""Must show (environments): `spack -e environments/local install` offline from the mirror, then
run_matrix.sh runs IMB and cartex for each local stack variant and writes a report, and the
gasnet view's GASNet-EX tests run over the smp conduit."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests import spack_support
from tests.conftest import REPO
from tests.sweeps import ok_counts, records

pytestmark = [pytest.mark.spack, pytest.mark.mpi]


@pytest.fixture(scope="module")
def local_env(impi_root):
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    # In place, as a user does; the views land in environments/local/views (git-ignored).
    spack_support.run_spack(["-e", str(REPO / "environments" / "local"), "install", "-j2"],
                            timeout=3600)
    return REPO / "environments" / "local"


@pytest.mark.parametrize("name, stacks", [
    ("stacks-imb", {"impi", "ompi", "ompi-ucx", "mpich"}),
    ("stacks-cartex", {"ompi", "ompi-ghex-mpi", "ompi-ghex-ucx", "mpich"}),
])
def test_every_local_stack_runs_and_reports(local_env, tmp_path, name, stacks):
    matrix = REPO / "matrices" / "local" / f"{name}.yaml"
    out = subprocess.run([str(REPO / "scripts" / "run_matrix.sh"), str(matrix), "--out",
                          str(tmp_path), "--report"], capture_output=True, text=True,
                         timeout=1800, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    root = tmp_path / "local" / name
    counts = ok_counts(root)
    assert set(counts.values()) == {1} and {r["stack"] for r in records(root)} == stacks
    for rec in records(root):
        if rec["benchmark"] == "cartex":
            assert rec["parsed"][0]["ranks"] == 2 and rec["parsed"][0]["time_10000_calls_s"] > 0
        else:
            assert {row["benchmark"] for row in rec["parsed"]} == {"PingPong", "Allreduce",
                                                                   "Alltoall"}
        if rec["stack"] != "impi":  # Spack-built binaries: provenance names the spack view
            assert "environments/local/views" in rec["stack_info"]["root"]
    report = (root / "report" / "report.md").read_text()
    assert all(f"`{s}`" in report for s in stacks)


def test_gasnet_view_runs_testsmall_over_smp(local_env):
    """The in-place view's testsmall-smp forks 2 GASNet processes on this node and completes."""
    exe = local_env / "views" / "gasnet" / "bin" / "testsmall-smp"
    out = subprocess.run([str(exe), "10", "64"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "GASNET_PSHM_NODES": "2"})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "testsmall nprocs=2" in out.stdout and "CONDUIT=SMP" in out.stdout, out.stdout[:2000]
    assert "64 byte" in out.stdout and out.stdout.rstrip().endswith("done."), out.stdout[-2000:]
