"""srun steps get --cpus-per-task by NERSC's rule (docs.nersc.gov/jobs, cited in
site-configs/perlmutter/machine.yaml: ``-c`` = 2 x floor(128 / tasks per node) on 128-core SMT2
nodes), i.e. threads per core x floor(cores per node / ranks per node) from the machine's node
facts, or the point's ``cpus_per_task``. Plans are made as inside an allocation (SLURM_JOB_ID
set; `commstack plan` launches nothing); the slurm-marked test runs a real step on slurm-ci."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from textwrap import dedent
from typing import Dict

import pytest

from tests.conftest import REPO
from tests.sweeps import commstack, launcher_stand_ins


def _planned(tmp_path: Path, machine: str, ranks: str, extra: str = "") -> Dict[int, str]:
    """ranks per node -> the --cpus-per-task value of its srun step ('' when none)."""
    path = tmp_path / "matrices" / machine / "c.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(f"""
        benchmark: imb-mpi1
        stacks:
          m: {{flavour: mpich, bin: {launcher_stand_ins(tmp_path / "bin")}}}
        parameters: {{executable: "true"{extra}}}
        product:
          ranks_per_node: [{ranks}]
        """))
    out = commstack("plan", str(path), "--out", str(tmp_path / "results"),
                    env={**os.environ, "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "n1"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    found: Dict[int, str] = {}
    for head, command in zip(lines, lines[1:]):
        m = re.search(r"ranks_per_node=(\d+)", head)
        if m:
            assert " srun -v " in command, command
            c = re.search(r"--cpus-per-task=(\d+)", command)
            found[int(m.group(1))] = c.group(1) if c else ""
    return found


def test_perlmutter_follows_nersc_rule(tmp_path):
    # 2 x 64 cores, 2 threads each: 2 x floor(128 / k); beyond 128 ranks, floor(256 / k)
    assert _planned(tmp_path, "perlmutter", "1, 3, 4, 64, 100, 128, 200") == {
        1: "256", 3: "84", 4: "64", 64: "4", 100: "2", 128: "2", 200: "1"}


def test_smt_off_machine_gives_whole_cores(tmp_path):
    assert _planned(tmp_path, "bm-optimized3-36", "1, 2, 5, 36") == {
        1: "36", 2: "18", 5: "7", 36: "1"}


def test_the_point_overrides_the_rule(tmp_path):
    assert _planned(tmp_path, "perlmutter", "4, 8", ", cpus_per_task: 3") == {4: "3", 8: "3"}


def test_a_bad_cpus_per_task_is_refused_before_launch(tmp_path):
    path = tmp_path / "matrices" / "perlmutter" / "bad.yaml"
    path.parent.mkdir(parents=True)
    bin_dir = launcher_stand_ins(tmp_path / "bin")
    path.write_text(f"benchmark: imb-mpi1\nstacks:\n  m: {{flavour: mpich, bin: {bin_dir}}}\n"
                    "parameters: {executable: 'true', cpus_per_task: 0}\n")
    out = commstack("plan", str(path), env={**os.environ, "SLURM_JOB_ID": "4242"})
    assert out.returncode == 2 and "cpus_per_task" in out.stderr
    assert "a positive integer" in out.stderr


@pytest.mark.slurm
def test_a_real_step_gets_the_cpus_per_task(cluster, tmp_path):
    """The srun argv commstack builds for slurm-ci (1 socket x 2 cores): 1 rank per node of an
    exclusive job gets -c 2, and the step's task sees SLURM_CPUS_PER_TASK=2; in a job holding one
    CPU per node, -c 1."""
    script = tmp_path / "step.py"
    script.write_text(dedent(f"""
        import subprocess, sys
        sys.path.insert(0, {str(REPO / "src")!r})
        from commstack.benchmarks import registry
        from commstack.schedulers.slurm import SlurmAllocation as Allocation
        from commstack.schedulers.slurm_step import srun_command
        from commstack.launch.stack import resolve
        from commstack.machine import load_machine_file
        from commstack.matrix.model import Point, Stack
        machine = load_machine_file({str(REPO / "site-configs" / "slurm-ci" / "machine.yaml")!r})
        bench = registry.get("imb-mpi1")
        stack = resolve(Stack("m", "mpich", bin="/bin"))
        point = Point(bench.name, (("stack", "m"), ("nodes", 1), ("ranks_per_node", 1),
                                   ("executable", "true")))
        cmd = srun_command(point, bench, stack, machine, Allocation.from_environment())
        argv = cmd.argv[:cmd.argv.index(cmd.executable)]
        argv = [a for a in argv if not a.startswith("--mpi=")]
        print(" ".join(argv), flush=True)
        sys.exit(subprocess.run(argv + ["sh", "-c",
            "echo CPT=$SLURM_CPUS_PER_TASK; grep Cpus_allowed_list /proc/self/status"]).returncode)
        """))
    out = subprocess.run(["salloc", "-N1", "--exclusive", "-t", "5", "python3", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "--cpus-per-task=2" in out.stdout.splitlines()[0]
    assert "CPT=2" in out.stdout, out.stdout
    # A job that is not exclusive holds one CPU of the node here: -c follows the allocation
    # (SLURM_JOB_CPUS_PER_NODE), so the step still starts instead of "More processors requested".
    out = subprocess.run(["salloc", "-N1", "-n1", "-t", "5", "python3", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "--cpus-per-task=1" in out.stdout.splitlines()[0] and "CPT=1" in out.stdout
