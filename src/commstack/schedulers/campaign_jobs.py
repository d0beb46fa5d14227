"""A campaign as batch jobs, whichever scheduler runs them: one job per node-count group, or job
arrays, or, when repeats are taken across jobs, one job per node-count group and repeat.

Each job runs `commstack run` on the same matrix and campaign (restricted with --nodes and, for
arrays, --shard; for repeats across jobs, --repeat), so every job resumes where the campaign
stands and concurrent jobs share work safely (attempts are claimed under locks). Submitted job
ids are logged in <campaign>/jobs/submitted.jsonl with the scheduler that took them.
"""

from __future__ import annotations

import json
import time
from typing import Dict, List, Optional, Tuple

from commstack.adaptive import adaptive_states
from commstack.schedulers import registry
from commstack.schedulers.base import JobRequest, Scheduler
from commstack.store.campaign import DONE, FAILED, Campaign
from commstack.store.files import write_new


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


def submit(scheduler: Scheduler, script: str, campaign: Campaign, request: JobRequest) -> str:
    """Write the job's script into <campaign>/jobs/, submit it and log its job id."""
    jobs = campaign.root / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    repeat = f"-r{request.repeat}" if request.repeat else ""
    path = jobs / (f"{stamp}-N{request.nodes}{repeat}-{time.time_ns() % 10**6:06d}"
                   f"{scheduler.script_suffix}")
    write_new(path, script.encode())
    job_id = scheduler.submit_script(path)
    with open(jobs / "submitted.jsonl", "a") as log:
        log.write(json.dumps({"job_id": job_id, "scheduler": scheduler.name,
                              "nodes": request.nodes, "runs": request.runs,
                              "array": request.shards, "repeat": request.repeat,
                              "script": path.name,
                              "submitted": time.time()}) + "\n")
    return job_id


def submitted_jobs(campaign: Campaign) -> List[dict]:
    path = campaign.root / "jobs" / "submitted.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scheduler_of(job: dict) -> Scheduler:
    """The scheduler that took a logged job (entries logged before the log named one: the
    default scheduler's, Slurm's)."""
    return registry.schedulers().get(job.get("scheduler") or "") or registry.default()


def by_scheduler(jobs: List[dict]) -> List[Tuple[Scheduler, List[str]]]:
    """The logged jobs' ids grouped by the scheduler that took them, in the log's order."""
    groups: Dict[str, Tuple[Scheduler, List[str]]] = {}
    for job in jobs:
        scheduler = scheduler_of(job)
        groups.setdefault(scheduler.name, (scheduler, []))[1].append(job["job_id"])
    return list(groups.values())
