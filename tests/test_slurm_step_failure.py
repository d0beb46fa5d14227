"""Must show: a point whose task fails inside a live allocation is that point's failure. srun
(--kill-on-bad-exit) then cancels the step's other tasks and prints the same "STEP ... CANCELLED"
line as when the allocation ends; the sweep asks the queue, records `crash`, and goes on with the
next point instead of stopping as if the allocation were gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from tests.sweeps import commstack, records

pytestmark = pytest.mark.slurm


def test_a_failing_task_is_the_points_crash_not_a_lost_allocation(cluster, tmp_path: Path):
    bin_dir = tmp_path / "bin"  # not launcher_stand_ins: srun must stay the real one
    bin_dir.mkdir()
    fails = bin_dir / "rank0-fails"
    # The other ranks ignore SIGTERM, as MPI processes busy in a collective do: slurmstepd
    # then kills them, and where a rank of the failed one's node is left it prints
    # "*** STEP ... CANCELLED AT ..." (two ranks per node).
    fails.write_text('#!/bin/sh\n[ "$SLURM_PROCID" = 0 ] && exit 53\ntrap "" TERM\nexec sleep 30\n')
    fails.chmod(0o755)
    matrix = tmp_path / "matrices" / "slurm-ci" / "m.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(dedent(f"""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 60
        stacks:
          # srun launches under an allocation; the local launcher is never used.
          m: {{flavour: mpich, bin: {bin_dir}, launcher: /bin/true}}
        parameters: {{nodes: 2, ranks_per_node: 2}}
        product:
          executable: [{fails}, {sys.executable}]
        """))
    run = subprocess.run(["salloc", "-N2", "--exclusive", "-t", "5", sys.executable, "-m",
                          "commstack", "run", str(matrix), "--out", str(tmp_path / "r")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=dict(os.environ))
    assert "interrupted" not in run.stderr, run.stderr[-2000:]
    by_exe = {Path(r["params"]["executable"]).name: r for r in records(tmp_path / "r" / "slurm-ci" / "m")}
    failed = by_exe["rank0-fails"]
    assert failed["status"] == "crash" and failed["exit_code"] != 0
    assert "the Slurm allocation ended under this run" not in failed["notes"]
    stderr = (tmp_path / "r" / "slurm-ci" / "m" / "points" / failed["point_id"])
    assert any("CANCELLED AT" in p.read_text() for p in stderr.glob("rep1.try1/stderr*"))
    # The next point ran in the same allocation (python without arguments exits 0 on empty
    # stdin; its output does not parse as IMB, which is not what this test is about).
    assert Path(sys.executable).name in by_exe
    assert commstack("status", str(tmp_path / "r" / "slurm-ci" / "m")).returncode in (0, 3)
