"""The record of one attempt, made in one place (``record_of_run``) from what its run did
(``Happened``) and what every run of its session shares (``Session``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from commstack import provenance
from commstack.benchmarks.base import Output
from commstack.launch.command import LaunchCommand
from commstack.launch.runner import RunOutcome
from commstack.matrix.model import Matrix
from commstack.plan import PreparedPoint
from commstack.schedulers.allocation import Allocation
from commstack.store.campaign import Attempt, Campaign
from commstack.store.record import JobStep, Placement, Record, Row, StackInfo, UcxReport

STDOUT, STDERR = "stdout.txt", "stderr.txt"  # in the attempt folder


@dataclass(frozen=True)
class Session:
    """What every run of one sweep session shares."""

    campaign: Campaign
    folder: Path  # sessions/<id>, its provenance written at the session's start
    topology: str  # where the session's node topology is, or why there is none (topology_note)
    matrix: Matrix
    parse: Callable[[str], Output]
    known_ucx: Dict[str, Optional[set]]  # by stack name (provenance.known_ucx_variables)
    preflight_unchecked: Dict[str, Dict[str, str]]  # by point id
    allocation: Optional[Allocation] = None


@dataclass
class Reading:
    """What a run's output says: the status it earns, its rows and notes."""

    status: str
    rows: List[Row]
    notes: List[str]
    error: Optional[str] = None
    build_config: Optional[str] = None


@dataclass(frozen=True)
class Happened:
    """What one attempt's run did, as its record tells it."""

    command: LaunchCommand  # as launched, placed in the attempt folder
    outcome: RunOutcome
    timeout_s: float
    reading: Reading  # its status and notes final: every check of the run has had its say
    placement: Optional[Dict[str, Any]]
    components_used: Optional[Dict[str, Any]]
    ucx: UcxReport
    step: Optional[JobStep]  # where its scheduler ran it (the record's historical `slurm`)
    simulation: Optional[Dict[str, Any]]


def record_of_run(session: Session, prepared: PreparedPoint, attempt: Attempt,
                  happened: Happened, order: Optional[Dict[str, object]] = None) -> Record:
    """The record of one attempt: the point, the attempt, and what its run did."""
    campaign, point, stack = session.campaign, prepared.point, prepared.stack
    command, outcome, reading = happened.command, happened.outcome, happened.reading
    return Record(
        campaign=campaign.name,
        machine=campaign.machine,
        benchmark=session.matrix.benchmark.name,
        point_id=point.id,
        repeat=attempt.repeat,
        attempt=attempt.number,
        params=point.as_dict(),
        stack=stack.name,
        stack_info=StackInfo(stack.flavour, stack.stack.root, stack.launcher),
        argv=command.argv,
        env=provenance.scrub_env(command.env),
        env_prepends=command.prepends,
        command=provenance.scrubbed_shell(command),
        ranks=command.ranks,
        nodes=point.get("nodes", 1),
        oversubscribed=command.oversubscribed,
        placement=Placement(**happened.placement) if happened.placement else None,
        status=reading.status,
        exit_code=outcome.exit_code,
        timeout_s=happened.timeout_s,
        start=outcome.start,
        end=outcome.end,
        duration_s=outcome.duration_s,
        parsed=reading.rows or [],
        parse_error=reading.error,
        notes=reading.notes,
        build_config=reading.build_config,
        preflight_unchecked=dict(session.preflight_unchecked.get(point.id, {})),
        ucx=happened.ucx,
        session=session.folder.name,
        topology=session.topology,
        slurm=happened.step,
        components_used=happened.components_used,
        stdout=STDOUT,
        stderr=STDERR,
        order={k: v for k, v in order.items() if v is not None} if order else None,
        simulation=happened.simulation,
    )


def topology_note(session: Path) -> str:
    """Where a session's node topology is, or why there is none (sessions/<id>/provenance.json)."""
    if (session / "topology.xml").is_file():
        return f"sessions/{session.name}/topology.xml"
    try:
        note = json.loads((session / "provenance.json").read_text()).get("topology")
    except (OSError, ValueError):
        note = None
    return note or "not captured"
