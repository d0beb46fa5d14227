"""`commstack machine check`: real probes of this host (lstopo, srun, the externals' tools)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from commstack.machine import load_machine_file
from commstack.machine.check import check_machine

REPO = Path(__file__).resolve().parents[1]
SITES = REPO / "site-configs"
REMOTE = ["betzy", "bm-optimized3-36", "perlmutter"]
needs_hwloc = pytest.mark.skipif(shutil.which("lstopo") is None and shutil.which("lscpu") is None,
                                 reason="skipped: neither lstopo (hwloc) nor lscpu here")


def commstack(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commstack", *args], capture_output=True,
                          text=True, timeout=120)


def copied_site(tmp_path: Path, machine: str, node: dict = None, packages=None) -> Path:
    """site-configs/<machine> copied, with node facts replaced; returns its machine.yaml."""
    folder = tmp_path / machine
    shutil.copytree(SITES / machine, folder)
    facts = yaml.safe_load((folder / "machine.yaml").read_text())
    facts["node"].update(node or {})
    (folder / "machine.yaml").write_text(yaml.safe_dump(facts, sort_keys=False))
    if packages is not None:
        (folder / "packages.yaml").write_text(yaml.safe_dump(packages, sort_keys=False))
    return folder / "machine.yaml"


@needs_hwloc
def test_local_is_all_agreed_or_unreadable_with_a_reason():
    outcome = check_machine(load_machine_file(SITES / "local" / "machine.yaml"))
    assert outcome.this_machine and outcome.exit_code == 0
    verdicts = {c.fact: c.verdict for c in outcome.checks}
    assert {"node.sockets", "node.cores_per_socket", "node.numa_per_socket"} <= set(verdicts)
    if outcome.contradictions and all(c.fact.startswith(("node.", "os.")) for c in outcome.contradictions):
        pytest.skip("skipped: this host is not the reference VM site-configs/local describes: "
                    + "; ".join(f"{c.fact}: {c.how}" for c in outcome.contradictions))
    assert not outcome.contradictions, [(c.fact, c.how) for c in outcome.contradictions]
    for check in outcome.checks:
        if check.verdict == "unknown":
            assert check.measured is None and check.how.startswith("could not be read here: ")
        else:
            assert check.verdict == "ok" and check.measured is not None
    # The externals are read, not assumed: Open MPI's version comes from its ompi_info.
    if shutil.which("ompi_info"):
        ompi = next(c for c in outcome.checks if c.fact.startswith("external openmpi@")
                    and c.fact.endswith("version"))
        assert ompi.verdict == "ok" and "ompi_info" in ompi.how


@needs_hwloc
def test_cli_local_prints_the_table_and_exits_zero():
    out = commstack("machine", "check", "local")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("machine local: this machine")
    assert lines[1].split()[:3] == ["fact", "declared", "measured"]
    assert any(line.startswith("node.sockets") and " ✔ " in line for line in lines)
    assert " 0 ✘ " in lines[-1]


@needs_hwloc
@pytest.mark.parametrize("fact, wrong", [("numa_per_socket", 4), ("sockets", 2)])
def test_planted_node_contradiction_is_a_cross_with_the_reason(tmp_path, fact, wrong):
    truth = check_machine(load_machine_file(SITES / "local" / "machine.yaml"))
    measured = next(c.measured for c in truth.checks if c.fact == f"node.{fact}")
    path = copied_site(tmp_path, "local", {fact: wrong})
    out = commstack("machine", "check", str(path))
    assert out.returncode == 1, out.stdout + out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith(f"node.{fact} "))
    assert " ✘ " in row
    assert f"machine.yaml says {wrong}, " in row and f" says {measured}" in row
    assert "lstopo" in row or "lscpu" in row
    others = [line for line in out.stdout.splitlines()[2:-1]
              if " ✘ " in line and not line.startswith(f"node.{fact} ")]
    if fact == "numa_per_socket":
        assert not others  # one wrong fact, one cross
    assert " 0 ✘ " not in out.stdout.splitlines()[-1]


def test_missing_external_prefix_is_a_cross_and_its_version_unreadable(tmp_path):
    packages = {"packages": {"ucx": {"buildable": False, "externals": [
        {"spec": "ucx@1.13.1", "prefix": str(tmp_path / "no-such-ucx")}]}}}
    path = copied_site(tmp_path, "local", packages=packages)
    outcome = check_machine(load_machine_file(path))
    prefix = next(c for c in outcome.checks if c.fact == "external ucx@1.13.1: prefix")
    assert prefix.verdict == "contradiction" and prefix.measured is False
    assert "no-such-ucx is absent" in prefix.how and prefix.source == "packages.yaml"
    version = next(c for c in outcome.checks if c.fact == "external ucx@1.13.1: version")
    assert version.verdict == "unknown" and "is absent" in version.how
    assert outcome.exit_code == 1


@needs_hwloc
def test_json_shape(tmp_path):
    out = commstack("machine", "check", str(copied_site(tmp_path, "local", {"sockets": 7})),
                    "--json")
    data = json.loads(out.stdout)
    assert set(data) == {"machine", "this_machine", "identity", "exit_code", "counts", "checks"}
    assert data["machine"] == "local" and data["this_machine"] is True
    assert data["exit_code"] == out.returncode == 1
    assert set(data["counts"]) == {"ok", "contradiction", "unknown", "not this machine"}
    assert data["counts"]["contradiction"] >= 1
    for check in data["checks"]:
        assert set(check) == {"fact", "declared", "measured", "verdict", "how", "source", "why",
                              "cheap", "symbol"}
        assert check["symbol"] in "✔✘?–"
    sockets = next(c for c in data["checks"] if c["fact"] == "node.sockets")
    assert sockets["declared"] == 7 and sockets["verdict"] == "contradiction" and sockets["cheap"]


@pytest.mark.parametrize("machine", REMOTE)
def test_remote_machine_is_not_this_machine(machine):
    out = commstack("machine", "check", machine)
    assert out.returncode == 5, out.stdout + out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith(f"machine {machine}: NOT this machine (")
    assert "✘" not in out.stdout and "✔" not in out.stdout
    rows = out.stdout.splitlines()[2:-1]
    assert rows and all(" – " in row for row in rows)
    assert f"on {machine}" in out.stdout.splitlines()[-1]


@pytest.mark.parametrize("machine", ["local", "slurm-ci", *REMOTE])
def test_every_verify_item_is_a_check_with_its_prose(machine):
    m = load_machine_file(SITES / machine / "machine.yaml")
    items = m.facts["verify"]["checks"]
    assert items and all(item["why"] for item in items)
    from commstack.machine.check import all_specs

    specs = all_specs(m)  # raises when an item names a fact nothing reads
    for item in items:
        assert any(item["why"] in s.why for s in specs), item


def test_unknown_machine_is_a_user_error():
    out = commstack("machine", "check", "no-such-machine")
    assert out.returncode == 2 and "no site-configs/no-such-machine/machine.yaml" in out.stderr


@needs_hwloc
def test_run_refuses_a_contradicted_machine_before_launching(tmp_path):
    yaml_path = copied_site(tmp_path / "site-configs", "local", {"numa_per_socket": 3})
    site = yaml_path.parent
    generic = yaml_path.read_text()
    # A particular machine (this host by name) is refused; `local` names none (next test).
    facts = yaml.safe_load(generic)
    facts["verify"]["this_machine"] = {"hostname": "^" + re.escape(socket.gethostname()) + "$"}
    yaml_path.write_text(yaml.safe_dump(facts, sort_keys=False))
    matrix = tmp_path / "matrices" / site.name / "m.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text("benchmark: imb-mpi1\nstacks:\n  ompi: {flavour: openmpi, launcher: "
                      "/bin/true, bin: /bin}\nparameters: {executable: \"true\", benchmarks: "
                      "PingPong}\n")
    env_args = ["run", str(matrix), "--out", str(tmp_path / "r"), "--local"]
    import os

    env = {**os.environ, "COMMSTACK_SITE_CONFIGS": str(tmp_path / "site-configs")}
    out = subprocess.run([sys.executable, "-m", "commstack", *env_args], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 2, out.stderr
    assert "contradicted by this machine, nothing launched" in out.stderr
    assert "✘ node.numa_per_socket: machine.yaml says 3" in out.stderr
    assert not (tmp_path / "r").exists()
    out = subprocess.run([sys.executable, "-m", "commstack", *env_args, "--no-machine-check"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert "contradicted by this machine" not in out.stderr
    # The same contradiction in a generic machine.yaml (no this_machine, like `local`): the run
    # goes on (records carry the real topology); `machine check` names the difference.
    yaml_path.write_text(generic)
    out = subprocess.run([sys.executable, "-m", "commstack", *env_args, "--campaign", "generic"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert "contradicted by this machine" not in out.stderr
    assert (tmp_path / "r" / site.name / "generic" / "points").is_dir()
    check = subprocess.run([sys.executable, "-m", "commstack", "machine", "check", str(yaml_path)],
                           capture_output=True, text=True, timeout=120, env=env)
    assert check.returncode == 1 and "node.numa_per_socket" in check.stdout
