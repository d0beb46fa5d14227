"""`commstack machine capture slurm-ci` on the Slurm test cluster, inside an allocation: the
proposal checks clean there; a site config with wrong facts shows each change in the diff."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slurm]

REPO = Path(__file__).resolve().parents[1]
COMMSTACK = [sys.executable, "-m", "commstack", "machine"]


def in_allocation(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["salloc", "-p", "debug", "-N1", "--exclusive", "-t", "5",
                           "srun", "-N1", "-n1", *COMMSTACK, *args],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_capture_then_check_agrees_inside_an_allocation(cluster, tmp_path):
    out = tmp_path / "proposal"
    run = in_allocation("capture", "slurm-ci", "--no-spack", "--out", str(out))
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert "captured on n" in run.stdout.splitlines()[0]  # read on a compute node
    prov = yaml.safe_load((out / "provenance.yaml").read_text())
    rows = {r["fact"]: r for r in prov["readings"]}
    assert rows["slurm.version"]["captured"].startswith("22.05")
    assert "pmix" in rows["slurm.mpi_plugins"]["captured"]
    assert rows["launchers.openmpi: srun --mpi=pmix"]["captured"] is True
    assert rows["node.cores_per_socket"]["command"].startswith("lstopo")
    check = in_allocation("check", str(out / "machine.yaml"))
    assert check.returncode == 0, check.stdout + check.stderr
    assert " 0 ✘ " in check.stdout.splitlines()[-1] and " 0 ? " in check.stdout.splitlines()[-1]


def test_capture_on_a_changed_machine_shows_the_change(cluster, tmp_path):
    folder = tmp_path / "slurm-ci"
    shutil.copytree(REPO / "site-configs" / "slurm-ci", folder)
    machine = folder / "machine.yaml"
    text = machine.read_text()
    text = text.replace('expect: "22.05"', 'expect: "23.11"').replace("threads_per_core: 1",
                                                                      "threads_per_core: 2")
    machine.write_text(text)
    before = in_allocation("check", str(machine))
    assert before.returncode == 1, before.stdout + before.stderr
    out = tmp_path / "proposal"
    run = in_allocation("capture", str(machine), "--no-spack", "--out", str(out))
    assert run.returncode == 1, run.stdout + run.stderr
    diff = (out / "capture.diff").read_text()
    assert "-  threads_per_core: 2\n" in diff and "+  threads_per_core: 1  # captured on n" in diff
    changed = [line for line in diff.splitlines() if line.startswith("+")
               and "probe: slurm_version" in line]
    assert len(changed) == 1 and 'expect: 22.05.8' in changed[0].replace("'", "") \
        and "srun --version (was '23.11')" in changed[0]
    check = in_allocation("check", str(out / "machine.yaml"))
    assert check.returncode == 0, check.stdout + check.stderr
