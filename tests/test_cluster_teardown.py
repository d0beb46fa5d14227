"""Must show: tests/cluster/slurm-down.sh stops every daemon slurm-up.sh started (slurmd nodes,
slurmctld, and munged when slurm-up.sh started it) and leaves a munged it did not start alone."""

from __future__ import annotations

import subprocess
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


def test_teardown_stops_every_daemon_the_setup_started():
    reason = slurm_cluster.skip_reason()
    if reason:
        pytest.skip(reason)
    if _running("slurmctld") or _running("slurmd"):
        pytest.skip("skipped: a Slurm cluster is up (maybe in use by other tests); its teardown "
                    "is tested only when this test brings it up")
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
