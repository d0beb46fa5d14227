"""A sweep from start to end: expand the matrix, prepare every command, run what is not done.

Order of work: repeats are the outer loop (every point once, then every point again), so slow
drift of the machine spreads over all points instead of biasing one; within a repeat the points
run in a seeded order shuffled anew for every repeat (commstack.run_order; ``order: fixed``
keeps the matrix's order). A run given one repeat (a job of a campaign whose repeats are taken
across jobs) runs every point once, starting at a different point in each repeat, so no point is
always the first of its job.

Adaptive repeats (``repeats: {min, max, ci}``, commstack.adaptive): every point runs ``min``
times, then round after round (repeat min+1, min+2, ... up to max) only the points whose median
is not yet precise enough; a round is decided from the records of the repeats before it, so a
resumed sweep takes the same decisions.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import commstack
from commstack import adaptive, preflight, provenance, run_order
from commstack.adaptive import needs_repeat
from commstack.attempt_run import run_attempt
from commstack.benchmarks import registry
from commstack.errors import CampaignError
from commstack.evidence_run import evidence_run, evidence_summary
from commstack.launch import runner
from commstack.matrix.model import Matrix, Point
from commstack.placement.check import MISMATCH_STATUS
from commstack.plan import Plan, PreparedPoint, prepare  # noqa: F401 (commstack.sweep.prepare, as before)
from commstack.progress import Progress
from commstack.run_order import rotated  # noqa: F401 (commstack.sweep.rotated, as before)
from commstack.run_record import Session, topology_note
from commstack.schedulers.allocation import Allocation
from commstack.store import campaign as store
from commstack.store import state_log, table, tidy_index
from commstack.store.campaign import Campaign
from commstack.store.files import write_new, write_new_json
from commstack.store.record import Record

REPO_ROOT = Path(commstack.__file__).resolve().parents[2]


@dataclass
class SweepResult:
    done: int = 0
    failed: int = 0
    ran: int = 0
    skipped_done: int = 0
    deferred: int = 0  # not started: would not finish in the allocation's remaining time
    interrupted: bool = False
    campaign: Optional[Campaign] = None

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 0 if self.failed == 0 else 3


def _raise_interrupted(signum: int, frame: object) -> None:
    # The flag outlives the exception, which Python drops when it is raised inside an at-fork
    # callback of a subprocess start: the sweep still ends as interrupted.
    runner.STOP.set()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise runner.Interrupted(f"signal {signum}")


def run_sweep(
    plan: Plan,
    campaign_root: Path,
    retry_failed: bool = False,
    log: Callable[[str], None] = lambda s: print(s, flush=True),
    parallel: int = 1,
    allow_unlisted: Sequence[str] = (),
    only_repeat: Optional[int] = None,
) -> SweepResult:
    return Sweep(plan, campaign_root, retry_failed, log, parallel, allow_unlisted,
                 only_repeat).run()


# Sessions of more (point, repeat) pairs than this skip done pairs by the status log.
CLAIMS_BEFORE_LOG = 500

# One (point, repeat) to run: the repeat, the point, where it stands in its repeat's order.
Turn = Tuple[int, PreparedPoint, Dict[str, object]]


class Sweep:
    """One session of a sweep, its steps in the order a run takes them: check the plan, open the
    campaign and the session, order the work, run each (point, repeat) that is not done (claim,
    evidence run, launch to record: commstack.attempt_run), then the adaptive rounds, then end
    the session. SIGINT and SIGTERM stop it: the runs in flight end as interrupted."""

    campaign: Campaign
    session: Session
    progress: Progress
    seed: Optional[int]
    done_before: Set[str]  # the (point, repeat) pairs done before this session, when read

    def __init__(self, plan: Plan, campaign_root: Path, retry_failed: bool,
                 log: Callable[[str], None], parallel: int, allow_unlisted: Sequence[str],
                 only_repeat: Optional[int]) -> None:
        self.plan, self.matrix = plan, plan.matrix
        self.campaign_root = campaign_root
        self.retry_failed = retry_failed
        self.log = log
        self.parallel = parallel
        self.allow_unlisted = allow_unlisted
        self.only_repeat = only_repeat
        self.result = SweepResult()
        self.evidence: Dict[str, Optional[Dict[str, object]]] = {}  # point id -> its reading
        self.evidence_lock = threading.Lock()

    def run(self) -> SweepResult:
        check_repeat(self.matrix, self.only_repeat)
        checked = self._preflight()
        self._open_campaign()
        self._open_session(checked)
        old_handlers = {sig: signal.signal(sig, _raise_interrupted)
                        for sig in (signal.SIGINT, signal.SIGTERM)}
        work = self._first_repeats()
        runner.STOP.clear()
        try:
            self._run_first_repeats(work)
            self._run_adaptive_rounds()
        except (KeyboardInterrupt, runner.Interrupted):
            runner.stop_all()
            self.result.interrupted = True
        finally:
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
            self.result.interrupted = self.result.interrupted or runner.STOP.is_set()
            self._end_session()
        return self.result

    def _preflight(self) -> preflight.Verdict:
        """Before anything is created or launched: exit 2 on what a stack cannot do."""
        checked = preflight.check_plan(self.plan, self.allow_unlisted)
        for line in checked.warnings + checked.notes:
            self.log(f"pre-flight: {line}")
        return checked

    def _open_campaign(self) -> None:
        campaign = self.campaign = self.result.campaign = Campaign(self.campaign_root)
        campaign.ensure({"campaign": campaign.name, "machine": campaign.machine,
                         "benchmark": self.matrix.benchmark.name, "created": time.time(),
                         "matrix": str(self.matrix.path),
                         "commstack_version": commstack.__version__})
        for point, why in self.plan.skipped:
            self.log(f"skip point {point.id}: {why}")

    def _open_session(self, checked: preflight.Verdict) -> None:
        """The session's folder and provenance, and what its runs share."""
        plan = self.plan
        folder = _start_session(self.campaign, plan)
        stacks = {p.stack.name: p.stack for p in plan.points}.values()
        self.session = Session(
            campaign=self.campaign, folder=folder, topology=topology_note(folder),
            matrix=self.matrix, parse=registry.parser_for(self.matrix.benchmark.name),
            known_ucx={s.name: provenance.known_ucx_variables(s) for s in stacks},
            preflight_unchecked=checked.unchecked, allocation=plan.allocation)

    def _first_repeats(self) -> List[Turn]:
        """Every point's first repeats (or the one repeat this run is given), in run order; the
        progress counts them; a session of many reads once which of them are done."""
        self.seed = run_order.seed_of(self.matrix, self.campaign.name)
        self.log(f"order: {run_order.describe(self.seed, self.matrix)}")
        work = [turn for repeat in self._repeats() for turn in self._in_order(repeat, self.plan.points)]
        self.progress = Progress(len(work), max(1, self.parallel))
        # A session of few runs claims each (cheap per run); one of many reads the status log
        # once and skips what is done: either way what it costs follows what it runs.
        self.done_before = self._done_by_log() if len(work) > CLAIMS_BEFORE_LOG else set()
        return work

    def _repeats(self) -> Sequence[int]:
        if self.only_repeat is not None:
            return [self.only_repeat]
        return range(1, self.matrix.first_repeats + 1)

    def _in_order(self, repeat: int, points: Sequence[PreparedPoint]) -> List[Turn]:
        """(repeat, point, its order) for the points of one repeat, in their run order."""
        listed = run_order.ordered(points, repeat, self.seed, rotate=self.only_repeat is not None,
                                   point_of=lambda p: p.point)
        kind = "fixed" if self.seed is None else "shuffled"
        return [(repeat, prepared, {"kind": kind, "seed": self.seed, "position": i})
                for i, prepared in enumerate(listed, 1)]

    def _done_by_log(self) -> Set[str]:
        """The (point, repeat) pairs the status log says are done (the log rebuilt first when it
        is missing or stale): a session resuming a large campaign skips them without claiming
        them or reading their records, so what it costs is what it runs (``Campaign.claim``
        decides for every other pair). Done is final: a pair done now is done when its turn
        comes."""
        return self.campaign.logged().done

    def _run_first_repeats(self, work: List[Turn]) -> None:
        if self.matrix.adaptive is None or self.parallel <= 1:
            self._execute(work)
            return
        # Side by side, one repeat at a time: a record's stop decision sees the ones before.
        for repeat in self._repeats():
            if not (self.result.interrupted or runner.STOP.is_set()):
                self._execute([turn for turn in work if turn[0] == repeat])

    def _execute(self, work: List[Turn]) -> None:
        if self.parallel > 1:
            _run_side_by_side(self._run_turn, work, self.parallel)
            return
        for turn in work:
            self._run_turn(*turn)
            if self.result.interrupted:
                break

    def _run_turn(self, repeat: int, prepared: PreparedPoint, order: Dict[str, object]) -> None:
        """Claim and run one (point, repeat) if it needs running; account for it in the result."""
        pid, result = prepared.point.id, self.result
        if state_log.pair(pid, repeat) in self.done_before:  # done is final: no claim, no read
            result.skipped_done += 1
            self.progress.skipped()
            return
        campaign = self.campaign
        campaign.save_point(prepared.point)
        timeout = _time_budget(campaign, prepared.point, self.matrix, self.plan.allocation)
        if timeout is None:
            if campaign.state(pid, repeat) not in (store.DONE, store.FAILED):
                result.deferred += 1
            self.progress.skipped()
            return
        if runner.STOP.is_set():
            return
        state, attempt = campaign.claim(pid, repeat, self.retry_failed)
        if attempt is None:
            result.skipped_done += state == store.DONE
            result.failed += state == store.FAILED
            self.progress.skipped()
            return
        used = self._evidence(prepared, timeout)
        record = run_attempt(self.session, prepared, attempt, timeout, used, order)
        self._account(record, prepared.point, attempt.path)

    def _evidence(self, prepared: PreparedPoint, timeout: float) -> Optional[Dict[str, object]]:
        """The point's evidence run's reading, run once per session (None: it takes none)."""
        if prepared.evidence is None:
            return None
        pid = prepared.point.id
        with self.evidence_lock:
            if pid not in self.evidence:
                self.evidence[pid] = evidence_run(self.campaign, self.session.folder, prepared,
                                                  timeout)
                self.log(f"    evidence run {pid}: {evidence_summary(self.evidence[pid])}")
            return self.evidence[pid]

    def _account(self, record: Record, point: Point, attempt_path: Path) -> None:
        """Count a run in the result and the progress, and say how it ended."""
        result = self.result
        result.ran += 1
        status = record.status
        done = self.progress.ran(status == "ok", record.duration_s or 0.0)
        self.log(f"[{done}] rep {record.repeat} {point.id} {_label(point)}: {status}"
                 f" ({record.duration_s or 0:.1f}s)")
        if status not in ("ok", "interrupted"):
            self.log(f"    {_failure_hint(record, attempt_path, self.campaign.root)}")
        if record.repeats_stopped:
            self.log(f"    no more repeats of {point.id}: {record.repeats_stopped}")
        if status == "interrupted":
            result.interrupted = True
        elif status == "ok":
            result.done += 1
        else:
            result.failed += 1

    def _run_adaptive_rounds(self) -> None:
        """Adaptive repeats: round after round, the points not yet precise take one repeat more."""
        rule = self.matrix.adaptive
        if rule is None or self.only_repeat is not None:
            return
        points = self.plan.points
        for repeat in range(rule.min + 1, rule.max + 1):
            if self.result.interrupted or runner.STOP.is_set():
                break
            todo = [p for p in points if needs_repeat(self.campaign, p.point, self.matrix, repeat)]
            if not todo:
                break
            self.log(f"round {repeat}: {len(todo)} of {len(points)} points take repeat {repeat}"
                     f" (not within {adaptive.within(rule)} yet)")
            self.progress.add(len(todo))
            self._execute(self._in_order(repeat, todo))

    def _end_session(self) -> None:
        # What the session's end costs is the session's own: its one-record index parts
        # merged, never the campaign read again (docs/measured.md). When the sweep is already
        # failing (a full disk), failing here must not hide that error.
        with contextlib.suppress(*((OSError,) if sys.exc_info()[0] else ())):
            retired = table.retire(self.campaign.root)
            if retired:
                self.log(retired)
            tidy_index.compact(self.campaign.root)


def check_repeat(matrix: Matrix, repeat: Optional[int]) -> None:
    if repeat is not None and matrix.adaptive is not None:
        raise CampaignError(f"{matrix.path}: --repeat {repeat}: adaptive repeats (repeats: "
                            "{min, max, ci}) decide themselves which points take a repeat; "
                            "run without --repeat")
    if repeat is not None and not 1 <= repeat <= matrix.repeats:
        raise CampaignError(f"{matrix.path}: --repeat {repeat}: the matrix has repeats "
                            f"1 to {matrix.repeats}")


def _run_side_by_side(one: Callable, work: List[tuple], parallel: int) -> None:
    """Up to `parallel` points at once (small points sharing an allocation)."""
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(one, *item) for item in work]
        try:
            for future in as_completed(futures):
                future.result()
        except BaseException:
            runner.stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise


# A step needs this much besides its expected duration (srun start-up, record writing).
SLACK_S = 5.0


def _time_budget(campaign: Campaign, point: Point, matrix: Matrix,
                 allocation: Optional[Allocation]) -> Optional[float]:
    """The timeout for the next run of a point, or None when it cannot finish in the allocation.

    Expected duration: the longest successful run of this point so far, else the matrix timeout.
    """
    remaining = allocation.remaining_s() if allocation else None
    if remaining is None:
        return matrix.timeout
    past = [a.record() for a in campaign.attempts(point.id)]
    durations = [r.duration_s for r in past if r and r.ok and r.duration_s is not None]
    expected = max(durations) * 1.5 if durations else matrix.timeout
    if remaining - SLACK_S < expected:
        return None
    return min(matrix.timeout, remaining - SLACK_S)


def _failure_hint(record: Record, attempt_path: Path, root: Path) -> str:
    """One line saying why a run failed: its error or its placement's verdict, else the last
    line it wrote to stderr."""
    where = f"{root.name}/{(attempt_path / 'stderr.txt').relative_to(root)}"
    if record.parse_error:
        return f"{record.parse_error} (exit {record.exit_code}; {where})"
    if record.status == MISMATCH_STATUS and record.placement is not None:
        return f"placement {record.placement.summary} ({root.name}/{attempt_path.relative_to(root)})"
    try:
        with open(attempt_path / "stderr.txt", "rb") as err:
            err.seek(0, 2)
            err.seek(max(0, err.tell() - 4096))
            tail = err.read().decode(errors="replace")
    except OSError:
        tail = ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    last = lines[-1][:200] if lines else "nothing on stderr"
    return f"exit {record.exit_code}; {where} ends: {last}"


def _label(point: Point) -> str:
    return " ".join(f"{k}={v}" for k, v in point.params if k != "benchmarks")


def _start_session(campaign: Campaign, plan: Plan) -> Path:
    session = campaign.new_session()
    write_new(session / "matrix.yaml", plan.matrix.text.encode())
    stacks = list({p.stack.name: p.stack for p in plan.points}.values())
    executables = {p.command.executable for p in plan.points}
    info = provenance.session_info(stacks, executables, REPO_ROOT, plan.matrix.path)
    info["matrix_sha256"] = plan.matrix.sha256
    xml, info["topology"] = provenance.topology_xml()
    write_new_json(session / "provenance.json", info)
    if xml:
        write_new(session / "topology.xml", xml.encode())
    for stack in stacks:
        for name, text in provenance.mpi_info(stack).items():
            write_new(session / f"{stack.name}.{name}", text.encode())
    return session
