"""Submitting a sweep to Slurm: one batch job per node-count group, or job arrays, or, when
repeats are taken across jobs, one job per node-count group and repeat.

Each job runs `commstack run` on the same matrix and campaign (restricted with --nodes and, for
arrays, --shard; for repeats across jobs, --repeat), so every job resumes where the campaign
stands and concurrent jobs share work safely (attempts are claimed under locks). Submitted job
ids are logged in <campaign>/jobs/.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from commstack.adaptive import adaptive_states
from commstack.machine import Machine
from commstack.store.campaign import DONE, FAILED, Campaign
from commstack.store.files import write_new


class SubmitError(RuntimeError):
    """sbatch failed or the campaign already has jobs in the queue."""


@dataclass
class JobRequest:
    nodes: int
    tasks_per_node: int
    runs: int  # (point, repeat) pairs this job has to do
    points: int = 0  # points with work left
    shards: int = 1  # array tasks (each takes every shards-th point); 1 means a plain job
    repeat: Optional[int] = None  # the one repeat this job takes (repeats across jobs)

    @property
    def key(self) -> Tuple[int, Optional[int]]:
        return self.nodes, self.repeat


@dataclass
class SbatchOptions:
    time: Optional[str] = None
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    constraint: Optional[str] = None
    extra: tuple = ()

    @classmethod
    def from_machine(cls, machine: Optional[Machine], **overrides: Optional[str]) -> "SbatchOptions":
        sched = machine.scheduler if machine else {}
        values = {k: overrides.get(k) or sched.get(key) for k, key in (
            ("time", "time_limit"), ("partition", "partition"), ("account", "account"),
            ("qos", "qos"), ("constraint", "constraint"))}
        return cls(**values, extra=tuple(sched.get("extra_sbatch", ())))


def pending_work(campaign: Campaign, points: List, repeats: int, retry_failed: bool,
                 per_repeat: bool = False, matrix=None
                 ) -> Dict[Tuple[int, Optional[int]], JobRequest]:
    """Per node count (and, with ``per_repeat``, per repeat): how many runs are not done yet and
    the most tasks per node needed. With adaptive repeats (``matrix.adaptive``) a point counts
    the runs of its rounds decided so far (a job may take more rounds), none once it stopped."""
    groups: Dict[Tuple[int, Optional[int]], JobRequest] = {}
    for point in points:
        nodes = int(point.get("nodes", 1))
        if matrix is not None and matrix.adaptive is not None:
            states = adaptive_states(campaign, point, matrix, campaign.state)[0]
        else:
            states = [campaign.state(point.id, repeat) for repeat in range(1, repeats + 1)]
        todo = [repeat for repeat, state in enumerate(states, 1)
                if _needs_run(state, retry_failed)]
        for repeat in (todo if per_repeat else [None] if todo else []):
            group = groups.setdefault((nodes, repeat), JobRequest(nodes, 0, 0, repeat=repeat))
            group.runs += 1 if per_repeat else len(todo)
            group.points += 1
            group.tasks_per_node = max(group.tasks_per_node, int(point.get("ranks_per_node", 2)))
    return groups


def _needs_run(state: Optional[str], retry_failed: bool) -> bool:
    return not (state == DONE or (state == FAILED and not retry_failed))


def batch_script(request: JobRequest, run_args: List[str], options: SbatchOptions,
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
    args = list(run_args) + ["--nodes", str(request.nodes)]
    if request.repeat is not None:
        args += ["--repeat", str(request.repeat)]
    shard = ' --shard "${SLURM_ARRAY_TASK_ID}/' + str(request.shards) + '"' if request.shards > 1 else ""
    lines += [
        "# Written by `commstack submit`; runs the sweep's points for this node count"
        + (f", repeat {request.repeat} of each." if request.repeat else "."),
        "set -euo pipefail",
        f"cd {shlex.quote(str(workdir))}",
        f"exec {shlex.quote(sys.executable)} -m commstack run {' '.join(map(shlex.quote, args))}{shard}",
    ]
    return "\n".join(lines) + "\n"


def submit(script: str, campaign: Campaign, request: JobRequest) -> str:
    jobs = campaign.root / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    repeat = f"-r{request.repeat}" if request.repeat else ""
    path = jobs / f"{stamp}-N{request.nodes}{repeat}-{time.time_ns() % 10**6:06d}.sbatch"
    write_new(path, script.encode())
    proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise SubmitError(f"sbatch {path} failed: {proc.stderr.strip()}")
    job_id = proc.stdout.strip().split(";")[0]
    with open(jobs / "submitted.jsonl", "a") as log:
        log.write(json.dumps({"job_id": job_id, "nodes": request.nodes, "runs": request.runs,
                              "array": request.shards, "repeat": request.repeat,
                              "script": path.name,
                              "submitted": time.time()}) + "\n")
    return job_id


def submitted_jobs(campaign: Campaign) -> List[dict]:
    path = campaign.root / "jobs" / "submitted.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


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
