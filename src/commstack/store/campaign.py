"""The result store of one campaign: results/<machine>/<campaign>/.

Layout:
  campaign.json                     who/what created it (written once)
  sessions/<id>/                    one per `commstack run`: matrix copy, provenance, topology
  points/<point id>/point.json      the point's parameters (written once)
  points/<point id>/rep<k>.try<n>/  one attempt at repeat k: stdout.txt, stderr.txt, record.json
  (records.csv                      no longer kept: `commstack query CAMPAIGN --records`)
  index/                            Parquet index (store.tidy_index) and status log
                                    (store.state_log), derived from the records

An attempt directory is claimed with mkdir (exclusive) and holds a lock while it runs, so two
runners never take the same attempt and a directory left by a killed runner is recognised.
Files are written through hidden temporaries (store.files); a run of the campaign removes those
left by killed runners where it works: the campaign's own folder, index/ and sessions/ when it
starts, a point's folder and its unfinished attempts when it claims one of its repeats (never a
walk of every point: what a session costs is what it runs).
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

from commstack.matrix.model import Point
from commstack.store import state_log
from commstack.store.files import remove_stale_temporaries, write_new_json
from commstack.store.record import Record, stored_status

DONE, FAILED, PENDING, RUNNING = "done", "failed", "pending", "running"
# Statuses that count as a failed attempt; `interrupted` (and no record at all) mean "not run".
FAILURES = ("crash", "timeout", "parse-error", "launch-error", "placement-mismatch")
_ATTEMPT = re.compile(r"^rep(\d+)\.try(\d+)$")


@dataclass
class Attempt:
    path: Path
    repeat: int
    number: int
    _lock_fd: Optional[int] = None

    @property
    def record_path(self) -> Path:
        return self.path / "record.json"

    def record(self) -> Optional[Record]:
        """The attempt's record (any schema version), or None while it has none."""
        try:
            return Record.load(self.record_path)
        except FileNotFoundError:
            return None

    def is_locked(self) -> bool:
        """True while some runner holds this attempt."""
        return attempt_held(str(self.path))

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


class Campaign:
    def __init__(self, root: Path):
        self.root = Path(root)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def machine(self) -> str:
        return self.root.parent.name

    # --- creation -----------------------------------------------------------------------
    def ensure(self, info: dict) -> None:
        """Create the campaign if it is new; remove temporaries killed runners left in its
        own folder, index/ and sessions/ (those in points/: ``claim``)."""
        (self.root / "points").mkdir(parents=True, exist_ok=True)
        (self.root / "sessions").mkdir(exist_ok=True)
        state_log.start(self.root)
        remove_stale_temporaries(self.root)
        remove_stale_temporaries(self.root / "index")
        remove_stale_temporaries(self.root / "sessions", recursive=True)
        if not (self.root / "campaign.json").exists():
            try:
                write_new_json(self.root / "campaign.json", info)
            except FileExistsError:  # another runner created it first
                pass

    def new_session(self) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        base = f"{stamp}-{socket.gethostname()}-{os.getpid()}"
        # One process may start several sessions in a second (a race's rounds, one sweep per
        # repeat): the later ones take a number.
        for number in range(1, 10_000):
            path = self.root / "sessions" / (base if number == 1 else f"{base}-{number}")
            try:
                path.mkdir(parents=True)
                return path
            except FileExistsError:
                continue
        raise FileExistsError(f"{self.root / 'sessions' / base}: 10,000 sessions this second")

    # --- points and attempts ----------------------------------------------------------------
    def point_dir(self, point_id: str) -> Path:
        return self.root / "points" / point_id

    def save_point(self, point: Point) -> None:
        path = self.point_dir(point.id)
        path.mkdir(parents=True, exist_ok=True)
        if not (path / "point.json").exists():
            try:
                write_new_json(path / "point.json", {"benchmark": point.benchmark,
                                                     "params": point.as_dict()})
            except FileExistsError:
                pass

    def attempt_folders(self) -> List[Tuple[str, int, int, str]]:
        """(point id, repeat, attempt, folder) of every attempt, in the store's order, by
        os.scandir alone: what status and report read at 10,000s of records."""
        points = self.root / "points"
        if not points.is_dir():
            return []
        with os.scandir(points) as entries:
            point_dirs = sorted((e.name, e.path) for e in entries if e.is_dir())
        out: List[Tuple[str, int, int, str]] = []
        for name, point_dir in point_dirs:
            found = []
            with os.scandir(point_dir) as entries:
                for entry in entries:
                    m = _ATTEMPT.match(entry.name)
                    if m:
                        found.append((int(m.group(1)), int(m.group(2)), entry.path))
            out += [(name, repeat, number, folder) for repeat, number, folder in sorted(found)]
        return out

    def attempts(self, point_id: str, repeat: Optional[int] = None) -> List[Attempt]:
        found = []
        directory = self.point_dir(point_id)
        if not directory.is_dir():
            return []
        for entry in directory.iterdir():
            m = _ATTEMPT.match(entry.name)
            if m and (repeat is None or int(m.group(1)) == repeat):
                found.append(Attempt(entry, int(m.group(1)), int(m.group(2))))
        return sorted(found, key=lambda a: (a.repeat, a.number))

    def state(self, point_id: str, repeat: int) -> str:
        attempts = self.attempts(point_id, repeat)
        statuses = [attempt_status(str(a.path))[0] for a in attempts]
        if "ok" in statuses:
            return DONE
        if any(s is None and a.is_locked() for a, s in zip(attempts, statuses)):
            return RUNNING
        if statuses and statuses[-1] in FAILURES:
            return FAILED
        return PENDING

    def logged(self) -> state_log.Logged:
        """Every attempt's status from the status log; the log rebuilt from the records first
        when it is missing or stale (once: the store keeps it up to date after that)."""
        logged = state_log.read(self.root)
        if logged is None:
            logged = state_log.rebuild(self.root, self.scan_records)
        return logged

    def scan_records(self) -> List[Tuple[Tuple[str, int, int], Optional[str], bool]]:
        """Every attempt's status (None without a record) and whether its components went
        unused, read from the records themselves (``attempt_status``)."""
        found = []
        for name, repeat, number, folder in self.attempt_folders():
            status, not_used = attempt_status(folder)
            found.append(((name, repeat, number), status, not_used))
        return found

    def claim(self, point_id: str, repeat: int, retry_failed: bool = False
              ) -> "tuple[str, Optional[Attempt]]":
        """Decide whether (point, repeat) needs a run and, if so, create and lock its next
        attempt. Returns the state seen and the attempt (None when nothing is to be run).

        The decision and the claim happen under a per-point lock, so concurrent runners never
        both run the same repeat; the attempt's own lock is taken before that lock is released.
        """
        directory = self.point_dir(point_id)
        directory.mkdir(parents=True, exist_ok=True)
        guard = os.open(directory / ".claim", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(guard, fcntl.LOCK_EX)
            self._remove_stale_temporaries(point_id)
            state = self.state(point_id, repeat)
            if state in (DONE, RUNNING) or (state == FAILED and not retry_failed):
                return state, None
            number = max((a.number for a in self.attempts(point_id, repeat)), default=0) + 1
            path = directory / f"rep{repeat}.try{number}"
            path.mkdir()
            fd = os.open(path / ".lock", os.O_CREAT | os.O_RDWR, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            state_log.claimed(self.root, point_id, repeat, number)  # after the folder exists
            return state, Attempt(path, repeat, number, fd)
        finally:
            os.close(guard)

    def _remove_stale_temporaries(self, point_id: str) -> None:
        """Those of killed runners in the point's folder and its attempts without a record."""
        remove_stale_temporaries(self.point_dir(point_id))
        for attempt in self.attempts(point_id):
            if not attempt.record_path.exists():
                remove_stale_temporaries(attempt.path)

    def records(self) -> Iterator[Record]:
        points = self.root / "points"
        if not points.is_dir():
            return
        for point_dir in sorted(points.iterdir()):
            for attempt in self.attempts(point_dir.name):
                record = attempt.record()
                if record is not None:
                    yield record


def attempt_status(folder: str) -> Tuple[Optional[str], bool]:
    """The run status of the attempt in ``folder`` (None: no record yet) and whether components
    asked for went unused: read from the top-level ``status`` line the store writes
    (``stored_status``); a record in any other form, or one whose components may not have been
    used, goes through ``Record.load``."""
    path = os.path.join(folder, "record.json")
    try:
        data = _read(path)
    except FileNotFoundError:
        return None, False
    status = stored_status(data)
    if status is not None:
        return status, False
    record = Record.load(Path(path))
    return record.status, bool((record.components_used or {}).get("not_used"))


def _read(path: str) -> bytes:
    """A whole file by os.read: half the cost of open() at 10,000 small files."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, 1 << 16)]
        while len(chunks[-1]) == 1 << 16:
            chunks.append(os.read(fd, 1 << 16))
    finally:
        os.close(fd)
    return b"".join(chunks)


def attempt_held(folder: str) -> bool:
    """True while some runner holds the attempt in ``folder`` (its ``.lock``, flock'd)."""
    try:
        fd = os.open(folder + "/.lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def campaigns_under(path: Path) -> List[Path]:
    """Campaign directories below ``path`` (not looking inside a campaign's points)."""
    found: List[Path] = []
    for here, dirs, files in os.walk(path):
        if "campaign.json" in files:
            found.append(Path(here))
            dirs[:] = [d for d in dirs if d not in ("points", "sessions", "report", "jobs")]
        dirs.sort()
    return sorted(found)
