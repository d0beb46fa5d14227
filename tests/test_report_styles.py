"""Must show: study-style reports from real local campaigns (Intel MPI from PyPI):

* OCI-tuning style: IMB-MPI1 Allreduce/Alltoall swept over I_MPI_ADJUST_ALLREDUCE (unset, i.e.
  the library's default, or algorithm 2) x mapping; one plot per step in the study's file-name
  scheme, tuned vs default, and an images index like the study's;
* GASNet-EX-paper style: IMB-RMA Unidir_put/Unidir_get over two fabrics (shared memory, and
  libfabric's tcp provider); flood bandwidth in GiB/s (max over runs) and the 8-byte latency
  table with ratios (min over runs).
"""

from __future__ import annotations

import csv
import re
from textwrap import dedent

import pytest

from commstack.report.gasnet import bandwidth, latency, mbytes_to_gib
from commstack.report.oracle import Axis, Curve, default_curve, is_default, token
from tests.sweeps import commstack, records

pytestmark = pytest.mark.mpi

ORACLE = dedent("""
    benchmark: imb-mpi1
    repeats: 2
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      benchmarks: Allreduce Alltoall
      msglog: "0:10"
      iter: 50
      ranks_per_node: 2
    product:
      I_MPI_ADJUST_ALLREDUCE: ["", 2]
      mapping: [block, cyclic]
    """)

GASNET = dedent("""
    benchmark: imb-rma
    repeats: 2
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      benchmarks: Unidir_put Unidir_get
      msglog: "2:12"
      iter: 50
      iter_policy: "off"
      ranks_per_node: 2
    zip:
      - I_MPI_FABRICS: [shm, ofi]
        FI_PROVIDER: [shm, tcp]
    """)

STUDY_NAME = re.compile(r"^(are|ata)_01_02_step\d(_[a-z0-9-]+)?\.png$")


def run_campaign(tmp, name: str, text: str):
    matrix = tmp / "matrices" / "local" / f"{name}.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)
    matrix.write_text(text)
    run = commstack("run", str(matrix), "--out", str(tmp / "results"), "--report")
    assert run.returncode == 0, run.stderr[-3000:]
    return tmp / "results" / "local" / name


@pytest.fixture(scope="module")
def oracle(impi_root, tmp_path_factory):
    return run_campaign(tmp_path_factory.mktemp("oracle"), "tuning", ORACLE)


@pytest.fixture(scope="module")
def gasnet(impi_root, tmp_path_factory):
    return run_campaign(tmp_path_factory.mktemp("gasnet"), "rma", GASNET)


def test_oracle_step_plots_follow_the_study_scheme(oracle):
    report_dir = oracle / "report"
    pngs = sorted(p.name for p in report_dir.glob("a*_01_02_*.png"))
    # Per collective: step 1 (algorithm) per mapping, step 2 (mapping) per algorithm, step 3.
    assert pngs == sorted(f"{c}_01_02_{s}.png" for c in ("are", "ata") for s in (
        "step1_bl", "step1_cy", "step2_adjustallreduce2", "step2_adjustallreduceunset", "step3"))
    assert all(STUDY_NAME.match(p) for p in pngs)
    assert all((report_dir / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)
    with open(report_dir / "oracle_images.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["file"] for r in rows) == pngs
    step1 = next(r for r in rows if r["file"] == "are_01_02_step1_bl.png")
    assert step1["collective"] == "allreduce" and step1["nodes"] == "1" and step1["ppn"] == "2"
    assert step1["series_varied"] == "I_MPI_ADJUST_ALLREDUCE in {; 2}"
    assert step1["fixed_params"] == "mapping=block"
    final = next(r for r in rows if r["file"] == "are_01_02_step3.png")
    assert final["plot_kind"] == "tuned_vs_default" and "default: I_MPI_ADJUST_ALLREDUCE unset" \
        in final["fixed_params"]


def test_oracle_report_names_tuned_and_default(oracle):
    report = (oracle / "report" / "report.md").read_text()
    assert "## Tuning steps (OCI tuning-study style)" in report
    assert "### Allreduce 1 node 2 ppn (2 processes, t_avg [usec])" in report
    assert re.search(r"\| 1 \| I_MPI_ADJUST_ALLREDUCE \| (2|unset) \| unset \|", report)
    assert re.search(r"\| 2 \| mapping \| (block|cyclic) \| (block|cyclic) \(no default value "
                     r"swept: as tuned\) \|", report)
    assert re.search(r"Tuned vs default: geometric-mean speedup \d+\.\d\dx over 9 message "
                     r"sizes", report)  # Allreduce: 4 B .. 1 KiB
    assert "![are_01_02_step3.png](are_01_02_step3.png)" in report
    # The first report's tables and plots are still there.
    assert "## Allreduce np=2" in report and (oracle / "report" / "allreduce_np2.png").exists()


def test_default_and_tokens():
    assert is_default("I_MPI_ADJUST_ALLREDUCE", "", {}) and is_default("UCX_TLS", "all", {})
    assert is_default("I_MPI_ADJUST_ALLTOALL", 0, {}) and not is_default("UCX_TLS", "rc", {})
    assert is_default("mca.coll_hcoll_enable", 1, {}) and not is_default("mapping", "block", {})
    assert is_default("mapping", "block", {"mapping": "block"})
    assert token(Axis(("mapping",)), ("cyclic",)) == "cy"
    assert token(Axis(("mca.coll_hcoll_enable", "mca.coll_ucc_enable")), ("0", "1")) == "uc"
    assert token(Axis(("UCX_RNDV_THRESH",)), ("intra:32kb,inter:128kb",)) == \
        "rndvthreshintra32kbinter128kb"
    assert token(Axis(("UCX_TLS",)), ("self,sm,rc",)) == "rc"


def test_default_is_the_all_default_configuration():
    from commstack.report.oracle import Case

    axis = Axis(("UCX_RNDV_THRESH",), [("auto",), ("64kb",)])
    curves = [Curve("a", {"UCX_RNDV_THRESH": "auto"}, {8: 2.0, 64: 4.0}),
              Curve("b", {"UCX_RNDV_THRESH": "64kb"}, {8: 1.0, 64: 2.0})]
    case = Case("Allreduce", 2, 8, 16, "t_avg_us", True, curves, [axis])
    assert default_curve(case, {}).point_id == "a"
    assert default_curve(case, {"UCX_RNDV_THRESH": "64kb"}).point_id == "b"
    assert case.prefix == "are_02_08"


def test_gasnet_bandwidth_is_max_over_runs_in_gib(gasnet):
    recs = records(gasnet)
    series = {(s.config, s.op): s for s in bandwidth(recs)}
    assert set(series) == {(c, op) for c in ("FI_PROVIDER=shm, I_MPI_FABRICS=shm",
                                             "FI_PROVIDER=tcp, I_MPI_FABRICS=ofi")
                           for op in ("Put", "Get")}
    shm_put = series[("FI_PROVIDER=shm, I_MPI_FABRICS=shm", "Put")]
    samples = [row["mbytes_per_s"] for r in recs if r["params"]["I_MPI_FABRICS"] == "shm"
               for row in r["parsed"] if row["benchmark"] == "Unidir_put"
               and row["mode"] == "aggregate" and row["bytes"] == 4096]
    assert len(samples) == 2 and shm_put.runs == 2
    assert shm_put.points[4096] == pytest.approx(max(samples) * 1e6 / 2 ** 30)
    assert sorted(shm_put.points) == [0] + [2 ** k for k in range(2, 13)]  # IMB adds 0 B
    assert mbytes_to_gib(1073.741824) == pytest.approx(1.0)


def test_gasnet_latency_is_min_over_runs_with_ratios(gasnet):
    recs = records(gasnet)
    lat = {(s.config, s.op): s for s in latency(recs)}
    tcp_get = lat[("FI_PROVIDER=tcp, I_MPI_FABRICS=ofi", "Get")]
    samples = [row["t_us"] for r in recs if r["params"]["I_MPI_FABRICS"] == "ofi"
               for row in r["parsed"] if row["benchmark"] == "Unidir_get"
               and row["mode"] == "non-aggregate" and row["bytes"] == 8]
    assert tcp_get.points[8] == min(samples)
    report = (gasnet / "report" / "report.md").read_text()
    assert "## RMA performance (GASNet-EX paper style)" in report
    assert "![flood bandwidth](gasnet_flood_bandwidth.png)" in report
    assert "| configuration | 8-byte RMA Put latency | ratio | 8-byte RMA Get latency | ratio |" \
        in report
    base = lat[("FI_PROVIDER=shm, I_MPI_FABRICS=shm", "Get")].points[8]
    assert (f"| FI_PROVIDER=tcp, I_MPI_FABRICS=ofi | "
            f"{lat[('FI_PROVIDER=tcp, I_MPI_FABRICS=ofi', 'Put')].points[8]:.2f} μs") in report
    assert f"{tcp_get.points[8] / base:.2f} |" in report
    assert re.search(r"\| FI_PROVIDER=shm, I_MPI_FABRICS=shm \| [\d.]+ μs \| 1\.00 \| [\d.]+ μs "
                     r"\| 1\.00 \|", report)
    png = gasnet / "report" / "gasnet_flood_bandwidth.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
