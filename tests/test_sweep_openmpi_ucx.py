"""Must show: a UCX sweep on Debian Open MPI (pml ucx; UCX_TLS x UCX_RNDV_THRESH) on IMB built
with Spack against it, with proof that every variable reached every rank (UCX reports it), and a
misspelled UCX variable flagged on the record."""

from __future__ import annotations

from textwrap import dedent

import pytest

from tests.sweeps import commstack, ok_counts, records

pytestmark = [pytest.mark.spack, pytest.mark.mpi]

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 2
    timeout: 120
    stacks:
      ompi-ucx:
        flavour: openmpi
        launcher: mpirun.openmpi
        bin: ${COMMSTACK_IMB_OPENMPI_BIN}
        env:
          # Debian's Open MPI disables the UCX PML and limits it to Mellanox devices.
          OMPI_MCA_pml: ucx
          OMPI_MCA_pml_ucx_tls: any
          OMPI_MCA_pml_ucx_devices: any
    parameters:
      ranks_per_node: 2
      benchmarks: PingPong Alltoall
      msglog: "0:17"
      iter: 100
      UCX_LOG_LEVEL: info
      UCX_NET_DEVICES: lo
    product:
      UCX_TLS: ["self,sm", "self,tcp"]
      UCX_RNDV_THRESH: [8kb, 64kb]
    """)


@pytest.fixture(scope="module")
def campaign(imb_openmpi_bin, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("COMMSTACK_IMB_OPENMPI_BIN", str(imb_openmpi_bin))
    tmp = tmp_path_factory.mktemp("ucx")
    matrix = tmp / "matrices" / "local" / "ucx.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX)
    run = commstack("run", str(matrix), "--out", str(tmp / "results"), "--report")
    assert run.returncode == 0, run.stderr[-3000:]
    return tmp, tmp / "results" / "local" / "ucx"


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_all_points_ran_and_parsed(campaign):
    _, root = campaign
    counts = ok_counts(root)
    assert len(counts) == 4 * 2 and set(counts.values()) == {1}
    for rec in records(root):
        assert {row["benchmark"] for row in rec["parsed"]} == {"PingPong", "Alltoall"}
        assert rec["env"]["OMPI_MCA_pml"] == "ucx"
        assert ["-x", "UCX_TLS"] == rec["argv"][rec["argv"].index("UCX_TLS") - 1:][:2]


def test_every_rank_reports_the_point_variables(campaign):
    _, root = campaign
    for rec in records(root):
        reported = rec["ucx"]["reported_by_process"]
        assert len(reported) == 2, reported  # one line per rank (process id)
        for variables in reported.values():
            assert variables["UCX_TLS"] == rec["params"]["UCX_TLS"]
            assert variables["UCX_RNDV_THRESH"] == rec["params"]["UCX_RNDV_THRESH"]
        assert rec["ucx"]["unrecognised"] == []


def test_transport_choice_is_visible_in_the_endpoints(campaign):
    _, root = campaign
    for rec in records(root):
        lanes = " ".join(" ".join(v) for v in rec["ucx"]["endpoints_by_process"].values())
        if rec["params"]["UCX_TLS"] == "self,tcp":
            assert "tcp/lo" in lanes and "sysv" not in lanes and "posix" not in lanes
        else:
            assert "tcp" not in lanes and ("sysv" in lanes or "posix" in lanes)


def test_misspelled_ucx_variable_is_flagged(campaign, imb_openmpi_bin):
    tmp, _ = campaign
    matrix = tmp / "matrices" / "local" / "typo.yaml"
    matrix.write_text(MATRIX.replace("UCX_NET_DEVICES: lo", "UCX_NET_DEVICES: lo\n  "
                                     "UCX_RNDV_TRESH: 16kb").replace(
        'UCX_RNDV_THRESH: [8kb, 64kb]', 'UCX_RNDV_THRESH: [8kb]').replace(
        'UCX_TLS: ["self,sm", "self,tcp"]', 'UCX_TLS: ["self,sm"]').replace(
        "repeats: 2", "repeats: 1"))
    # The pre-flight refuses the name (tests/test_preflight.py); run it anyway, unchecked.
    run = commstack("run", str(matrix), "--out", str(tmp / "results"),
                    "--allow-unlisted", "UCX_RNDV_TRESH")
    assert run.returncode == 0, run.stderr[-2000:]
    (rec,) = records(tmp / "results" / "local" / "typo")
    assert rec["preflight_unchecked"]["UCX_RNDV_TRESH"].startswith("let through by --allow-unlisted")
    assert rec["ucx"]["unrecognised"] == ["UCX_RNDV_TRESH"]
    assert rec["ucx"]["unused_reported"] == ["UCX_RNDV_TRESH"]  # UCX's own warning


def test_session_provenance_names_the_spack_build(campaign):
    import json

    _, root = campaign
    (prov,) = [json.loads(p.read_text()) for p in root.glob("sessions/*/provenance.json")]
    (exe,) = prov["executables"].values()
    assert exe["spack"]["name"] == "intel-mpi-benchmarks" and len(exe["spack"]["hash"]) == 32
    (session,) = root.glob("sessions/*")
    ompi_info = (session / "ompi-ucx.ompi_info.txt").read_text()
    assert "ompi:version:full:4.1.4" in ompi_info
    assert "Version 1.13" in (session / "ompi-ucx.ucx_info.txt").read_text()


def test_report_compares_the_knobs(campaign):
    _, root = campaign
    report = (root / "report" / "report.md").read_text()
    assert "## Alltoall np=2" in report
    assert "UCX_RNDV_THRESH=64kb, UCX_TLS=self,tcp" in report
