"""What commstack asks of a batch scheduler (docs/reference/schedulers.md): the allocation it
runs in, a point as one step of it, where the step ran and whether the allocation ended under
it, a campaign as batch jobs or arrays, their states in the queue and in accounting."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from commstack.launch.command import LaunchCommand
from commstack.launch.spec import LaunchSpec
from commstack.machine import Machine
from commstack.schedulers.allocation import Allocation
from commstack.store.campaign import Campaign


class SubmitError(RuntimeError):
    """The scheduler refused a job or the campaign already has jobs in the queue."""


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
class JobOptions:
    time: Optional[str] = None
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    constraint: Optional[str] = None
    extra: tuple = ()  # the scheduler's own lines, as machine.yaml gives them


def job_script(directives: List[str], request: JobRequest, run_args: List[str], workdir: Path,
               array_index: str) -> str:
    """A batch script: the scheduler's ``directives``, then ``commstack run`` with ``run_args``
    for the request's node count (and repeat; an array's task takes its shard, numbered by the
    variable ``array_index``), whichever scheduler runs it."""
    args = list(run_args) + ["--nodes", str(request.nodes)]
    if request.repeat is not None:
        args += ["--repeat", str(request.repeat)]
    shard = f' --shard "${{{array_index}}}/{request.shards}"' if request.shards > 1 else ""
    lines = directives + [
        "# Written by `commstack submit`; runs the sweep's points for this node count"
        + (f", repeat {request.repeat} of each." if request.repeat else "."),
        "set -euo pipefail",
        f"cd {shlex.quote(str(workdir))}",
        f"exec {shlex.quote(sys.executable)} -m commstack run {' '.join(map(shlex.quote, args))}{shard}",
    ]
    return "\n".join(lines) + "\n"


class Scheduler:
    """One batch scheduler; a module of this package subclasses it and sets ``SCHEDULER``."""

    name = ""  # machine.yaml's scheduler.kind, and how `commstack status` names its jobs
    label = ""  # for people
    default = False  # the scheduler of a launch that names none
    step_launcher = ""  # launchers.<flavour>.command that means "a step of the allocation"
    script_suffix = ".job"  # of the batch scripts in <campaign>/jobs/
    extra_options_key = ""  # scheduler.<key> of machine.yaml: extra lines of a batch script

    # --- the allocation and its steps -----------------------------------------------------
    def allocation(self) -> Optional[Allocation]:
        """The allocation this process runs in, or None outside one."""
        raise NotImplementedError

    def step(self, spec: LaunchSpec) -> LaunchCommand:
        """A point as one step of its allocation: its nodes, ranks, CPUs and binding."""
        raise NotImplementedError

    def allocate(self, nodes: int, minutes: str, command: List[str]) -> List[str]:
        """``command`` run in a new allocation of ``nodes`` whole nodes for ``minutes``."""
        raise NotImplementedError

    def allocation_lost(self, stderr_text: str, job_id: Optional[str] = None) -> bool:
        """Whether a step failed because the allocation no longer exists."""
        return False

    def step_record(self, allocation: Allocation, command: LaunchCommand, stderr_text: str
                    ) -> Dict[str, object]:
        """Where a step ran, from its launcher's output and the allocation: ``job_id``,
        ``step_id``, ``nodes``, ``allocation_nodes``, ``tasks_per_node``, ``partition`` (the
        record's step provenance)."""
        raise NotImplementedError

    # --- a campaign as jobs ---------------------------------------------------------------
    def job_options(self, machine: Optional[Machine], **overrides: Optional[str]) -> JobOptions:
        """The options of a campaign's jobs: the command line's, else the machine's facts."""
        sched = machine.scheduler if machine else {}
        values = {k: overrides.get(k) or sched.get(key) for k, key in (
            ("time", "time_limit"), ("partition", "partition"), ("account", "account"),
            ("qos", "qos"), ("constraint", "constraint"))}
        extra = sched.get(self.extra_options_key, ()) if self.extra_options_key else ()
        return JobOptions(**values, extra=tuple(extra))

    def batch_script(self, request: JobRequest, run_args: List[str], options: JobOptions,
                     campaign: Campaign, workdir: Path) -> str:
        """The script of one job (or array) running ``commstack run`` with ``run_args``."""
        raise NotImplementedError

    def submit_script(self, path: Path) -> str:
        """Submit the batch script at ``path``; its job id. SubmitError when refused."""
        raise NotImplementedError

    def queue_states(self, job_ids: List[str]) -> Dict[str, str]:
        """The state of each job still queued or running (array tasks folded into their job)."""
        raise NotImplementedError

    def finished_states(self, job_ids: List[str]) -> Dict[str, str]:
        """The final state of finished jobs from accounting, where it is kept (else empty)."""
        return {}

    def cancel(self, job_ids: List[str]) -> None:
        raise NotImplementedError
