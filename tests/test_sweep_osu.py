"""Must show: OSU Micro-Benchmarks 7.3, built by Spack against Debian's Open MPI and MPICH, swept
over both stacks, two tests and UCX_TLS (Open MPI with pml ucx; Debian's MPICH is ch4:ucx), every
point parsed, aggregated and reported; and a collective with -f on 4 ranks."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
from pathlib import Path
from textwrap import dedent

import pytest
import yaml

from commstack.aggregate import aggregate
from commstack.store.campaign import Campaign
from tests import spack_support
from tests.conftest import REPO
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
    exclude:
      # Debian MPICH 4.0.2 over UCX tcp on lo hangs now and then (docs/reference/benchmarks.md, OSU).
      - {stack: mpich, UCX_TLS: "self,tcp"}
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
                        env={**os.environ, **env}, timeout=1200)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
        roots[name] = tmp / "results" / "local" / f"osu-{name}"
    return roots


def test_every_point_ran_and_parsed(sweep):
    counts = ok_counts(sweep["pt2pt"])
    assert len(counts) == (2 * 2 - 1) * 2 * 2 and set(counts.values()) == {1}
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
    summary = aggregate(Campaign(sweep["pt2pt"]).records())
    metrics = {(s["stack"], s["executable"], s["UCX_TLS"], s["metric"]) for s in summary}
    assert len(metrics) == 6
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


# --- all three local stacks: matrices/local/stacks-osu.yaml ----------------------------------

STACKS_OSU = REPO / "matrices" / "local" / "stacks-osu.yaml"
OSU_INTELMPI_ENV = spack_support.SPACK_ENVS_DIR / "osu-intelmpi"
# median (n): three repeats are too few for a distribution-free interval, so none is shown
SPREAD_CELL = re.compile(r"\d+(?:\.\d+)? \(3\)")


def _intel_mpi_skip_reason(impi_root: Path) -> "str | None":
    """tests/spack/osu-intelmpi takes the wheel through a symlink to the checkout's .venv as
    intel-oneapi-mpi@2021.18.1: it fits only that venv and that version."""
    link = OSU_INTELMPI_ENV / "wheel-layout" / "mpi" / "2021.18"
    if link.resolve() != impi_root.resolve():
        return (f"skipped: {link} does not lead to this Intel MPI ({impi_root}); the Spack "
                "environment expects the wheel in the checkout's .venv")
    try:
        version = importlib.metadata.version("impi-rt")
    except importlib.metadata.PackageNotFoundError:
        return "skipped: impi-rt is not installed in this Python"
    if not version.startswith("2021.18."):
        return f"skipped: impi-rt {version}; tests/spack/osu-intelmpi declares 2021.18.1"
    return None


@pytest.fixture(scope="module")
def three_stacks(osu_dirs, impi_root, tmp_path_factory):
    """OSU built by Spack against each local MPI: the folders holding pt2pt/ and collective/."""
    reason = _intel_mpi_skip_reason(impi_root)
    if reason:
        pytest.skip(reason)
    ompi, mpich = osu_dirs
    impi = spack_support.install_osu(OSU_INTELMPI_ENV, tmp_path_factory.mktemp("spack-osu-impi"))
    return {"COMMSTACK_OSU_INTELMPI": str(impi), "COMMSTACK_OSU_OPENMPI": str(ompi),
            "COMMSTACK_OSU_MPICH": str(mpich)}


@pytest.fixture(scope="module")
def stacks_sweep(three_stacks, tmp_path_factory):
    """The user-facing matrix, smaller (sizes to 4 KiB, 200 iterations), plus an Intel MPI stack
    given UCX_TLS: Intel MPI runs over libfabric here, so that setting must stay unchecked."""
    data = yaml.safe_load(STACKS_OSU.read_text())
    data["parameters"].update({"message_size": "1:4096", "iterations": 200, "warmup": 20})
    data["stacks"]["impi-ucx-tls"] = {**data["stacks"]["impi"],
                                      "env": {"UCX_TLS": "self,sm"}}
    data["product"]["stack"].append("impi-ucx-tls")
    tmp = tmp_path_factory.mktemp("stacks-osu")
    matrix = tmp / "matrices" / "local" / "stacks-osu.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(yaml.safe_dump(data, sort_keys=False))
    env = {**os.environ, **three_stacks}
    run = commstack("run", str(matrix), "--out", str(tmp / "results"), env=env, timeout=1200)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "SKIPPED" not in run.stdout + run.stderr
    root = tmp / "results" / "local" / "stacks-osu"
    report = commstack("report", str(root), env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    return root, data["product"]["stack"]


def test_stacks_matrix_runs_every_stack_and_test(stacks_sweep):
    root, stacks = stacks_sweep
    counts = ok_counts(root)
    assert len(counts) == len(stacks) * 3 * 3 and set(counts.values()) == {1}
    by_stack = {}
    for rec in records(root):
        by_stack.setdefault(rec["params"]["stack"], []).append(rec)
        assert [r["bytes"] for r in rec["parsed"]] == [2 ** k for k in range(13)]
    assert set(by_stack) == set(stacks)
    # each stack ran its own OSU build (one per MPI), with its own launcher
    built_for = {"impi": "osu-intelmpi", "ompi": "osu-openmpi", "mpich": "osu-mpich"}
    for name, recs in by_stack.items():
        env_dir = next(v for k, v in built_for.items() if name.startswith(k))
        assert all(f"/{env_dir}/" in r["argv"][-9] or env_dir in r["command"] for r in recs), name


def test_ucx_settings_are_in_effect_only_where_ucx_ran(stacks_sweep):
    root, _ = stacks_sweep
    for rec in records(root):
        stack, ucx = rec["params"]["stack"], rec["ucx"]
        if stack.startswith("ompi-ucx"):  # pml ucx: Open MPI fails without UCX
            assert ucx["uses_ucx"] and "UCX_TLS" in ucx["in_effect"], (stack, ucx)
        elif stack.startswith("mpich"):  # ch4:ucx, but no evidence in this run's output
            assert ("UCX_TLS" in ucx["in_effect"]) == bool(ucx["uses_ucx"]), (stack, ucx)
            assert ucx["uses_ucx"] or "UCX_TLS" in ucx["unchecked"], (stack, ucx)
        elif stack == "impi-ucx-tls":
            # no FI_PROVIDER=mlx: nothing shows Intel MPI used UCX, so nothing is claimed
            assert ucx["uses_ucx"] is None and ucx["in_effect"] == {}
            assert ucx["unchecked"] == {"UCX_TLS": "self,sm"} and ucx["unchecked_reason"]
        else:
            assert ucx["set"] == {}


def test_report_has_every_stacks_numbers_with_spread(stacks_sweep):
    root, stacks = stacks_sweep
    report = (root / "report" / "report.md").read_text()
    assert "Latency" in report and "Bandwidth" in report
    for stack in stacks:
        assert stack in report, stack
    assert len(SPREAD_CELL.findall(report)) >= len(stacks) * 2 * 13
    summary = aggregate(Campaign(root).records())
    per_stack = {(s["stack"], s["metric"]) for s in summary if s["n"] == 3}
    assert per_stack == {(s, m) for s in stacks for m in ("t_us", "mbytes_per_s", "t_avg_us")}
    assert all(s["min"] <= s["trimmed_mean"] <= s["max"] for s in summary)
