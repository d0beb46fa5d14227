"""Must show: tests/cluster/slurm-down.sh stops every daemon slurm-up.sh started (slurmd nodes,
slurmctld, and munged when slurm-up.sh started it) and leaves a munged it did not start alone."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Set

import pytest

from tests import slurm_cluster

pytestmark = pytest.mark.slurm

DAEMONS = ("munged", "slurmctld", "slurmd")


def _running(name: str) -> Set[int]:
    """PIDs of live (not zombie) processes called `name`."""
    out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.split()
    pids = set()
    for pid in map(int, out):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            pids.add(pid)
    return pids


def _skip_unless_down(why: str) -> None:
    """These tests start and stop the cluster themselves: not while one is up (maybe in use)."""
    reason = slurm_cluster.skip_reason()
    if reason:
        pytest.skip(reason)
    if _running("slurmctld") or _running("slurmd"):
        pytest.skip(f"skipped: a Slurm cluster is up (maybe in use by other tests); {why}")


def test_teardown_stops_every_daemon_the_setup_started():
    _skip_unless_down("its teardown is tested only when this test brings it up")
    before = {name: _running(name) for name in DAEMONS}
    slurm_cluster.bring_up()
    try:
        started = {name: _running(name) - before[name] for name in DAEMONS}
    finally:
        slurm_cluster.tear_down()
    assert len(started["slurmd"]) == len(slurm_cluster.NODES) and started["slurmctld"]
    assert before["munged"] or started["munged"]  # the set-up needs a munged
    left = {name: _running(name) & pids for name, pids in started.items()}
    assert left == {name: set() for name in DAEMONS}
    assert before["munged"] <= _running("munged")  # one the set-up did not start stays


def test_a_cluster_lost_mid_job_comes_back_idle():
    """slurmctld killed while a job runs: the teardown still stops the job's processes (they
    would keep a node's namespace alive) and the next set-up starts with idle nodes, not nodes
    still allocated to the lost job."""
    _skip_unless_down("this test kills its controller, so it runs only on a cluster it brings up")
    slurm_cluster.bring_up()
    try:
        marker = "sleep 3017"  # a duration no other process here uses
        job = subprocess.run(["sbatch", "--parsable", "-N3", "--output=/dev/null",
                              "--wrap", marker],
                             capture_output=True, text=True, check=True).stdout.strip()
        for _ in range(100):
            if subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"job {job} did not start")
        ctl = int(Path("/run/slurm/slurmctld.pid").read_text())
        subprocess.run(["kill", "-KILL", str(ctl)], check=True)
        slurm_cluster.tear_down()
        assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1
        slurm_cluster.bring_up()
        states = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True,
                                text=True).stdout.split()
        assert states == ["idle"] * len(slurm_cluster.NODES)
    finally:
        slurm_cluster.tear_down()
