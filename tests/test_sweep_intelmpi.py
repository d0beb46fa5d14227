"""Must show: IMB-MPI1 Alltoall, Allgather, Allreduce, PingPong swept over two parameters with
Intel MPI from PyPI, 2 and 4 ranks, parsed and aggregated over 5 repeats."""

from __future__ import annotations

import io
import shutil
from textwrap import dedent

import pandas as pd
import pytest

from commstack.aggregate import trimmed_mean
from tests.sweeps import commstack, ok_counts, records, records_csv

pytestmark = pytest.mark.mpi

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 5
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      benchmarks: Alltoall Allgather Allreduce PingPong
      msglog: "0:8"
      iter: 50
    product:
      ranks_per_node: [2, 4]
      mapping: [block, cyclic]
      I_MPI_ADJUST_ALLREDUCE: [1, 2]
    """)


@pytest.fixture(scope="module")
def campaign(impi_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("impi")
    matrix = tmp / "matrices" / "local" / "impi.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX)
    run = commstack("run", str(matrix), "--out", str(tmp / "results"), "--report")
    assert run.returncode == 0, run.stderr[-3000:]
    return matrix, tmp / "results" / "local" / "impi"


def test_every_run_succeeded_once(campaign):
    _, root = campaign
    counts = ok_counts(root)
    assert len(counts) == 8 * 5 and set(counts.values()) == {1}


def test_records_table_reads_in_pandas(campaign):
    _, root = campaign
    table = pd.read_csv(io.StringIO(records_csv(root)))
    assert set(table["benchmark"]) == {"Alltoall", "Allgather", "Allreduce", "PingPong"}
    # 4 ranks: collectives run at np 2 and 4 (IMB's default npmin 2); PingPong uses 2.
    four = table[table["ranks"] == 4]
    assert sorted(four[four["benchmark"] == "Alltoall"]["np"].unique()) == [2, 4]
    assert list(four[four["benchmark"] == "PingPong"]["np"].unique()) == [2]
    # Sizes 0 and 2^0..2^8 for Alltoall; reductions skip sizes below sizeof(float).
    sizes = sorted(table[table["benchmark"] == "Alltoall"]["bytes"].unique())
    assert sizes == [0] + [2 ** k for k in range(9)]
    assert (table["status"] == "ok").all()


def test_aggregate_is_trimmed_mean_over_five_repeats(campaign):
    _, root = campaign
    summary = pd.read_csv(root / "summary.csv")
    assert set(summary["n"]) == {5}
    slack = 1e-9 * summary["max"].abs()  # equal samples: their mean may differ in the last bit
    assert (summary["min"] - slack <= summary["trimmed_mean"]).all()
    assert (summary["trimmed_mean"] <= summary["max"] + slack).all()
    # Recompute one group from the raw records.
    row = summary[(summary["benchmark"] == "Allreduce") & (summary["bytes"] == 256)
                  & (summary["np"] == 4)].iloc[0]
    samples = [item["t_avg_us"] for rec in records(root) if rec["point_id"] == row["point_id"]
               for item in rec["parsed"]
               if item["benchmark"] == "Allreduce" and item["bytes"] == 256 and item["np"] == 4]
    assert len(samples) == 5
    assert row["trimmed_mean"] == pytest.approx(trimmed_mean(samples))
    assert row["median"] == pytest.approx(sorted(samples)[2])
    # Five repeats are too few for a distribution-free 95 % interval: none is given.
    assert summary["ci_low"].isna().all() and summary["ci_high"].isna().all()
    assert trimmed_mean([1.0, 2.0, 3.0, 10.0, 0.0]) == pytest.approx(2.0)


def test_records_carry_command_environment_and_provenance(campaign):
    _, root = campaign
    rec = next(r for r in records(root) if r["params"]["mapping"] == "cyclic")
    assert rec["env"]["I_MPI_PIN_ORDER"] == "scatter"
    assert rec["env"]["I_MPI_ADJUST_ALLREDUCE"] in ("1", "2")
    assert rec["argv"][1:5] == ["-n", str(rec["ranks"]), "-ppn", str(rec["ranks"])]
    four = next(r for r in records(root) if r["ranks"] == 4)
    assert four["oversubscribed"] is True  # 4 ranks on this 2-core machine, and recorded
    session = root / "sessions" / rec["session"]
    assert "Intel(R) MPI Library" in (session / "impi.version.txt").read_text()
    assert "I_MPI_ADJUST_ALLREDUCE" in (session / "impi.impi_info.txt").read_text()
    if shutil.which("lstopo-no-graphics") or shutil.which("lstopo"):
        assert (session / "topology.xml").read_text().lstrip().startswith("<?xml")
        assert rec["topology"] == f"sessions/{rec['session']}/topology.xml"
    else:  # no hwloc: the record says so instead of pointing at a file that is not there
        assert not (session / "topology.xml").exists()
        assert rec["topology"] == "not captured (lstopo not found; install hwloc)"


def test_report_has_tables_and_plots(campaign):
    _, root = campaign
    report = (root / "report" / "report.md").read_text()
    assert "## Allreduce np=4" in report and "I_MPI_ADJUST_ALLREDUCE=2" in report
    pngs = list((root / "report").glob("*.png"))
    assert len(pngs) >= 6 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_rerun_resumes_and_runs_nothing(campaign):
    matrix, root = campaign
    before = len(records(root))
    again = commstack("run", str(matrix), "--out", str(root.parents[1]))
    assert again.returncode == 0, again.stderr
    assert "0 runs now, 40 already done" in again.stderr
    assert len(records(root)) == before
