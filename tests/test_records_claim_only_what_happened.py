"""A newcomer's quick sweep: status agrees with plan about skipped points, and records claim
only what the stack can confirm (UCX variables, topology)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from commstack import provenance
from tests.sweeps import commstack, records

pytestmark = pytest.mark.mpi

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 2
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
      absent: {flavour: openmpi, bin: "${COMMSTACK_TEST_UNSET_BIN}", optional: true}
    parameters: {ranks_per_node: 2, msglog: "0:2", iter: 10, benchmarks: PingPong,
                 UCX_RNDV_THRSH: 64kb}
    product:
      stack: [impi, absent]
    """)


@pytest.fixture(scope="module")
def campaign(impi_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("claims")
    matrix = tmp / "matrices" / "local" / "claims.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX)
    # The pre-flight refuses the misspelled name (tests/test_preflight.py): run it unchecked.
    run = commstack("run", str(matrix), "--out", str(tmp / "results"),
                    "--allow-unlisted", "UCX_RNDV_THRSH")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "skip point" in run.stdout
    return matrix, tmp / "results" / "local" / "claims"


def test_status_counts_skipped_points_as_skipped_and_agrees_with_plan(campaign):
    matrix, root = campaign
    status = commstack("status", str(root))
    assert status.returncode == 0, status.stderr
    first, reason = status.stdout.splitlines()[:2]
    assert first.endswith("2 done, 0 failed, 0 running, 0 pending, 2 skipped "
                          "(of 4 runs; 2 to do here, as `plan` counts)"), first
    assert reason.strip().startswith("skipped: 1 points x 2 repeats: stack 'absent': bin uses "
                                     "${COMMSTACK_TEST_UNSET_BIN}")
    plan = commstack("plan", str(matrix))
    assert "1 points x 2 repeats = 2 runs" in plan.stdout
    verbose = commstack("status", str(root), "-v").stdout.splitlines()
    assert verbose[0].startswith("legend: d done, f failed, r running, p pending, s skipped")
    assert any(line.split()[1:3] == ["s", "s"] and "stack=absent" in line for line in verbose)
    assert any(line.split()[1:3] == ["d", "d"] and "stack=impi" in line for line in verbose)


def test_ucx_variable_on_a_stack_without_ucx_is_set_but_unchecked(campaign):
    _, root = campaign
    for rec in records(root):
        ucx = rec["ucx"]
        assert ucx["set"] == {"UCX_RNDV_THRSH": "64kb"}
        assert ucx["in_effect"] == {}  # never claimed: Intel MPI was not told to use UCX
        assert ucx["uses_ucx"] is None
        assert "no evidence that this run used UCX" in ucx["unchecked_reason"]
        if shutil.which("ucx_info"):  # this UCX does not know the misspelled name
            assert ucx["unrecognised"] == ["UCX_RNDV_THRSH"] and ucx["unchecked"] == {}
        else:
            assert ucx["unrecognised"] == [] and ucx["unchecked"] == {"UCX_RNDV_THRSH": "64kb"}


def test_record_says_where_the_topology_is_or_why_not(campaign):
    _, root = campaign
    rec = records(root)[0]
    if shutil.which("lstopo-no-graphics") or shutil.which("lstopo"):
        assert rec["topology"] == f"sessions/{rec['session']}/topology.xml"
        assert (root / rec["topology"]).read_text().lstrip().startswith("<?xml")
    else:
        assert rec["topology"] == "not captured (lstopo not found; install hwloc)"


def test_topology_without_hwloc_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no lstopo on it
    assert provenance.topology_xml() == (None, "not captured (lstopo not found; install hwloc)")


def test_intel_mpi_root_defaults_to_the_venv_holding_impi_rt(write_matrix):
    """After the quickstart, the tutorial's commands (docs/tutorials/quick-sweep.md) run without
    exporting I_MPI_ROOT."""
    if not (Path(sys.prefix) / "bin" / "mpiexec.hydra").is_file():
        pytest.skip("skipped: Intel MPI (impi-rt) is not installed in the Python running the tests")
    env = {k: v for k, v in os.environ.items() if k != "I_MPI_ROOT"}
    matrix = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
        parameters: {ranks_per_node: 2, benchmarks: PingPong}
        """)
    plan = commstack("plan", str(matrix), env=env)
    assert plan.returncode == 0, plan.stderr
    assert f"I_MPI_ROOT={sys.prefix}" in plan.stdout


def test_quickstart_open_mpi_imb_is_found_without_exporting_its_variable(write_matrix):
    """quickstart.sh builds IMB against Debian Open MPI under ~/.cache/commstack/envs; a later
    shell finds it without COMMSTACK_IMB_OPENMPI_BIN, so `plan` and `status` agree with the run."""
    bindir = (Path.home() / ".cache" / "commstack" / "envs" / "imb-openmpi" / ".spack-env" /
              "view" / "bin")
    if not (bindir / "IMB-MPI1").is_file() or not shutil.which("mpirun.openmpi"):
        pytest.skip("skipped: no quickstart-built IMB for Debian Open MPI (needs Spack)")
    env = {k: v for k, v in os.environ.items() if k != "COMMSTACK_IMB_OPENMPI_BIN"}
    matrix = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          ompi: {flavour: openmpi, launcher: mpirun.openmpi, bin: "${COMMSTACK_IMB_OPENMPI_BIN}",
                 optional: true}
        parameters: {ranks_per_node: 2, benchmarks: PingPong}
        """)
    plan = commstack("plan", str(matrix), env=env)
    assert plan.returncode == 0 and "SKIPPED" not in plan.stdout, plan.stdout + plan.stderr
    assert f"{bindir}/IMB-MPI1" in plan.stdout
