"""Must show: OSU Micro-Benchmarks 7.3, built by Spack against Debian's Open MPI and MPICH, swept
over both stacks, two tests and UCX_TLS (Open MPI with pml ucx; Debian's MPICH is ch4:ucx), every
point parsed, aggregated and reported; and a collective with -f on 4 ranks."""

from __future__ import annotations

import shutil
from textwrap import dedent

import pytest

from commstack.aggregate import aggregate
from tests.sweeps import commstack, ok_counts, records

pytestmark = [pytest.mark.spack, pytest.mark.mpi]

PT2PT = dedent("""
    benchmark: osu
    repeats: 2
    timeout: 120
    stacks:
      ompi-ucx:
        flavour: openmpi
        launcher: mpirun.openmpi
        bin: ${COMMSTACK_OSU_OPENMPI}/pt2pt
        env:
          # Debian's Open MPI disables the UCX PML and limits it to Mellanox devices.
          OMPI_MCA_pml: ucx
          OMPI_MCA_pml_ucx_tls: any
          OMPI_MCA_pml_ucx_devices: any
      mpich:
        flavour: mpich
        launcher: mpiexec.mpich
        bin: ${COMMSTACK_OSU_MPICH}/pt2pt
    parameters:
      ranks_per_node: 2
      message_size: "1:16384"
      iterations: 200
      warmup: 20
      UCX_NET_DEVICES: lo
    product:
      stack: [ompi-ucx, mpich]
      executable: [osu_latency, osu_bw]
      UCX_TLS: ["self,sm", "self,tcp"]
    """)

COLLECTIVE = dedent("""
    benchmark: osu
    repeats: 2
    timeout: 300
    stacks:
      ompi-ucx:
        flavour: openmpi
        launcher: mpirun.openmpi
        bin: ${COMMSTACK_OSU_OPENMPI}/collective
        env: {OMPI_MCA_pml: ucx, OMPI_MCA_pml_ucx_tls: any, OMPI_MCA_pml_ucx_devices: any,
              UCX_TLS: "self,sm"}
    parameters:
      ranks_per_node: 4
      oversubscribe: true
      executable: osu_allreduce
      message_size: "1:1024"
      iterations: 50
      warmup: 5
      full: true
    """)


@pytest.fixture(scope="module")
def osu_dirs(tmp_path_factory):
    from tests import spack_support

    reason = spack_support.osu_skip_reason()
    if reason:
        pytest.skip(reason)
    for launcher in ("mpirun.openmpi", "mpiexec.mpich"):
        if shutil.which(launcher) is None:
            pytest.skip(f"skipped: {launcher} not found (apt install openmpi-bin mpich)")
    work = tmp_path_factory.mktemp("spack-osu")
    return (spack_support.install_osu(spack_support.OSU_OPENMPI_ENV, work),
            spack_support.install_osu(spack_support.OSU_MPICH_ENV, work))


@pytest.fixture(scope="module")
def sweep(osu_dirs, tmp_path_factory):
    ompi, mpich = osu_dirs
    env = {"COMMSTACK_OSU_OPENMPI": str(ompi), "COMMSTACK_OSU_MPICH": str(mpich)}
    tmp = tmp_path_factory.mktemp("osu")
    roots = {}
    for name, text in (("pt2pt", PT2PT), ("collective", COLLECTIVE)):
        matrix = tmp / "matrices" / "local" / f"osu-{name}.yaml"
        matrix.parent.mkdir(parents=True, exist_ok=True)
        matrix.write_text(text)
        run = commstack("run", str(matrix), "--out", str(tmp / "results"), "--report",
                        env={**__import__("os").environ, **env}, timeout=1200)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
        roots[name] = tmp / "results" / "local" / f"osu-{name}"
    return roots


def test_every_point_ran_and_parsed(sweep):
    counts = ok_counts(sweep["pt2pt"])
    assert len(counts) == 2 * 2 * 2 * 2 and set(counts.values()) == {1}
    for rec in records(sweep["pt2pt"]):
        exe = rec["params"]["executable"]
        assert rec["argv"][-7:] == [rec["argv"][-7], "-m", "1:16384", "-i", "200", "-x", "20"]
        assert rec["argv"][-7].endswith(f"/pt2pt/{exe}")
        rows = rec["parsed"]
        assert [r["bytes"] for r in rows] == [2 ** k for k in range(15)]
        assert {r["benchmark"] for r in rows} == {"osu_latency": {"Latency"},
                                                  "osu_bw": {"Bandwidth"}}[exe]
        metric = "t_us" if exe == "osu_latency" else "mbytes_per_s"
        # OSU prints two decimals: a tiny shared-memory latency can print as 0.00
        assert all(r[metric] >= 0 for r in rows) and rows[-1][metric] > 0


def test_aggregation_keeps_stacks_tests_and_transports_apart(sweep):
    summary = aggregate(records(sweep["pt2pt"]))
    metrics = {(s["stack"], s["executable"], s["UCX_TLS"], s["metric"]) for s in summary}
    assert len(metrics) == 8
    assert {m for *_, m in metrics} == {"t_us", "mbytes_per_s"}
    assert all(s["n"] == 2 for s in summary)  # both repeats of every size


def test_collective_with_full_statistics(sweep):
    (rec,) = {r["point_id"]: r for r in records(sweep["collective"])}.values()
    assert rec["status"] == "ok" and rec["argv"][-1] == "-f"
    rows = rec["parsed"]
    assert [r["bytes"] for r in rows] == [2 ** k for k in range(11)]
    assert all(r["t_min_us"] <= r["t_avg_us"] <= r["t_max_us"] and r["repetitions"] == 50
               for r in rows)


def test_report_is_written_and_marks_oversubscription(sweep):
    report = (sweep["pt2pt"] / "report" / "report.md").read_text()
    assert "Latency" in report and "Bandwidth" in report
    assert "UCX_TLS=self,tcp" in report
    collective = (sweep["collective"] / "report" / "report.md").read_text()
    assert "Allreduce Latency" in collective
    assert "oversubscribed" in collective.lower()
