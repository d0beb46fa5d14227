"""A campaign's jobs under Flux: the batch script (``#FLUX:`` directives; an "array" is Flux's
``--cc`` copies, each told its index in FLUX_JOB_CC), ``flux batch``, the jobs' states from
``flux jobs`` (queue and accounting alike: an inactive job keeps its result), ``flux cancel``.

Job ids are Flux's F58 ids in ASCII (``fABC123``; FLUX_F58_FORCE_ASCII=1, flux-jobs(1)); the
copies of one ``--cc`` submission are logged as one entry, their ids joined by commas, and their
state is the most active one (running, else queued, else the first copy's result).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from commstack.schedulers.base import JobOptions, JobRequest, SubmitError, job_script
from commstack.store.campaign import Campaign

ASCII_IDS = {"FLUX_F58_FORCE_ASCII": "1"}
ACTIVE = ("RUN", "CLEANUP", "SCHED", "PRIORITY", "DEPEND")  # most active first (flux-jobs(1))
_CLOCK = re.compile(r"\d+(?::\d+){0,2}")


def flux(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["flux", *argv], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **ASCII_IDS})


def ascii_id(job_id: str) -> str:
    """Flux prints F58 ids with a leading "ƒ" unless told otherwise; its commands take "f"."""
    return "f" + job_id[1:] if job_id.startswith("ƒ") else job_id


def duration(limit: str) -> str:
    """A time limit as Flux's duration (FSD, in seconds): machine.yaml's ``time_limit`` is written
    as sbatch takes it (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``); anything else (an
    FSD already: ``90s``, ``20m``, ``2h``) stays as it is."""
    text = limit.strip()
    days, _, clock = text.rpartition("-")
    if not _CLOCK.fullmatch(clock) or (days and not days.isdigit()):
        return text
    fields = [int(f) for f in clock.split(":")]
    if days:
        hours, minutes, seconds = (fields + [0, 0])[:3]
    else:
        hours, minutes, seconds = {1: (0, fields[0], 0), 2: (0, *fields), 3: tuple(fields)}[
            len(fields)]
    return f"{((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds}s"


def batch_script(request: JobRequest, run_args: List[str], options: JobOptions,
                 campaign: Campaign, workdir: Path) -> str:
    if options.qos:
        raise SubmitError("Flux has no QOS: leave --qos and scheduler.qos unset (a bank or queue "
                          "is --account / --partition)")
    name = f"cs-{campaign.name}-N{request.nodes}" + (f"-r{request.repeat}" if request.repeat else "")
    jobs = campaign.root.resolve() / "jobs"
    lines = ["#!/bin/bash", f"#FLUX: --job-name={name}", f"#FLUX: -N {request.nodes}",
             "#FLUX: --exclusive", f"#FLUX: --output={jobs}/{{{{name}}}}-{{{{id}}}}.out"]
    if request.shards > 1:
        lines.append(f"#FLUX: --cc=0-{request.shards - 1}")
    for flag, value in (("-t", duration(options.time) if options.time else None),
                        ("--queue", options.partition), ("--bank", options.account),
                        ("--requires", options.constraint)):
        if value:
            lines.append(f"#FLUX: {flag}={value}" if flag.startswith("--") else f"#FLUX: {flag} {value}")
    lines += [f"#FLUX: {extra}" for extra in options.extra]
    return job_script(lines, request, run_args, workdir, "FLUX_JOB_CC")


def submit(path: Path) -> str:
    """``flux batch``: the job id, or the ids of its ``--cc`` copies joined by commas."""
    try:
        proc = flux("batch", str(path), timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SubmitError(f"flux batch {path} failed: {exc}") from None
    if proc.returncode != 0:
        raise SubmitError(f"flux batch {path} failed: {proc.stderr.strip()}")
    ids = [ascii_id(line.strip()) for line in proc.stdout.splitlines() if line.strip()]
    if not ids:
        raise SubmitError(f"flux batch {path} printed no job id")
    return ",".join(ids)


def _states(entries: List[str]) -> Dict[str, tuple]:
    """Each Flux job of ``entries`` (logged ids, some joined) -> (state, result)."""
    ids = [i for entry in entries for i in entry.split(",") if i]
    if not ids:
        return {}
    try:
        proc = flux("jobs", "-n", "-a", "-o", "{id.f58} {state} {result}", *ids)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            found[ascii_id(parts[0])] = (parts[1], parts[2] if len(parts) > 2 else "")
    return found


def _fold(entry: str, found: Dict[str, tuple]) -> Optional[tuple]:
    """The state of one logged entry: its most active copy, else its first copy's."""
    known = [found[i] for i in entry.split(",") if i in found]
    for state in ACTIVE:
        if any(s == state for s, _ in known):
            return state, ""
    return known[0] if known else None


def queue_states(job_ids: List[str]) -> Dict[str, str]:
    """The state of each logged job not yet inactive (RUN, SCHED, ...)."""
    found = _states(job_ids)
    out = {}
    for entry in job_ids:
        folded = _fold(entry, found)
        if folded and folded[0] in ACTIVE:
            out[entry] = folded[0]
    return out


def finished_states(job_ids: List[str]) -> Dict[str, str]:
    """The result of each inactive job (COMPLETED, FAILED, CANCELED, TIMEOUT)."""
    found = _states(job_ids)
    out = {}
    for entry in job_ids:
        folded = _fold(entry, found)
        if folded and folded[0] == "INACTIVE":
            out[entry] = folded[1]
    return out


def cancel(job_ids: List[str]) -> None:
    ids = [i for entry in job_ids for i in entry.split(",") if i]
    if ids:
        flux("cancel", *ids)
