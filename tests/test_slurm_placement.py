"""Must show (placement, on the real 3-node Slurm of tests/cluster): Intel MPI started by its own
mpirun inside the allocation (Betzy's way) gets the machine's pinning for its mapping and its
records carry the parsed pin table; srun steps and Open MPI's mpirun in an allocation carry what
the run reported about its binding, or say why there is nothing to parse."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from tests import slurm_cluster
from tests.conftest import REPO
from tests.sweeps import records

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]


def _site(tmp_path: Path, monkeypatch, old: str, new: str) -> None:
    """site-configs/slurm-ci/machine.yaml with one launcher replaced."""
    site = tmp_path / "site" / "slurm-ci"
    site.mkdir(parents=True)
    facts = (REPO / "site-configs" / "slurm-ci" / "machine.yaml").read_text()
    assert old in facts
    (site / "machine.yaml").write_text(facts.replace(old, new))
    monkeypatch.setenv("COMMSTACK_SITE_CONFIGS", str(site.parent))


def _sweep(tmp_path: Path, name: str, stacks: dict, retry: bool = True) -> list:
    path = tmp_path / "matrices" / "slurm-ci" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("stacks:\n" + "".join(f"  {s}\n" for s in stacks.values()) + dedent(f"""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 90
        parameters: {{benchmarks: PingPong, msglog: "0:4", iter: 20, ranks_per_node: 2,
                     nodes: 2}}
        product:
          stack: [{", ".join(stacks)}]
          mapping: [block, cyclic]
        """))
    root = tmp_path / "results" / "slurm-ci" / name
    out = slurm_cluster.run_matrix_in_allocation(path, root, tmp_path, retry=retry)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    ok = [r for r in records(root) if r["status"] == "ok"]
    assert len(ok) == 2 * len(stacks)
    return ok


def _two_nodes_two_ranks_each(placement: dict) -> None:
    hosts = [r["host"] for r in placement["ranks"]]
    assert len(hosts) == 4 and set(hosts) <= set(slurm_cluster.NODES)
    assert sorted(hosts.count(h) for h in set(hosts)) == [2, 2]
    for host in set(hosts):
        cores = [tuple(r["cores"]) for r in placement["ranks"] if r["host"] == host]
        assert len(set(cores)) == 2, f"two ranks on one core of {host}"


def test_intel_mpi_by_mpirun_in_the_allocation_gets_the_pinning(cluster, impi_root, tmp_path,
                                                                 monkeypatch):
    """The issue's Betzy case on the test cluster: launchers.intelmpi is mpirun (with Betzy's
    I_MPI_PIN), so each point runs `mpirun -n 4 -ppn 2` with the mapping's I_MPI_PIN_ORDER."""
    _site(tmp_path, monkeypatch, old=(
        "  intelmpi:\n    command: srun\n    args: [\"--mpi=pmi2\"]\n"
        "    env: {I_MPI_PMI_LIBRARY: /usr/lib/x86_64-linux-gnu/libpmi2.so.0}   # Debian libpmi2-0\n"),
        new='  intelmpi: {command: mpirun, env: {I_MPI_PIN: "1"}}\n')
    recs = _sweep(tmp_path, "impi-mpirun",
                  {"impi": 'impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}'}, retry=False)
    order = {"block": "compact", "cyclic": "scatter"}
    for rec in recs:
        assert rec["argv"][:5] == ["mpirun", "-n", "4", "-ppn", "2"]
        assert rec["env"]["I_MPI_PIN_ORDER"] == order[rec["params"]["mapping"]]
        assert rec["env"]["I_MPI_PIN"] == "1" and rec["env"]["I_MPI_DEBUG"] == "4"
        placement = rec["placement"]
        assert placement["source"] == "Intel MPI pin table (I_MPI_DEBUG=4)"
        _two_nodes_two_ranks_each(placement)
        assert placement["verdict"] in ("not verifiable", "verified"), placement["summary"]
        if placement["numa_domains"] == 1:
            assert placement["summary"] == "not verifiable: one NUMA domain"


def test_srun_steps_carry_what_was_reported(cluster, local_imb_bins, tmp_path):
    """srun steps (--cpu-bind=verbose,cores, Slurm's task/affinity binding): Intel MPI's pin
    table shows srun's binding; Open MPI and MPICH print none, so srun's report is parsed. (A
    Slurm whose task plugin binds nothing prints no report: the record then says so.)"""
    stacks = {"impi": 'impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}'}
    if "openmpi" in local_imb_bins:
        stacks["ompi"] = f'ompi: {{flavour: openmpi, bin: "{local_imb_bins["openmpi"]}"}}'
    if "mpich" in local_imb_bins:
        stacks["mpich"] = f'mpich: {{flavour: mpich, bin: "{local_imb_bins["mpich"]}"}}'
    recs = _sweep(tmp_path, "srun-steps", stacks)
    for rec in recs:
        assert rec["argv"][0] == "srun" and "--cpu-bind=verbose,cores" in rec["argv"]
        placement = rec["placement"]
        if rec["stack"] == "impi":
            assert placement["source"] == "Intel MPI pin table (I_MPI_DEBUG=4)"
            _two_nodes_two_ranks_each(placement)
            assert "ranks " + rec["params"]["mapping"] + " over nodes" in placement["checked"]
            assert placement["verdict"] in ("not verifiable", "verified"), placement["summary"]
        elif placement["verdict"] == "not reported":
            assert "lacks support for cpu binding" in placement["summary"], placement["summary"]
            assert not placement["ranks"]
        else:  # a cluster whose Slurm binds: srun's report
            assert placement["source"] == "srun --cpu-bind=verbose", placement["summary"]
            _two_nodes_two_ranks_each(placement)


def test_open_mpi_mpirun_in_the_allocation_keeps_ranks_per_node_and_reports(
        cluster, local_imb_bins, tmp_path, monkeypatch):
    if "openmpi" not in local_imb_bins:
        pytest.skip("skipped: no IMB for Debian Open MPI (Spack, or $COMMSTACK_IMB_OPENMPI_BIN)")
    _site(tmp_path, monkeypatch, old='openmpi: {command: srun, args: ["--mpi=pmix"]}',
          new="openmpi: {command: mpirun.openmpi}")
    recs = _sweep(tmp_path, "ompi-mpirun",
                  {"ompi": f'ompi: {{flavour: openmpi, bin: "{local_imb_bins["openmpi"]}"}}'})
    for rec in recs:
        assert rec["argv"][:5] == ["mpirun.openmpi", "-np", "4", "--npernode", "2"]
        placement = rec["placement"]
        assert placement["source"] == "Open MPI --report-bindings"
        _two_nodes_two_ranks_each(placement)
        assert placement["verdict"] in ("not verifiable", "verified"), placement["summary"]
