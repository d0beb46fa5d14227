"""`commstack machine check slurm-ci` on the Slurm test cluster: inside an allocation (hwloc on
the node) and on the login node (Slurm's node record), and an srun plugin that is absent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slurm]

REPO = Path(__file__).resolve().parents[1]
CHECK = [sys.executable, "-m", "commstack", "machine", "check"]


def in_allocation(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["salloc", "-p", "debug", "-N1", "--exclusive", "-t", "5",
                           "srun", "-N1", "-n1", *CHECK, *args],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_slurm_ci_all_agreed_inside_an_allocation(cluster):
    out = in_allocation("slurm-ci", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data["this_machine"] and "Slurm cluster ci" in data["identity"]
    checks = {c["fact"]: c for c in data["checks"]}
    assert all(c["verdict"] == "ok" for c in checks.values()), [
        (c["fact"], c["how"]) for c in checks.values() if c["verdict"] != "ok"]
    assert "lstopo" in checks["node.cores_per_socket"]["how"]  # read on the node
    assert checks["launchers.openmpi: srun --mpi=pmix"]["measured"][:1]  # srun --mpi=list read
    assert checks["launchers.intelmpi.env.I_MPI_PMI_LIBRARY"]["measured"] is True


def test_slurm_ci_on_the_login_node_reads_slurms_node_record(cluster):
    out = subprocess.run([*CHECK, "slurm-ci"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("node.sockets"))
    assert " ✔ " in row and "scontrol show node" in row


def test_absent_srun_plugin_is_a_cross(cluster, tmp_path):
    folder = tmp_path / "slurm-ci"
    shutil.copytree(REPO / "site-configs" / "slurm-ci", folder)
    facts = yaml.safe_load((folder / "machine.yaml").read_text())
    facts["launchers"]["openmpi"]["args"] = ["--mpi=pmix_v9"]
    (folder / "machine.yaml").write_text(yaml.safe_dump(facts, sort_keys=False))
    out = in_allocation(str(folder / "machine.yaml"))
    assert out.returncode == 1, out.stdout + out.stderr
    row = next(line for line in out.stdout.splitlines()
               if line.startswith("launchers.openmpi: srun --mpi=pmix_v9"))
    assert " ✘ " in row and "machine.yaml says pmix_v9, srun --mpi=list says" in row
    assert "pmix_v4" in row  # what the machine has instead
    others = [line for line in out.stdout.splitlines()[2:-1] if " ✘ " in line and line != row]
    assert not others
