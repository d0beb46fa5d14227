"""A campaign's jobs under Slurm: the sbatch script (a job, or an array whose tasks take every
N-th point), sbatch, and the jobs' states from squeue and from sacct's accounting."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict, List

from commstack.schedulers.base import JobOptions, JobRequest, SubmitError, job_script
from commstack.store.campaign import Campaign


def batch_script(request: JobRequest, run_args: List[str], options: JobOptions,
                 campaign: Campaign, workdir: Path) -> str:
    name = f"cs-{campaign.name}-N{request.nodes}" + (f"-r{request.repeat}" if request.repeat else "")
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --nodes={request.nodes}",
             f"#SBATCH --ntasks-per-node={request.tasks_per_node}", "#SBATCH --exclusive",
             f"#SBATCH --output={campaign.root.resolve()}/jobs/%x-%j.out"]
    if request.shards > 1:
        lines[-1] = f"#SBATCH --output={campaign.root.resolve()}/jobs/%x-%A_%a.out"
        lines.append(f"#SBATCH --array=0-{request.shards - 1}")
    for flag, value in (("time", options.time), ("partition", options.partition),
                        ("account", options.account), ("qos", options.qos),
                        ("constraint", options.constraint)):
        if value:
            lines.append(f"#SBATCH --{flag}={value}")
    lines += [f"#SBATCH {extra}" for extra in options.extra]
    return job_script(lines, request, run_args, workdir, "SLURM_ARRAY_TASK_ID")


def sbatch(path: Path) -> str:
    proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise SubmitError(f"sbatch {path} failed: {proc.stderr.strip()}")
    return proc.stdout.strip().split(";")[0]


def queue_states(job_ids: List[str]) -> Dict[str, str]:
    """State of each job (array tasks folded into their job) still known to squeue."""
    if not job_ids:
        return {}
    proc = subprocess.run(["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i %T"],
                          capture_output=True, text=True, timeout=60)
    states: Dict[str, str] = {}
    for line in proc.stdout.splitlines():
        job, state = line.split()
        base = job.split("_")[0]
        if base in job_ids and states.get(base) != "RUNNING":
            states[base] = state
    return states


def finished_states(job_ids: List[str]) -> Dict[str, str]:
    """Final state from sacct where accounting is available (empty otherwise)."""
    if not job_ids:
        return {}
    try:
        proc = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(job_ids), "-o",
                               "JobID,State"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    states = {}
    for line in proc.stdout.splitlines():
        if "|" in line:
            job, state = line.split("|", 1)
            states.setdefault(job.split("_")[0], state.split()[0])
    return states


def scancel(job_ids: List[str]) -> None:
    if job_ids:
        subprocess.run(["scancel", *job_ids], capture_output=True, text=True, timeout=60)
