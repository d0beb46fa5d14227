"""Show per point and repeat what is done, failed, running, pending or skipped in a campaign.

The states come from the campaign's status log (``commstack.store.state_log``: one line per
attempt, kept up to date by the store), read in well under a second at 100,000 records. When the
log is missing or stale it is rebuilt from the records: each attempt's record.json is read once,
and its run status is taken from the top-level ``status`` line the store writes (one top-level
key per line: ``Record.dumps``, or the indented JSON of schema 2); a file in any other form, or
one whose components may not have been used, goes through ``Record.load``.
"""

from __future__ import annotations

import argparse
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from commstack.adaptive import adaptive_states, within
from commstack.cli.common import existing_campaign
from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix
from commstack.matrix.model import Point
from commstack.store import expansion_cache, state_log
from commstack.store.campaign import (
    DONE,
    FAILED,
    FAILURES,
    PENDING,
    RUNNING,
    Attempt,
    Campaign,
    attempt_status,
)

SKIPPED = "skipped"
STATES = ("done", "failed", "running", "pending", SKIPPED)
LEGEND = "legend: d done, f failed, r running, p pending, s skipped (one letter per repeat)"
# Adaptive repeats: a point's line shows its min repeats, those taken after them, and one
# pending while it is not precise yet (the next round); why it stopped follows.


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", type=Path, help="results/<machine>/<campaign>")
    p.add_argument("--matrix", type=Path, default=None,
                   help="matrix to compare against (default: the copy saved by the last run)")
    p.add_argument("--verbose", "-v", action="store_true", help="one line per point")


def execute(args: argparse.Namespace) -> int:
    campaign = Campaign(existing_campaign(args.campaign))
    if args.matrix is None and not _matrices(campaign):
        return _recorded_only(campaign, args.verbose)
    matrix_path = args.matrix or _last_matrix(campaign)
    matrix = load_matrix(matrix_path)
    # Which points `run` skips here depends only on optional stacks: a matrix of fixed repeats
    # without one needs the points' ids alone (kept beside the status log: store.expansion_cache).
    ids = None
    if not args.verbose and matrix.adaptive is None and \
            not any(s.optional for s in matrix.stacks.values()):
        ids = expansion_cache.ids(campaign.root, matrix, expand)
    skipped: Dict[str, str] = {}
    points: Dict[str, Point] = {}
    if ids is None:
        from commstack.machine import find_machine
        from commstack.plan import skipped_points

        expanded = expansion_cache.points(campaign.root, matrix, expand)
        skipped = skipped_points(matrix, expanded, find_machine(campaign.machine,
                                                                matrix_path.parent))
        ids = [point.id for point in expanded]
        points = {point.id: point for point in expanded}
    totals: Counter = Counter()
    if args.verbose:
        print(LEGEND)
    scan = scan_campaign(campaign)
    stops: Counter = Counter()
    repeats = range(1, matrix.repeats + 1)
    listed = ids
    if matrix.adaptive is None and not args.verbose:
        # The common case, counted as sets: the pairs done, then the points with any other.
        wanted = {f"{i}\t{r}" for i in ids for r in repeats}  # as state_log.pair writes them
        totals[DONE] = len(wanted & scan.done)
        left = {key.split("\t", 1)[0] for key in wanted - scan.done}
        listed = [i for i in ids if i in left]
    for point_id in listed:
        why = None
        if matrix.adaptive is not None:
            states, why = adaptive_states(campaign, points[point_id], matrix, scan.state)
            stops[why.split(":")[0] if why else "taking repeats"] += 1
        else:
            states = [scan.state(point_id, r) for r in repeats]
            if not args.verbose:  # its done repeats are counted above
                states = [s for s in states if s != DONE]
        # A run that `run` skips here (optional stack without its binaries) is not pending;
        # one that ran before, where the binaries were found, keeps its state.
        if point_id in skipped:
            states = [SKIPPED if s == "pending" else s for s in states]
        totals.update(states)
        if args.verbose:
            params = " ".join(f"{k}={v}" for k, v in points[point_id].params)
            print(f"{point_id}  {' '.join(s[0] for s in states)}  {params}"
                  + (f"  [{why}]" if why else ""))
    total = sum(totals.values())
    summary = ", ".join(f"{totals[s]} {s}" for s in STATES if s != SKIPPED or totals[s])
    to_do = f"; {total - totals[SKIPPED]} to do here, as `plan` counts" if totals[SKIPPED] else ""
    print(f"{campaign.root}: {summary} (of {total} runs{to_do})")
    if matrix.adaptive is not None:
        rule = matrix.adaptive
        print(f"  adaptive repeats ({rule.min} to {rule.max}, until within {within(rule)}): "
              + ", ".join(f"{stops[k]} point{'s' * (stops[k] != 1)} {label}" for k, label in (
                  ("precise", "precise"), ("max reached", "at max"),
                  ("taking repeats", "still taking repeats")) if stops[k]))
    skipped_here = [i for i in skipped if
                    any(scan.state(i, r) == "pending" for r in range(1, matrix.repeats + 1))]
    for why, count in Counter(skipped[i] for i in skipped_here).items():
        print(f"  skipped: {count} points x {matrix.repeats} repeats: {why}")
    unused = scan.not_used
    if unused:
        print(f"  components asked for but not used: {len(unused)} runs "
              f"({len({key[0] for key in unused})} points; the report lists them)")
    _print_jobs(campaign)
    return 0 if totals["failed"] == 0 else 3


@dataclass
class Scan:
    """Every attempt's run status (None: no record yet), read once; the state of a (point,
    repeat) by the rule of :meth:`commstack.store.campaign.Campaign.state`."""

    # (point, repeat) -> [(attempt folder, status)] in attempt order
    attempts: Dict[Tuple[str, int], List[Tuple[str, Optional[str]]]] = field(
        default_factory=dict)
    # attempts whose components were asked for and not used: (point, repeat, attempt)
    not_used: List[Tuple[str, int, int]] = field(default_factory=list)
    # (point, repeat) with an ok attempt, as ``state_log.pair``: done whatever else (the common
    # case, asked first)
    done: Set[str] = field(default_factory=set)

    def state(self, point_id: str, repeat: int) -> str:
        if state_log.pair(point_id, repeat) in self.done:
            return DONE
        found = self.attempts.get((point_id, repeat), [])
        statuses = [status for _, status in found]  # none ok: those are in ``done``
        if any(s is None and Attempt(Path(folder), repeat, 0).is_locked() for folder, s in found):
            return RUNNING
        if statuses and statuses[-1] in FAILURES:
            return FAILED
        return PENDING


def scan_campaign(campaign: Campaign) -> Scan:
    """The campaign's attempts from its status log (``Campaign.logged``); an attempt the log
    holds no status for is looked up in its folder."""
    logged = campaign.logged()
    scan = Scan(not_used=list(logged.not_used), done=logged.done)
    points = str(campaign.root / "points")
    for (point, repeat, number), status in logged.attempts.items():
        folder = f"{points}/{point}/rep{repeat}.try{number}"
        if status is None:
            status, not_used = attempt_status(folder)
            if status is not None:  # its runner died before noting it, or an older writer
                state_log.finished(campaign.root, point, repeat, number, status, not_used)
                if not_used:
                    scan.not_used.append((point, repeat, number))
        if status == "ok":
            scan.done.add(state_log.pair(point, repeat))
        found = scan.attempts.setdefault((point, repeat), [])
        found.append((folder, status))
        if len(found) > 1:
            found.sort(key=lambda item: _attempt_number(item[0]))
    return scan


def _attempt_number(folder: str) -> int:
    return int(folder.rsplit(".try", 1)[1])


def _print_jobs(campaign: Campaign) -> None:
    """Jobs submitted for this campaign and their state (the queue's, else accounting's)."""
    from commstack.schedulers import campaign_jobs

    jobs = campaign_jobs.submitted_jobs(campaign)
    if not jobs:
        return
    states: Dict[str, str] = {}
    for scheduler, ids in campaign_jobs.by_scheduler(jobs):
        try:
            queued = scheduler.queue_states(ids)
            finished = scheduler.finished_states([i for i in ids if i not in queued])
        except (OSError, ValueError, subprocess.SubprocessError):
            queued, finished = {}, {}
        states.update({**finished, **queued})
    for job in jobs:
        scheduler = campaign_jobs.scheduler_of(job)
        state = states.get(job["job_id"]) or "finished (not in queue)"
        kind = f"array[{job['array']}]" if job.get("array", 1) > 1 else "job"
        repeat = f" repeat={job['repeat']}" if job.get("repeat") else ""
        print(f"  {scheduler.name} {kind} {job['job_id']}: nodes={job['nodes']}{repeat} runs={job['runs']} "
              f"{state}")


def _matrices(campaign: Campaign) -> List[Path]:
    return sorted((campaign.root / "sessions").glob("*/matrix.yaml"))


def _last_matrix(campaign: Campaign) -> Path:
    sessions = _matrices(campaign)
    if not sessions:
        from commstack.errors import CampaignError

        raise CampaignError(f"{campaign.root}: no run recorded yet; pass --matrix")
    return sessions[-1]


def _recorded_only(campaign: Campaign, verbose: bool) -> int:
    """A campaign no matrix made (``commstack import``): the states of the runs it holds; what
    is pending cannot be known without a matrix."""
    scan = scan_campaign(campaign)
    done = [key.split("\t") for key in scan.done]
    pairs = set(scan.attempts) | {(point, int(repeat)) for point, repeat in done}
    if not pairs:
        from commstack.errors import CampaignError

        raise CampaignError(f"{campaign.root}: no run recorded yet; pass --matrix")
    totals: Counter = Counter()
    for point, repeat in sorted(pairs):
        state = scan.state(point, repeat)
        totals[state] += 1
        if verbose:
            print(f"{point}  repeat {repeat}: {state}")
    summary = ", ".join(f"{totals[s]} {s}" for s in STATES if totals[s])
    print(f"{campaign.root}: {summary} (of {sum(totals.values())} runs recorded; no matrix "
          "recorded, as for an imported campaign: pass --matrix to see what is pending)")
    return 0 if totals["failed"] == 0 else 3
