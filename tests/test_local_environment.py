"""Must show (environments): `spack -e environments/local install` offline from the mirror, then
run_matrix.sh runs IMB and cartex for each local stack variant and writes a report, and the
gasnet view's GASNet-EX tests run over the smp conduit, and the smpi view's IMB, OSU and ReproMPI
run under SimGrid's smpirun."""

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


SMPI_PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <host id="node-0" speed="10Gf" core="2"/>
    <host id="node-1" speed="10Gf" core="2"/>
    <link id="wire" bandwidth="12.5GBps" latency="1us"/>
    <route src="node-0" dst="node-1"><link_ctn id="wire"/></route>
  </zone>
</platform>
"""


def test_smpi_view_runs_imb_osu_and_reprompi_under_smpirun(local_env, tmp_path):
    """The smpi view's benchmarks run in SimGrid's simulation of two 2-core hosts, started by
    the view's own smpirun (SimGrid 4.1, built by environments/local)."""
    view = local_env / "views" / "smpi"
    (tmp_path / "two-hosts.xml").write_text(SMPI_PLATFORM)
    (tmp_path / "hosts.txt").write_text("node-0:2\nnode-1:2\n")
    (tmp_path / "pair.txt").write_text("node-0\nnode-1\n")  # one rank per host
    osu = view / "libexec" / "osu-micro-benchmarks" / "mpi"

    def smpirun(np: int, *command: str) -> str:
        hostfile = "pair.txt" if np == 2 else "hosts.txt"
        out = subprocess.run([str(view / "bin" / "smpirun"), "-np", str(np), "-platform",
                              "two-hosts.xml", "-hostfile", hostfile,
                              "--cfg=smpi/simulate-computation:no", *command],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        return out.stdout

    imb = smpirun(4, str(view / "bin" / "IMB-MPI1"), "Allreduce", "-msglog", "0:10")
    assert "# MPI Version           : 3.1" in imb and "#processes = 4" in imb, imb[:3000]
    assert imb.rstrip().endswith("# All processes entering MPI_Finalize"), imb[-2000:]
    lat = smpirun(2, str(osu / "pt2pt" / "osu_latency"), "-m", "1:1024")
    assert "# OSU MPI Latency Test v7.3" in lat and lat.rstrip().splitlines()[-1].startswith("1024")
    red = smpirun(4, str(osu / "collective" / "osu_allreduce"), "-m", "4:1024")
    assert "# OSU MPI Allreduce Latency Test v7.3" in red, red[:2000]
    rep = smpirun(4, str(view / "bin" / "mpibenchmark"), "--calls-list=MPI_Allreduce",
                  "--msizes-list=8,1024", "--nrep=5")
    rows = [line.split() for line in rep.splitlines() if line.strip().startswith("MPI_Allreduce")]
    assert "#@nprocs=4" in rep and len(rows) == 10, rep[-3000:]
