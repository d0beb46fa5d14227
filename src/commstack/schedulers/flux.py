"""Flux behind the scheduler seam: the instance this process runs in (FLUX_URI: inside
``flux alloc``, ``flux batch`` or ``flux start``), its resources and deadline from its R
(``flux kvs get resource.R``, RFC 20), points as jobs of it by ``flux run`` (flux_step), a
campaign's jobs by ``flux batch``, their states by ``flux jobs`` and ``flux cancel``
(flux_jobs), and what ``flux run -v`` and the job shell say of a job.

The allocation's job id is the instance's own (``flux getattr jobid``: the job of the enclosing
instance that ``flux alloc`` or ``flux batch`` made); a ``flux start`` instance has none. Each
point's ``flux run`` is a job of the instance: the record's step id.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional

from commstack.launch.command import LaunchCommand
from commstack.launch.spec import LaunchSpec
from commstack.placement.reports import flux as affinity_report
from commstack.schedulers import flux_jobs, flux_step
from commstack.schedulers.allocation import Allocation
from commstack.schedulers.base import JobOptions, JobRequest, Scheduler
from commstack.store.campaign import Campaign

NAME = "flux"
MAX_R_BYTES = 1 << 20  # an instance's R: a few hundred bytes per run of like nodes


class FluxAllocation(Allocation):
    """A Flux instance: its job, nodes, deadline and cores per node."""

    scheduler = NAME

    @classmethod
    def from_environment(cls) -> Optional["FluxAllocation"]:
        if not os.environ.get("FLUX_URI"):
            return None
        try:
            job = flux_jobs.flux("getattr", "jobid", timeout=30)
            r = flux_jobs.flux("kvs", "get", "resource.R", timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None  # FLUX_URI names an instance this process cannot reach
        job_id = flux_jobs.ascii_id(job.stdout.strip()) if job.returncode == 0 else ""
        nodes, cpus, deadline = resources(r.stdout[:MAX_R_BYTES] if r.returncode == 0 else "")
        return cls(job_id, nodes, None, deadline, cpus)


def resources(text: str) -> tuple:
    """(node names, fewest cores on a node, deadline) of an R (RFC 20) as JSON text; what it
    does not say is empty or None."""
    try:
        data: Any = json.loads(text) if text.strip() else {}
    except ValueError:
        return [], None, None
    execution = data.get("execution") if isinstance(data, dict) else None
    if not isinstance(execution, dict):
        return [], None, None
    nodes: List[str] = []
    for names in execution.get("nodelist") or []:
        nodes += _expand(str(names))
    cores = [_count(entry.get("children", {}).get("core", ""))
             for entry in execution.get("R_lite") or [] if isinstance(entry, dict)]
    expiration = execution.get("expiration")
    deadline = float(expiration) if isinstance(expiration, (int, float)) and expiration > 0 else None
    return nodes, min(cores) if cores and min(cores) > 0 else None, deadline


def _expand(hostlist_text: str) -> List[str]:
    """Flux's hostlists are Slurm's syntax ("n[1-3]"); one name per broker rank, repeated where
    brokers share a host ("vm,vm" in a test instance): python-hostlist reads them."""
    try:
        import hostlist  # python-hostlist

        return list(hostlist.expand_hostlist(hostlist_text, allow_duplicates=True))
    except (ImportError, ValueError):
        return hostlist_text.split(",")


def _count(idset: str) -> int:
    """Members of an RFC 22 idset ("0-3,7")."""
    total = 0
    for part in str(idset).split(","):
        first, _, last = part.partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            total += int(last or first) - int(first) + 1
    return total


_JOB_ID = re.compile(r"^jobid: (\S+)$", re.M)
# flux run's own errors when its instance is gone (the allocation cancelled or timed out): it
# loses its broker connection, or the job gets the instance's shutdown exception.
_INSTANCE_GONE = re.compile(
    r"flux-(?:run|job): .*(?:Connection reset by peer|Broken pipe|Connection refused|"
    r"lost contact|Unable to connect)|job\.exception .*(?:type=cancel|shutdown)|"
    r"broker shutdown|instance shutdown", re.I)


def allocation_lost(stderr_text: str) -> bool:
    """flux run failed because its instance no longer exists: its own error says so and the
    instance does not answer."""
    if not _INSTANCE_GONE.search(stderr_text):
        return False
    try:
        return flux_jobs.flux("getattr", "rank", timeout=30).returncode != 0
    except (OSError, subprocess.TimeoutExpired):
        return True


def step_provenance(stderr_text: str) -> Dict[str, object]:
    """The job id ``flux run -v`` printed, and how many of the job's nodes (job shells)
    reported their tasks' affinity."""
    found = _JOB_ID.search(stderr_text)
    try:
        shells = {b.node for b in affinity_report(stderr_text)[0]}
    except ValueError:  # a damaged report: the placement check says so, not the record's step
        shells = set()
    return {"step_id": flux_jobs.ascii_id(found.group(1)) if found else None,
            "shells": len(shells)}


def job_nodes(job_id: str) -> List[str]:
    """The node names of a job of this instance, from its R (``flux job info <id> R``)."""
    try:
        proc = flux_jobs.flux("job", "info", job_id, "R", timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return resources(proc.stdout[:MAX_R_BYTES])[0] if proc.returncode == 0 else []


def _arg(argv: List[str], flag: str) -> Optional[str]:
    return argv[argv.index(flag) + 1] if flag in argv else None


class Flux(Scheduler):
    name = NAME
    label = "Flux"
    step_launcher = flux_step.FLUX
    script_suffix = ".flux"
    extra_options_key = "extra_flux"

    def allocation(self) -> Optional[Allocation]:
        return FluxAllocation.from_environment()

    def step(self, spec: LaunchSpec) -> LaunchCommand:
        return flux_step.flux_run(spec)

    def allocate(self, nodes: int, minutes: str, command: List[str]) -> List[str]:
        return ["flux", "alloc", "-N", str(nodes), "--exclusive", "-t", f"{minutes}m", *command]

    def allocation_lost(self, stderr_text: str, job_id: Optional[str] = None) -> bool:
        return allocation_lost(stderr_text)

    def step_record(self, allocation: Allocation, command: LaunchCommand, stderr_text: str
                    ) -> Dict[str, object]:
        """The instance's job, the point's job in it and the nodes that job held (its R)."""
        step = step_provenance(stderr_text)
        nodes = int(_arg(command.argv, "-N") or 1)
        return {"job_id": allocation.job_id or None, "step_id": step["step_id"],
                "nodes": job_nodes(str(step["step_id"])) if step["step_id"] else [],
                "allocation_nodes": allocation.nodes,
                "tasks_per_node": command.ranks // max(1, nodes),
                "partition": allocation.partition}

    def batch_script(self, request: JobRequest, run_args: List[str], options: JobOptions,
                     campaign: Campaign, workdir: Path) -> str:
        return flux_jobs.batch_script(request, run_args, options, campaign, workdir)

    def submit_script(self, path: Path) -> str:
        return flux_jobs.submit(path)

    def queue_states(self, job_ids: List[str]) -> Dict[str, str]:
        return flux_jobs.queue_states(job_ids)

    def finished_states(self, job_ids: List[str]) -> Dict[str, str]:
        return flux_jobs.finished_states(job_ids)

    def cancel(self, job_ids: List[str]) -> None:
        flux_jobs.cancel(job_ids)


SCHEDULER = Flux()
