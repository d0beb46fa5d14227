"""Slurm behind the scheduler seam: the allocation (SLURM_JOB_ID and its neighbours, the
deadline from squeue), steps by srun (slurm_step), jobs by sbatch, their states by squeue and
sacct (slurm_jobs), and what srun's output says of a step."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

from commstack.launch.command import LaunchCommand
from commstack.launch.spec import LaunchSpec
from commstack.schedulers import slurm_jobs, slurm_step
from commstack.schedulers.allocation import Allocation
from commstack.schedulers.base import JobOptions, JobRequest, Scheduler
from commstack.store.campaign import Campaign

NAME = "slurm"
_TIME_LEFT = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


class SlurmAllocation(Allocation):
    """An allocation of Slurm's."""

    scheduler = NAME

    @classmethod
    def from_environment(cls) -> Optional["SlurmAllocation"]:
        job = os.environ.get("SLURM_JOB_ID")
        if not job:
            return None
        nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
        return cls(job, expand_nodelist(nodelist), os.environ.get("SLURM_JOB_PARTITION"),
                   _deadline(job), fewest_cpus(os.environ.get("SLURM_JOB_CPUS_PER_NODE", "")))


def fewest_cpus(cpus_per_node: str) -> Optional[int]:
    """SLURM_JOB_CPUS_PER_NODE ("2(x3),1", as sbatch documents it) -> its smallest count."""
    counts = [int(m) for m in re.findall(r"(\d+)(?:\(x\d+\))?", cpus_per_node)]
    return min(counts) if counts else None


def expand_nodelist(nodelist: str) -> List[str]:
    """n[1-3],m5 -> [n1, n2, n3, m5] (python-hostlist when installed, else scontrol)."""
    if not nodelist:
        return []
    try:
        import hostlist  # python-hostlist

        return list(hostlist.expand_hostlist(nodelist))
    except ImportError:
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                             text=True, timeout=30)
        return out.stdout.split()


def _deadline(job: str) -> Optional[float]:
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%L"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _TIME_LEFT.match(out)
    if not m:
        return None  # UNLIMITED, NOT_SET or unknown
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return time.time() + ((days * 24 + hours) * 60 + minutes) * 60 + seconds


_ALLOCATION_GONE = re.compile(
    r"Expired or invalid job|Job/step already completing or completed|"
    r"job allocation \d+ has been revoked|Invalid job id specified|Job step aborted|"
    r"\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED AT", re.I)


def allocation_lost(stderr_text: str, job_id: Optional[str] = None) -> bool:
    """srun failed because the allocation no longer exists (cancelled, timed out, revoked).

    A step srun cancels itself (--kill-on-bad-exit after a task failed) prints the same
    "STEP ... CANCELLED" line, so with ``job_id`` the queue decides: a job still running has
    not lost its allocation, and the failure is the point's own."""
    if not _ALLOCATION_GONE.search(stderr_text):
        return False
    return job_id is None or not _still_running(job_id)


def _still_running(job_id: str) -> bool:
    try:
        out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True,
                             text=True, timeout=30).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "RUNNING" in out


_LAUNCH = re.compile(r"launching StepId=(\d+)\.(\d+) on host (\S+?),", re.M)


def step_provenance(stderr_text: str) -> Dict[str, object]:
    """Job id, step id and the step's nodes, from the lines `srun -v` prints per node."""
    launches = _LAUNCH.findall(stderr_text)
    nodes = list(dict.fromkeys(host for _, _, host in launches))
    return {
        "job_id": launches[0][0] if launches else None,
        "step_id": launches[0][1] if launches else None,
        "nodes": nodes,
    }


def _arg(argv: List[str], flag: str) -> Optional[str]:
    return argv[argv.index(flag) + 1] if flag in argv else None


class Slurm(Scheduler):
    name = NAME
    label = "Slurm"
    default = True  # commstack ran only under Slurm before the seam
    step_launcher = slurm_step.SRUN
    script_suffix = ".sbatch"
    extra_options_key = "extra_sbatch"

    def allocation(self) -> Optional[Allocation]:
        return SlurmAllocation.from_environment()

    def step(self, spec: LaunchSpec) -> LaunchCommand:
        return slurm_step.srun(spec)

    def allocate(self, nodes: int, minutes: str, command: List[str]) -> List[str]:
        return ["salloc", f"--nodes={nodes}", "--exclusive", f"--time={minutes}", *command]

    def allocation_lost(self, stderr_text: str, job_id: Optional[str] = None) -> bool:
        return allocation_lost(stderr_text, job_id)

    def step_record(self, allocation: Allocation, command: LaunchCommand, stderr_text: str
                    ) -> Dict[str, object]:
        """Where the run's job step ran, from srun's own output and the allocation."""
        step = step_provenance(stderr_text)
        return {"job_id": step["job_id"] or allocation.job_id, "step_id": step["step_id"],
                "nodes": step["nodes"], "allocation_nodes": allocation.nodes,
                "tasks_per_node": command.ranks // max(1, int(_arg(command.argv, "-N") or 1)),
                "partition": allocation.partition}

    def batch_script(self, request: JobRequest, run_args: List[str], options: JobOptions,
                     campaign: Campaign, workdir: Path) -> str:
        return slurm_jobs.batch_script(request, run_args, options, campaign, workdir)

    def submit_script(self, path: Path) -> str:
        return slurm_jobs.sbatch(path)

    def queue_states(self, job_ids: List[str]) -> Dict[str, str]:
        return slurm_jobs.queue_states(job_ids)

    def finished_states(self, job_ids: List[str]) -> Dict[str, str]:
        return slurm_jobs.finished_states(job_ids)

    def cancel(self, job_ids: List[str]) -> None:
        slurm_jobs.scancel(job_ids)


SCHEDULER = Slurm()
