"""Must show, on the real 3-node Slurm test cluster (tests/cluster): OSU Micro-Benchmarks built by
Spack against Intel MPI, Open MPI and MPICH run by `commstack run` inside an allocation as srun
job steps: osu_latency between two nodes and osu_allreduce over three, every record with its
Slurm provenance and parsed rows."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

import pytest

from tests import slurm_cluster, spack_support
from tests.sweeps import ok_counts, records

pytestmark = [pytest.mark.slurm, pytest.mark.spack, pytest.mark.mpi]

OSU_INTELMPI_ENV = spack_support.SPACK_ENVS_DIR / "osu-intelmpi"

STACKS = """
stacks:
  impi:
    flavour: intelmpi
    prefix: "${I_MPI_ROOT}"
    bin: "${COMMSTACK_OSU_INTELMPI}/FOLDER"
  ompi-ucx:
    flavour: openmpi
    bin: "${COMMSTACK_OSU_OPENMPI}/FOLDER"
    env: {OMPI_MCA_pml: ucx, OMPI_MCA_pml_ucx_tls: any, OMPI_MCA_pml_ucx_devices: any}
  mpich:
    flavour: mpich
    bin: "${COMMSTACK_OSU_MPICH}/FOLDER"
"""

LATENCY = """
benchmark: osu
repeats: 1
timeout: 120
parameters: {executable: osu_latency, message_size: "1:1024", iterations: 100, warmup: 10,
             nodes: 2, ranks_per_node: 1}
product:
  stack: [impi, ompi-ucx, mpich]
"""

ALLREDUCE = """
benchmark: osu
repeats: 1
timeout: 120
parameters: {executable: osu_allreduce, message_size: "4:1024", iterations: 50, warmup: 5,
             full: true, nodes: 3, ranks_per_node: 1}
product:
  stack: [impi, ompi-ucx, mpich]
"""


@pytest.fixture(scope="module")
def osu_builds(cluster, impi_root, tmp_path_factory):
    reason = spack_support.osu_skip_reason()
    if reason:
        pytest.skip(reason)
    if (OSU_INTELMPI_ENV / "wheel-layout" / "mpi" / "2021.18").resolve() != impi_root.resolve():
        pytest.skip("skipped: tests/spack/osu-intelmpi expects Intel MPI in the checkout's .venv")
    work = tmp_path_factory.mktemp("spack-osu")
    return {"COMMSTACK_OSU_INTELMPI": str(spack_support.install_osu(OSU_INTELMPI_ENV, work)),
            "COMMSTACK_OSU_OPENMPI": str(spack_support.install_osu(spack_support.OSU_OPENMPI_ENV,
                                                                   work)),
            "COMMSTACK_OSU_MPICH": str(spack_support.install_osu(spack_support.OSU_MPICH_ENV,
                                                                 work))}


def _run_in_allocation(osu_builds, tmp_path: Path, name: str, folder: str, body: str) -> Path:
    matrix = tmp_path / "matrices" / "slurm-ci" / f"{name}.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)
    matrix.write_text(STACKS.replace("FOLDER", folder) + dedent(body))
    root = tmp_path / "results" / "slurm-ci" / name
    out = slurm_cluster.run_matrix_in_allocation(matrix, root, tmp_path,
                                                 env={**os.environ, **osu_builds})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return root


def _check_steps(root: Path, nodes: int) -> list:
    counts = ok_counts(root)
    assert len(counts) == 3 and set(counts.values()) == {1}
    done = [r for r in records(root) if r["status"] == "ok"]
    assert {r["params"]["stack"] for r in done} == {"impi", "ompi-ucx", "mpich"}
    for rec in done:
        slurm = rec["slurm"]
        assert rec["argv"][0].endswith("srun"), rec["argv"]
        assert slurm["job_id"] and slurm["step_id"] is not None and slurm["partition"] == "debug"
        assert len(slurm["nodes"]) == nodes and set(slurm["nodes"]) <= set(slurm_cluster.NODES)
        assert slurm["tasks_per_node"] == 1 and rec["ranks"] == nodes
    return done


def test_osu_latency_between_two_nodes_as_srun_steps(osu_builds, tmp_path):
    root = _run_in_allocation(osu_builds, tmp_path, "osu-latency", "pt2pt", LATENCY)
    for rec in _check_steps(root, 2):
        rows = rec["parsed"]
        assert [r["bytes"] for r in rows] == [2 ** k for k in range(11)]
        assert {r["benchmark"] for r in rows} == {"Latency"}
        # across the nodes' network namespaces: microseconds, never the 0.00 of shared memory
        assert all(r["t_us"] > 0 for r in rows), rows


def test_osu_allreduce_over_three_nodes_as_srun_steps(osu_builds, tmp_path):
    root = _run_in_allocation(osu_builds, tmp_path, "osu-allreduce", "collective", ALLREDUCE)
    for rec in _check_steps(root, 3):
        rows = rec["parsed"]
        assert [r["bytes"] for r in rows] == [2 ** k for k in range(2, 11)]
        assert {r["benchmark"] for r in rows} == {"Allreduce Latency"}
        assert all(0 < r["t_min_us"] <= r["t_avg_us"] <= r["t_max_us"] and r["repetitions"] == 50
                   for r in rows)
