"""Must show (issue 12): IMB-MPI1 Allreduce, Alltoall and Allgather with mca.coll_ucc_enable 0/1 on
the Open MPI 4.1.4 + UCC stack Spack built (view ompi-ucc of environments/local), 4 local ranks, each record
naming the component that served each collective from coll/ucc's own verbose output; a
coll_ucc_enable=1 run that UCC did not serve is flagged on the record, in the report and in
`commstack status`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.flavours import ompi_coll_evidence as evidence
from tests.conftest import REPO
from tests.sweeps import commstack, records

FIXTURES = REPO / "tests" / "fixtures" / "ucc" / "openmpi-4.1.4-ucc-1.3.0"
COLLECTIVES = ["allgather", "allreduce", "alltoall"]
ON = {"OMPI_MCA_coll_ucc_enable": "1", "OMPI_MCA_coll_ucc_priority": "100",
      "OMPI_MCA_coll_ucc_verbose": "3"}


# --- the parser on the committed real outputs (tests/fixtures/ucc/README.md) ----------------
def test_ucc_served_allreduce_in_the_verbose_fixture():
    used = evidence.components_used(ON, (FIXTURES / "imb-allreduce-np4-ucc-verbose3.err")
                                    .read_text(), ["Allreduce"])
    assert used["collectives"]["allreduce"] == ["ucc"]
    assert used["calls"]["allreduce"] == {"ucc": 328}  # the fixture's README counts 328 lines
    assert used["fallbacks"] == {} and used["processes"] == 4 and used["not_used"] == []
    assert used["asked"] == ["ucc"] and used["source"] == evidence.SOURCE


def test_disabled_ucc_names_nothing_and_flags_nothing():
    env = {**ON, "OMPI_MCA_coll_ucc_enable": "0"}
    used = evidence.components_used(env, (FIXTURES / "imb-allreduce-np4-ucc-disabled.err")
                                    .read_text(), ["Allreduce"])
    assert used["collectives"] == {"allreduce": [evidence.UNREPORTED]}
    assert used["asked"] == [] and used["not_used"] == [] and used["processes"] == 0


def test_without_the_verbose_level_nothing_is_claimed():
    # UCC_COLL_TRACE goes to stdout; the stderr of that run holds no coll_ucc_verbose line.
    env = {k: v for k, v in ON.items() if k != evidence.VERBOSE_VAR}
    used = evidence.components_used(env, (FIXTURES / "imb-allreduce-np4-ucc-colltrace.err")
                                    .read_text(), ["Allreduce"])
    assert used["source"] is None and used["not_used"] == []
    assert used["collectives"] == {"allreduce": [evidence.UNREPORTED]}
    assert evidence.components_used({"UCX_TLS": "sm"}, "", ["Allreduce"]) is None


def test_the_evidence_variable_is_added_only_for_coll_points():
    assert evidence.evidence_env({"OMPI_MCA_coll_ucc_enable": "1"}) == {evidence.VERBOSE_VAR: "3"}
    assert evidence.evidence_env({"OMPI_MCA_coll": "^han"}) == {evidence.VERBOSE_VAR: "3"}
    assert evidence.evidence_env({"OMPI_MCA_pml": "ucx", "UCX_TLS": "sm"}) == {}
    assert evidence.evidence_env({**ON, evidence.VERBOSE_VAR: "0"}) == {}  # the point's own
    assert evidence.asks_for_ucc({"OMPI_MCA_coll_ucc_enable": "1", "OMPI_MCA_coll": "^ucc"}) is False


# --- the real stack ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ucc_bin() -> Path:
    from tests import spack_support

    return spack_support.ompi_ucc_bin()


def _mpirun(bindir: Path, env: dict, tmp: Path, name: str) -> str:
    """IMB-MPI1's three collectives on 4 ranks; the stderr text."""
    err = tmp / f"{name}.err"
    with open(tmp / f"{name}.out", "w") as out, open(err, "w") as errf:
        proc = subprocess.run([str(bindir / "mpirun"), "--allow-run-as-root", "--oversubscribe",
                               "-np", "4", str(bindir / "IMB-MPI1"), "-npmin", "4", "-msglog",
                               "2:3", "-iter", "5", "Allreduce", "Alltoall", "Allgather"],
                              env={**os.environ, **env}, stdout=out, stderr=errf, timeout=120)
    assert proc.returncode == 0, err.read_text()[-2000:]
    return err.read_text()


@pytest.mark.spack
@pytest.mark.mpi
def test_a_real_fallback_is_seen_and_flagged(ucc_bin, tmp_path):
    # UCC_TL_UCP_TUNE=allreduce:0 gives TL/UCP's allreduce score 0: UCC returns "not supported"
    # for every allreduce and coll/ucc hands it to the component below ("running fallback").
    env = {**ON, "UCC_TL_UCP_TUNE": "allreduce:0"}
    used = evidence.components_used(env, _mpirun(ucc_bin, env, tmp_path, "tune"), COLLECTIVES)
    assert used["fallbacks"]["allreduce"] > 0 and "allreduce" not in used["calls"]
    assert used["collectives"]["allreduce"] == [evidence.UNREPORTED]
    assert used["collectives"]["alltoall"] == ["ucc"] == used["collectives"]["allgather"]
    assert used["not_used"] == ["allreduce"]
    assert "allreduce (" in evidence.not_used_note(used) and "calls fell back" in \
        evidence.not_used_note(used)


MATRIX = REPO / "matrices" / "local" / "ucc-imb.yaml"


VERBOSE_LINE = "coll_ucc_"


def _stderr(root, rec) -> str:
    return (root / "points" / rec["point_id"] / f"rep{rec['repeat']}.try{rec['attempt']}"
            / rec["stderr"]).read_text()


@pytest.fixture(scope="module")
def sweep(ucc_bin, tmp_path_factory):
    """matrices/local/ucc-imb.yaml, its stack found without exporting anything."""
    out = tmp_path_factory.mktemp("ucc-imb") / "results"
    env = {k: v for k, v in os.environ.items() if k != "COMMSTACK_OMPI_UCC_BIN"}
    run = commstack("run", str(MATRIX), "--out", str(out), "--report", env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return out / "local" / "ucc-imb"


@pytest.mark.spack
@pytest.mark.mpi
def test_every_enabled_record_names_ucc_and_disabled_ones_do_not(sweep):
    recs = records(sweep)
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)
    for rec in recs:
        used = rec["components_used"]
        benchmarks = {row["benchmark"] for row in rec["parsed"]}
        assert benchmarks == {"Allreduce", "Alltoall", "Allgather"}  # IMB's table still parsed
        # The timed run is not instrumented: the evidence comes from the point's separate
        # evidence run (same command plus the verbose level), whose timings are not used.
        assert evidence.VERBOSE_VAR not in rec["env"] and VERBOSE_LINE not in _stderr(sweep, rec)
        where = f"points/{rec['point_id']}/evidence/{rec['session']}"
        assert used["source"].startswith(f"evidence run {where} (this point's command plus "
                                         f"{evidence.VERBOSE_VAR}=3; ok, exit 0)")
        assert used["source"].endswith(evidence.SOURCE)
        assert json.loads((sweep / where / "evidence.json").read_text())["components_used"] == used
        # Each rank's stderr in a file of its own (mpirun --output-filename): the lines the
        # components are read from cannot cut into each other.
        assert len(list((sweep / where / "ranks").glob("*/rank.*/stderr"))) == rec["ranks"]
        if rec["params"]["mca.coll_ucc_enable"] == 1:
            assert used["asked"] == ["ucc"] and used["not_used"] == []
            assert all(used["collectives"][c] == ["ucc"] for c in COLLECTIVES), used
            assert all(used["calls"][c]["ucc"] > 0 for c in COLLECTIVES)
            assert used["processes"] == 4
        else:
            assert used["asked"] == [] and used["calls"] == {} and used["processes"] == 0
            assert all(used["collectives"][c] == [evidence.UNREPORTED] for c in COLLECTIVES)
    report = (sweep / "report" / "report.md").read_text()
    assert "Components asked for but not used" not in report
    # The report states the evidence its records hold, not only its absence.
    section = report.split("## Components used (the MPI's own evidence)", 1)[1].split("\n## ")[0]
    asked = [r for r in recs if r["params"]["mca.coll_ucc_enable"] == 1]
    for pid in {r["point_id"] for r in asked}:
        row = next(line for line in section.splitlines() if line.startswith(f"| {pid} |"))
        for coll in COLLECTIVES:
            total = sum(r["components_used"]["calls"][coll]["ucc"] for r in asked
                        if r["point_id"] == pid)
            assert f"{coll}: ucc {total}" in row, row


FLAGGED = dedent("""
    benchmark: imb-mpi1
    repeats: 1
    timeout: 120
    stacks:
      ompi-ucc: {flavour: openmpi, bin: "BIN", launcher: mpirun}
    parameters:
      stack: ompi-ucc
      ranks_per_node: 4
      npmin: 4
      benchmarks: Allreduce Alltoall Allgather
      msglog: "2:6"
      iter: 20
      mca.coll_ucc_enable: 1
      mca.coll_ucc_priority: 100
    zip:
      # coll/ucc told not to take IMB's three collectives (its `cts` list): no ucc call; and
      # TL/UCP's allreduce scored 0: UCC declines every allreduce, which falls back.
      # (A priority below tuned's 30 is no such case: Open MPI 4.1.4 then aborts in
      # mca_coll_ucc_save_coll_handlers, "double free or corruption".)
      - mca.coll_ucc_cts: ["^allreduce,alltoall,allgather", "^reduce"]
        UCC_TL_UCP_TUNE: ["", "allreduce:0"]
    """)


@pytest.mark.spack
@pytest.mark.mpi
def test_enabled_but_unused_ucc_is_flagged(ucc_bin, tmp_path):
    matrix = tmp_path / "matrices" / "local" / "flagged.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(FLAGGED.replace("BIN", str(ucc_bin)))
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"), "--report")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    root = tmp_path / "results" / "local" / "flagged"
    by_cts = {r["params"]["mca.coll_ucc_cts"]: r for r in records(root)}
    low, tuned = by_cts["^allreduce,alltoall,allgather"], by_cts["^reduce"]
    assert low["status"] == "ok" == tuned["status"]  # the numbers are real, only not UCC's
    assert low["components_used"]["not_used"] == COLLECTIVES
    assert not set(COLLECTIVES) & set(low["components_used"]["calls"])
    assert low["components_used"]["calls"]["barrier"]["ucc"] > 0  # UCC did run, elsewhere
    assert tuned["components_used"]["not_used"] == ["allreduce"]
    assert tuned["components_used"]["fallbacks"]["allreduce"] > 0
    assert any("ucc served none of: allreduce" in n for n in tuned["notes"])
    report = (root / "report" / "report.md").read_text()
    section = report.split("## Components asked for but not used", 1)[1]
    assert low["point_id"] in section and tuned["point_id"] in section
    status = commstack("status", str(root))
    assert "components asked for but not used: 2 runs (2 points" in status.stdout, status.stdout
