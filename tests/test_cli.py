"""The command line as a user meets it: plan, parse, status, run_matrix.sh, and clear errors."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.sweeps import HALF_FAILING_MATRIX, commstack, records

FIXTURES = REPO / "tests" / "fixtures"


def test_plan_prints_every_point_with_its_command_and_launches_nothing(write_matrix, tmp_path):
    matrix = write_matrix("""
        benchmark: cartex
        repeats: 3
        stacks:
          ompi: {flavour: openmpi, launcher: /bin/true, bin: /bin}
        parameters: {executable: "true", domain: "64 64 64", nrep: 1000, check: true}
        product:
          halo: [1, 2]
          nfields: [1, 4]
          mca.coll_hcoll_enable: [0]
        zip:
          - order: [XYZ, ZYX]
            node: ["2 1 1", "1 1 2"]
        """)
    out = commstack("plan", str(matrix), "--out", str(tmp_path / "results"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("# launching on this node; machine facts:")
    assert lines[1].startswith("# campaign") and "8 points x 3 repeats = 24 runs" in lines[1]
    commands = [line.strip() for line in lines if line.startswith("    ")]
    assert len(commands) == 8
    assert any("--halo 2 --nfields 4" in c and "--order ZYX --node 1 1 2" in c for c in commands)
    assert all("--domain 64 64 64" in c and c.endswith("--check") for c in commands)
    assert all("OMPI_MCA_coll_hcoll_enable=0" in c and "-x OMPI_MCA_coll_hcoll_enable" in c
               for c in commands)
    assert not (tmp_path / "results").exists()


def test_run_matrix_dry_run_is_the_plan(write_matrix, tmp_path):
    matrix = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          ompi: {flavour: openmpi, launcher: /bin/true, bin: /bin}
        parameters: {executable: "true", benchmarks: PingPong, ranks_per_node: 2}
        product: {UCX_TLS: [sm, tcp], UCX_RNDV_THRESH: ["intra:32kb,inter:128kb", 8kb]}
        """)
    out = subprocess.run([str(REPO / "scripts" / "run_matrix.sh"), str(matrix), "--dry-run",
                          "--out", str(tmp_path / "r"), "--machine", "betzy"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "results" not in out.stdout and str(tmp_path / "r" / "betzy" / "m") in out.stdout
    assert "UCX_RNDV_THRESH=intra:32kb,inter:128kb" in out.stdout
    assert out.stdout.count("\n    env ") == 4
    assert not (tmp_path / "r").exists()


def test_missing_benchmark_binary_is_a_clear_error_before_launch(write_matrix, tmp_path):
    matrix = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          ompi: {flavour: openmpi, launcher: /bin/true, bin: /bin}
        parameters: {benchmarks: PingPong}
        """)
    out = commstack("run", str(matrix), "--out", str(tmp_path / "r"))
    assert out.returncode == 2
    assert "stack 'ompi': benchmark executable 'IMB-MPI1' not found in /bin" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "r").exists()


def test_missing_launcher_and_unset_variable(write_matrix, tmp_path):
    matrix = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          a: {flavour: openmpi, launcher: mpirun.nosuch}
        """)
    out = commstack("plan", str(matrix))
    assert out.returncode == 2 and "launcher 'mpirun.nosuch' not found" in out.stderr
    matrix = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          a: {flavour: openmpi, prefix: "${COMMSTACK_TEST_UNSET_VARIABLE}"}
        """)
    out = commstack("plan", str(matrix), env={k: v for k, v in os.environ.items()
                                              if k != "COMMSTACK_TEST_UNSET_VARIABLE"})
    assert out.returncode == 2
    assert "stack 'a': prefix uses ${COMMSTACK_TEST_UNSET_VARIABLE}, which is not set" in out.stderr


def test_several_nodes_need_slurm_and_cray_needs_srun(write_matrix):
    matrix = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          ompi: {flavour: openmpi, launcher: /bin/true, bin: /bin}
        parameters: {executable: "true", nodes: 2}
        """)
    out = commstack("plan", str(matrix))
    assert out.returncode == 2 and "nodes=2" in out.stderr and "Slurm" in out.stderr


def test_oversubscription_refused_when_forbidden(write_matrix):
    matrix = write_matrix(f"""
        benchmark: imb-mpi1
        stacks:
          ompi: {{flavour: openmpi, launcher: /bin/true, bin: /bin}}
        parameters: {{executable: "true", ranks_per_node: {len(os.sched_getaffinity(0)) + 1},
                      oversubscribe: false}}
        """)
    out = commstack("plan", str(matrix))
    assert out.returncode == 2 and "needs oversubscription" in out.stderr


@pytest.mark.parametrize("kind, stem", [
    ("imb", "imb/intelmpi-2021.18/prebuilt-mpi1-pingpong-np2"),
    ("cartex", "cartex/mpi_comm-hwcart-node221-np4-check"),
])
def test_parse_prints_json_lines(kind, stem):
    path = next(FIXTURES.glob(stem + ".out"))
    out = commstack("parse", str(path), "--benchmark", kind, "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    if kind == "imb":
        assert {r["benchmark"] for r in rows} == {"PingPong"} and all("t_us" in r for r in rows)
    else:
        (row,) = rows
        assert row["ranks"] == 4 and row["time_10000_calls_s"] == pytest.approx(row["mean_s"] * 1e4)


def test_parse_of_a_truncated_file_fails_with_the_reason(tmp_path):
    text = next(FIXTURES.glob("imb/intelmpi-2021.18/prebuilt-mpi1-pingpong-np2.out")).read_text()
    cut = tmp_path / "cut.out"
    cut.write_text("\n".join(text.splitlines()[:40]) + "\n")
    out = commstack("parse", str(cut), "--benchmark", "imb", "--json")
    assert out.returncode == 2 and "cut off" in out.stderr and out.stdout == ""


@pytest.mark.mpi
def test_status_and_unknown_imb_name_is_a_failure(impi_root, write_matrix, tmp_path):
    matrix = write_matrix(HALF_FAILING_MATRIX)
    out = commstack("run", str(matrix), "--out", str(tmp_path / "r"))
    assert out.returncode == 3, out.stderr
    root = tmp_path / "r" / "local" / "m"
    bad = [r for r in records(root) if r["status"] != "ok"]
    assert len(bad) == 2 and all(r["status"] == "parse-error" for r in bad)
    assert "Invalid benchmark name nosuchbench" in bad[0]["parse_error"]
    status = commstack("status", str(root))
    assert status.returncode == 3
    assert status.stdout.strip().endswith("2 done, 2 failed, 0 running, 0 pending (of 4 runs)")
    assert commstack("status", str(tmp_path)).returncode == 2  # not a campaign
    report = commstack("report", str(root))
    assert report.returncode == 0, report.stderr
    text = (root / "report" / "report.md").read_text()
    why = [line for line in text.splitlines() if "| parse-error |" in line]
    assert len(why) == 2 and all("Invalid benchmark name nosuchbench" in line for line in why)


def test_secrets_never_reach_provenance(monkeypatch):
    from commstack.provenance import scrub_env

    clean = scrub_env({"GITHUB_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "y", "DB_PASSWORD": "z",
                       "SSH_PRIVATE_KEY": "k", "UCX_TLS": "sm",
                       "HTTPS_PROXY": "http://user:pw@proxy:3128"})
    assert clean == {"UCX_TLS": "sm", "HTTPS_PROXY": "http://***@proxy:3128"}


def test_a_recorded_launch_line_carries_no_secret():
    from commstack.launch.command import LaunchCommand
    from commstack.provenance import scrubbed_shell

    command = LaunchCommand(["IMB-MPI1", "PingPong"], {"MY_API_TOKEN": "s3cret", "UCX_TLS": "tcp"}, {})
    line = scrubbed_shell(command)
    assert "s3cret" not in line and "MY_API_TOKEN" not in line
    assert "UCX_TLS=tcp" in line and line.endswith("IMB-MPI1 PingPong")


def test_store_never_overwrites(tmp_path: Path):
    from commstack.store.files import AlreadyExists, write_new

    path = tmp_path / "record.json"
    write_new(path, b"first")
    with pytest.raises(AlreadyExists):
        write_new(path, b"second")
    assert path.read_bytes() == b"first" and list(tmp_path.iterdir()) == [path]
