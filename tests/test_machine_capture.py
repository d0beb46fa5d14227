"""`commstack machine capture`: read this host, propose machine.yaml and packages.yaml as a diff
with each value's provenance; `machine check` of the proposal agrees. Real probes, real files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from commstack.machine import load_machine_file
from commstack.machine.capture import Provenance, capture_readings, propose
from commstack.machine.capture.proposal import CannotPlace, set_value
from commstack.machine.capture.readings import scrub
from commstack.machine.check import check_machine

REPO = Path(__file__).resolve().parents[1]
SITES = REPO / "site-configs"
needs_hwloc = pytest.mark.skipif(shutil.which("lstopo") is None and shutil.which("lscpu") is None,
                                 reason="skipped: neither lstopo (hwloc) nor lscpu here")


def commstack(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commstack", *args], capture_output=True,
                          text=True, timeout=timeout)


def changed_local(tmp_path: Path) -> Path:
    """site-configs/local with two wrong facts: the node's cores, the UCX external's version."""
    folder = tmp_path / "local"
    shutil.copytree(SITES / "local", folder)
    machine = folder / "machine.yaml"
    truth = load_machine_file(SITES / "local" / "machine.yaml").node["cores_per_socket"]
    text = machine.read_text().replace(f"cores_per_socket: {truth}",
                                       f"cores_per_socket: {truth + 6}")
    machine.write_text(text)
    packages = folder / "packages.yaml"
    packages.write_text(packages.read_text().replace("spec: ucx@1.13.1", "spec: ucx@1.12.0"))
    return machine


def measured_cores() -> int:
    outcome = check_machine(load_machine_file(SITES / "local" / "machine.yaml"))
    return next(c.measured for c in outcome.checks if c.fact == "node.cores_per_socket")


@needs_hwloc
def test_capture_on_a_changed_machine_shows_the_change_and_check_agrees(tmp_path):
    machine = changed_local(tmp_path)
    before = commstack("machine", "check", str(machine))
    assert before.returncode == 1, before.stdout  # the planted facts are contradictions
    out = tmp_path / "proposal"
    run = commstack("machine", "capture", str(machine), "--no-spack", "--out", str(out))
    assert run.returncode == 1, run.stdout + run.stderr  # 1: a captured value differs
    cores = measured_cores()
    diff = (out / "capture.diff").read_text()
    assert f"-  cores_per_socket: {cores + 6}\n" in diff
    assert f"+  cores_per_socket: {cores}  # captured on " in diff
    assert "(was " in diff and ("lstopo" in diff or "lscpu" in diff)
    if shutil.which("ucx_info"):
        assert "-    - spec: ucx@1.12.0 " in diff and "+    - spec: ucx@1.13.1 " in diff
        assert "ucx_info -v (was 1.12.0)" in diff
    assert diff in run.stdout  # the same diff is printed
    # The proposal checks clean: every contradiction the capture saw is gone.
    after = commstack("machine", "check", str(out / "machine.yaml"), "--json")
    assert after.returncode == 0, after.stdout
    # Provenance: host, date and command of every reading; nothing of $HOME.
    prov = yaml.safe_load((out / "provenance.yaml").read_text())
    rows = {r["fact"]: r for r in prov["readings"]}
    assert rows["node.cores_per_socket"]["captured"] == cores
    assert rows["node.cores_per_socket"]["placed"] is True
    assert all(r["host"] and r["date"].endswith("UTC") for r in rows.values())
    home = str(Path.home())
    for name in ("machine.yaml", "packages.yaml", "provenance.yaml", "capture.diff"):
        assert home not in (out / name).read_text(), name


@needs_hwloc
def test_capture_of_the_committed_local_then_check_passes(tmp_path):
    out = tmp_path / "proposal"
    run = commstack("machine", "capture", "local", "--no-spack", "--out", str(out))
    assert run.returncode in (0, 1), run.stdout + run.stderr
    proposal = load_machine_file(out / "machine.yaml")
    if Path("/etc/os-release").is_file() and shutil.which("getconf"):
        assert proposal.facts["os"]["spack_os"] and proposal.facts["os"]["glibc"]
        assert proposal.facts["os"]["source"].startswith("captured on ")
    after = commstack("machine", "check", str(out / "machine.yaml"))
    assert after.returncode == 0, after.stdout
    assert " 0 ✘ " in after.stdout.splitlines()[-1]


def test_capture_refuses_another_machine():
    out = commstack("machine", "capture", "betzy", "--no-spack")
    assert out.returncode == 5 and "NOT this machine" in out.stderr and not out.stdout


def test_verify_is_filled_in_and_unknown_to_check(tmp_path):
    """A VERIFY fact (no source says) is ? in check, with what the machine says; capture
    writes the measured value in its place."""
    folder = tmp_path / "local"
    shutil.copytree(SITES / "local", folder)
    text = (folder / "machine.yaml").read_text()
    for line in ("  name: Debian GNU/Linux 12 (bookworm)\n", "  spack_os: debian12\n",
                 '  glibc: "2.36"\n'):
        assert line in text
        text = text.replace(line, line.split(":")[0] + ": VERIFY\n", 1)
    (folder / "machine.yaml").write_text(text)
    machine = load_machine_file(folder / "machine.yaml")
    checks = {c.fact: c for c in check_machine(machine).checks}
    glibc = checks["os.glibc"]
    if glibc.measured is None:
        pytest.skip(f"skipped: glibc not readable here ({glibc.how})")
    assert glibc.verdict == "unknown" and glibc.how.startswith("declared VERIFY: getconf")
    readings = capture_readings(machine, None, use_spack=False)
    proposal = propose(machine, None, readings, Provenance("h", "2026-11-26 12:00 UTC"))
    proposed = yaml.safe_load(proposal.machine[1])["os"]
    assert proposed["glibc"] == glibc.measured and proposed["spack_os"] != "VERIFY"
    assert proposed["source"].startswith("captured on h 2026-11-26 12:00 UTC (")


def test_set_value_keeps_layout_and_refuses_what_it_cannot_place():
    text = ("a:\n  b: 1   # why\n  c: {d: 2}\nverify:\n  checks:\n"
            "    - {fact: x, probe: slurm_version, expect: \"22.05\", why: w}\n")
    edited = set_value(text, ("a", "b"), 3, "captured")
    assert edited.splitlines()[1] == "  b: 3  # captured" and edited.splitlines()[2:] == \
        text.splitlines()[2:]
    edited = set_value(text, ("verify", "checks", 0, "expect"), "23.11", "captured")
    assert yaml.safe_load(edited)["verify"]["checks"][0]["expect"] == "23.11"
    with pytest.raises(CannotPlace):
        set_value(text, ("a", "c", "d"), 5, "x")  # inside a flow mapping
    added = set_value(text, ("a", "e"), 5, "captured")  # a key the block lacks: its last line
    assert added.splitlines()[3] == "  e: 5  # captured" and yaml.safe_load(added)["a"]["e"] == 5
    with pytest.raises(CannotPlace):
        set_value(text, ("z", "e"), 5, "x")  # no such block


def test_scrub_removes_home_directories():
    home = str(Path.home())
    assert scrub(f"{home}/.cache/commstack/spack/bin/spack") == "~/.cache/commstack/spack/bin/spack"
    assert scrub("/home/alice/x and /home/bob") == "~/x and ~"



@pytest.mark.spack
@pytest.mark.slow
def test_spack_external_find_reads_the_stack_beside_the_committed_externals():
    """`spack external find` into a scratch scope: what Spack detects at the committed
    externals' prefixes, with the version it reads, beside packages.yaml's."""
    from tests import spack_support

    if spack_support.find_spack() is None:
        pytest.skip(spack_support.spack_skip_reason())
    if shutil.which("lstopo") is None:
        pytest.skip("skipped: no hwloc (lstopo) for Spack to detect")
    machine = load_machine_file(SITES / "local" / "machine.yaml")
    readings = [r for r in capture_readings(machine, SITES / "local" / "packages.yaml")
                if r.fact.startswith("external ") and " at " in r.fact
                or r.fact == "spack external find"]
    assert readings and all(r.read and r.command.startswith("spack external find --scope user")
                            for r in readings), [(r.fact, r.note) for r in readings]
    hwloc = next(r for r in readings if r.fact == "external hwloc at /usr: spack version")
    assert hwloc.committed == "2.9.0" and hwloc.value == "2.9.0" and not hwloc.differs
