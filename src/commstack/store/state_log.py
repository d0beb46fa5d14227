"""A campaign's attempt states in one small file: ``<campaign>/index/.status.log``, derived from
the records and kept up to date by the store (hidden, so that readers of the folder as a
Parquet dataset skip it), so that ``commstack status`` reads one file instead
of every record (100,000 records: docs/measured.md).

One line per event, appended by the process that caused it (one ``write`` of a short line to a
file opened with O_APPEND, so lines of concurrent runners never interleave)::

    c <TAB> point <TAB> repeat <TAB> attempt                   claimed (Campaign.claim)
    s <TAB> point <TAB> repeat <TAB> attempt <TAB> status <TAB> u   record written (u: components
                                                                   asked for but not used, else -)

The records stay the truth. The log is trusted only while it is strictly newer than every point
folder and than ``points/`` itself: creating an attempt or a point (by any writer, of any version, or by
hand), or removing one, changes those folders' times, and the store's writers append their line
after that change. A log that is missing, unreadable or older than one of them is stale: the
reader scans the records as before and writes the log afresh (``rebuild``). An attempt the log
names as claimed but without a status (a runner still at work, or one killed between writing
its record and its line) is looked up in its folder on every read.

A rebuild holds ``index/.status.lock`` exclusively while it scans and replaces the log; appenders
hold it shared, so no line is appended to a log being replaced. The log is derived: any failure
to write it leaves the campaign as it was and readers fall back to the records.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

LOG = ".status.log"
LOCK = ".status.lock"
FOLDER = "index"
HEADER = b"# commstack status log 1\n"
# A line longer than this is not one the store wrote (bounded reading of a damaged file).
MAX_LINE = 4096

AttemptKey = Tuple[str, int, int]  # point id, repeat, attempt number


def log_path(campaign_root: Path) -> Path:
    return Path(campaign_root) / FOLDER / LOG


@contextlib.contextmanager
def _locked(campaign_root: Path, exclusive: bool) -> Iterator[None]:
    folder = Path(campaign_root) / FOLDER
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _append(campaign_root: Path, line: str) -> None:
    """Append one line; never the caller's failure (the log is derived, and a missing line
    only makes the next reader look at the folder or rebuild)."""
    with contextlib.suppress(OSError), _locked(campaign_root, exclusive=False):
        path = log_path(campaign_root)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            data = line.encode()
            if os.fstat(fd).st_size == 0:
                data = HEADER + data
            os.write(fd, data)
        finally:
            os.close(fd)


def claimed(campaign_root: Path, point_id: str, repeat: int, attempt: int) -> None:
    """Note a new attempt (after its folder exists)."""
    _append(campaign_root, f"c\t{point_id}\t{repeat}\t{attempt}\n")


def finished(campaign_root: Path, point_id: str, repeat: int, attempt: int, status: str,
             not_used: bool = False) -> None:
    """Note an attempt's record (after record.json is written)."""
    _append(campaign_root, f"s\t{point_id}\t{repeat}\t{attempt}\t{status}\t"
                           f"{'u' if not_used else '-'}\n")


def record_written(campaign_root: Path, record) -> None:
    """``finished`` for a Record just written (the store's writers call this)."""
    not_used = bool((record.components_used or {}).get("not_used"))
    finished(campaign_root, record.point_id, record.repeat, record.attempt, record.status,
             not_used)


@dataclass
class Logged:
    """What the log holds: every attempt claimed, with its status once its record is written."""

    # (point, repeat, attempt) -> status, None while the log has no record for it
    attempts: Dict[AttemptKey, Optional[str]] = field(default_factory=dict)
    not_used: List[AttemptKey] = field(default_factory=list)


def read(campaign_root: Path) -> Optional[Logged]:
    """The log, if it is there, well-formed and not stale; None means: scan the records."""
    root = Path(campaign_root)
    path = log_path(root)
    try:
        logged_at = os.stat(path).st_mtime_ns
        # Not older than: on a file system with coarse times (a second on some), a change in
        # the log's last tick might be unseen, so an equal time is stale too.
        if _newest_folder(root) >= logged_at:
            return None
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if not data.startswith(HEADER):
        return None
    out = Logged()
    attempts = out.attempts
    for line in data[len(HEADER):].decode(errors="replace").split("\n"):
        if not line:
            continue
        fields = line.split("\t")
        try:
            key = (fields[1], int(fields[2]), int(fields[3]))
        except (IndexError, ValueError):
            return None
        if len(line) > MAX_LINE:
            return None
        if fields[0] == "c" and len(fields) == 4:
            attempts.setdefault(key, None)
        elif fields[0] == "s" and len(fields) == 6:
            attempts[key] = fields[4]
            if fields[5] == "u":
                out.not_used.append(key)
        else:
            return None  # a line the store did not write: rebuild from the records
    return out


def _newest_folder(root: Path) -> int:
    """The latest change time of ``points/`` and of every point folder (nanoseconds)."""
    points = root / "points"
    newest = os.stat(points).st_mtime_ns
    stat = os.stat
    with os.scandir(points) as entries:
        names = [e.path for e in entries if e.is_dir()]
    for path in names:
        t = stat(path).st_mtime_ns
        if t > newest:
            newest = t
    return newest


def rebuild(campaign_root: Path, scan) -> Optional[Logged]:
    """Write the log afresh from the records: ``scan()`` reads them (under the exclusive lock,
    so no runner appends meanwhile) and returns [(key, status or None, not_used)]. Returns the
    scan's result as a Logged (also when the log cannot be written)."""
    root = Path(campaign_root)
    try:
        with _locked(root, exclusive=True):
            found = scan()
            logged = _as_logged(found)
            with contextlib.suppress(OSError):
                _write(root, found)
            return logged
    except OSError:  # no index folder can be made (a read-only campaign): the scan alone
        return _as_logged(scan())


def _as_logged(found: Iterable[Tuple[AttemptKey, Optional[str], bool]]) -> Logged:
    out = Logged()
    for key, status, not_used in found:
        out.attempts[key] = status
        if not_used:
            out.not_used.append(key)
    return out


def _write(root: Path, found: List[Tuple[AttemptKey, Optional[str], bool]]) -> None:
    lines = [HEADER.decode()]
    for (point, repeat, attempt), status, not_used in found:
        if status is None:
            lines.append(f"c\t{point}\t{repeat}\t{attempt}\n")
        else:
            lines.append(f"s\t{point}\t{repeat}\t{attempt}\t{status}\t{'u' if not_used else '-'}\n")
    path = log_path(root)
    tmp = path.with_name(f"{LOG}.{os.getpid()}.tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, path)
