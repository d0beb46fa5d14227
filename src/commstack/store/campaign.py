"""The result store of one campaign: results/<machine>/<campaign>/.

Layout:
  campaign.json                     who/what created it (written once)
  sessions/<id>/                    one per `commstack run`: matrix copy, provenance, topology
  points/<point id>/point.json      the point's parameters (written once)
  points/<point id>/rep<k>.try<n>/  one attempt at repeat k: stdout.txt, stderr.txt, record.json
  records.csv                       tidy table of every record (derived, regenerated)
  index/                            Parquet index (store.tidy_index) and status log
                                    (store.state_log), derived from the records

An attempt directory is claimed with mkdir (exclusive) and holds a lock while it runs, so two
runners never take the same attempt and a directory left by a killed runner is recognised.
Files are written through hidden temporaries (store.files); a run of the campaign removes those
left by killed runners.
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
from commstack.store.record import Record

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
        """Create the campaign if it is new; remove temporaries left by killed runners."""
        (self.root / "points").mkdir(parents=True, exist_ok=True)
        (self.root / "sessions").mkdir(exist_ok=True)
        remove_stale_temporaries(self.root)
        if not (self.root / "campaign.json").exists():
            try:
                write_new_json(self.root / "campaign.json", info)
            except FileExistsError:  # another runner created it first
                pass

    def new_session(self) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        base = f"{stamp}-{socket.gethostname()}-{os.getpid()}"
        path = self.root / "sessions" / base
        path.mkdir(parents=True)
        return path

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
        records = [a.record() for a in attempts]
        if any(r and r.ok for r in records):
            return DONE
        if any(r is None and a.is_locked() for a, r in zip(attempts, records)):
            return RUNNING
        finished = [r for r in records if r and r.status in FAILURES]
        if finished and records[-1] is not None and records[-1].status in FAILURES:
            return FAILED
        return PENDING

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

    def records(self) -> Iterator[Record]:
        points = self.root / "points"
        if not points.is_dir():
            return
        for point_dir in sorted(points.iterdir()):
            for attempt in self.attempts(point_dir.name):
                record = attempt.record()
                if record is not None:
                    yield record


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
