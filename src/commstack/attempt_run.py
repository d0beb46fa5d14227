"""One claimed attempt from launch to record: launch the point's command, read what the run
wrote (its output parsed; the allocation, placement, components and UCX checked beside it), make
its record (commstack.run_record) and write it."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Optional

from commstack import adaptive, provenance
from commstack.benchmarks.base import Output, ParseError
from commstack.evidence_run import components_used
from commstack.flavours import ompi_coll_evidence
from commstack.launch import runner
from commstack.launch.command import LaunchCommand
from commstack.launch.runner import RunOutcome
from commstack.launch.stack import ResolvedStack
from commstack.matrix.model import Matrix, deviation_notes
from commstack.placement.check import CONTRADICTS, MISMATCH_STATUS, record_placement
from commstack.plan import PreparedPoint
from commstack.run_record import STDERR, STDOUT, Happened, Reading, Session, record_of_run
from commstack.schedulers import registry
from commstack.schedulers.allocation import Allocation
from commstack.schedulers.base import Scheduler
from commstack.store import state_log, tidy_index
from commstack.store.campaign import Attempt
from commstack.store.files import write_new
from commstack.store.record import JobStep, Record, UcxReport


def run_attempt(session: Session, prepared: PreparedPoint, attempt: Attempt,
                timeout: Optional[float] = None, evidence: Optional[Dict[str, object]] = None,
                order: Optional[Dict[str, object]] = None) -> Record:
    """Run one claimed attempt, parse it and write its record; the attempt is released after."""
    try:
        command = prepared.command.placed(attempt.path)
        timeout_s = timeout or session.matrix.timeout
        outcome = runner.run(command, attempt.path / STDOUT, attempt.path / STDERR, timeout_s,
                             cwd=attempt.path)
        # The run is over: an interrupt now waits until its record is written.
        with runner.signals_held():
            happened = what_happened(session, prepared, attempt.path, command, outcome,
                                     timeout_s, evidence)
            record = record_of_run(session, prepared, attempt, happened, order)
            if session.matrix.adaptive is not None and record.status != "interrupted":
                record.repeats_stopped = adaptive.stopped_after(session.campaign, record,
                                                                session.matrix)
            write_new(attempt.record_path, record.dumps(attempt.path))
            state_log.record_written(session.campaign.root, record)
            tidy_index.append(session.campaign.root, record)  # before the attempt is released
            return record
    finally:
        attempt.release()


def what_happened(session: Session, prepared: PreparedPoint, folder: Path,
                  command: LaunchCommand, outcome: RunOutcome, timeout_s: float,
                  evidence: Optional[Dict[str, object]]) -> Happened:
    """Read the run's output in its attempt ``folder``: parse it, then check the allocation, the
    placement and the components it used, each of which may change its status or add a note."""
    text = (folder / STDOUT).read_text(errors="replace")
    err_text = (folder / STDERR).read_text(errors="replace")
    # Where it ran: the scheduler's step, or the simulator and its settings (never a measurement).
    allocation = session.allocation
    scheduler = registry.of(allocation) if allocation else None
    step = _step(scheduler, allocation, command, err_text) if scheduler and allocation else None
    simulation = None if command.simulation is None else command.simulation.as_record(
        _version_texts(session.folder, prepared.stack))
    # What it measured, and the checks that may change its status or add a note.
    reading = read_output(session.matrix, session.parse, outcome.status, text)
    if reading.status == "crash" and scheduler and allocation and scheduler.allocation_lost(
            err_text, allocation.job_id):
        # Not the point's failure: the allocation ended (cancelled, time limit). Rerun it.
        reading.status = "interrupted"
        reading.notes += [f"the {scheduler.label} allocation ended under this run"]
    both = text + "\n" + err_text
    placement = record_placement(command.expected, both, session.folder / "topology.xml")
    if reading.status == "ok" and placement and placement["verdict"] == CONTRADICTS:
        # The numbers are real, but not of the placement the point names.
        reading.status = MISMATCH_STATUS
        reading.notes += [f"placement {placement['summary']}"]
    used = evidence if prepared.evidence is not None else components_used(
        prepared, command, err_text)
    unused = ompi_coll_evidence.not_used_note(used)
    if unused:
        reading.notes += [unused]  # the numbers are real: status stays, the report flags it
    reading.notes += deviation_notes(session.matrix, prepared.stack.name) + command.notes()
    if command.simulation is not None:
        reading.notes += command.simulation.unconfirmed(err_text)
    ucx = UcxReport(**provenance.ucx_report(
        command.full_env(), both, session.known_ucx.get(prepared.stack.name),
        prepared.stack.flavour, prepared.stack.stack.conduit))
    return Happened(command, outcome, timeout_s, reading, placement, used, ucx, step, simulation)


def read_output(matrix: Matrix, parse: Callable[[str], Output], status: str, text: str
                ) -> Reading:
    """Parse a run's stdout when the run ended ok: a parse error, or a fatal line the benchmark
    names, makes it a parse-error."""
    reading = Reading(status, [], [])
    if status != "ok":
        return reading
    try:
        output = parse(text)
        reading = Reading(status, output.rows, list(output.notes), None, output.build_config)
        fatal = matrix.benchmark.fatal(output)
        if fatal:
            reading.status, reading.error = "parse-error", "; ".join(fatal)
    except ParseError as exc:
        reading.status, reading.error = "parse-error", str(exc)
    return reading


def _step(scheduler: Scheduler, allocation: Allocation, command: LaunchCommand, stderr: str
          ) -> JobStep:
    """Where the run's step ran, as its scheduler reads it from the launcher's output."""
    return JobStep(**scheduler.step_record(allocation, command, stderr))  # type: ignore[arg-type]


def _version_texts(session: Path, stack: ResolvedStack) -> Dict[str, str]:
    """What the stack's version tools printed at the session's start (sessions/<id>/<stack>.<file>),
    by file name; the first 4 kB of each."""
    texts = {}
    for tool in stack.kind.version_tools:
        try:
            with open(session / f"{stack.name}.{tool.file}", errors="replace") as f:
                texts[tool.file] = f.read(4096)
        except OSError:
            continue
    return texts
