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

Read: the lines of attempts done (``s ... ok -``: nearly every line of a large log) are
matched by one regular expression and kept as text (``pair``), the other lines parsed one by
one. Every attempt leaves its claim line behind its status line, so a log with more than
``COMPACT_ABOVE`` such lines is rewritten by its reader with one line per attempt (when nothing
was appended meanwhile); 10^6 attempts then read in about a second (docs/measured.md). A log is
started empty with its campaign (``start``); an appender never creates one, since a log started
later would lack the attempts before it (header version 1 had that flaw: such a log is rebuilt).

A rebuild holds ``index/.status.lock`` exclusively while it scans and replaces the log; appenders
hold it shared, so no line is appended to a log being replaced. The log is derived: any failure
to write it leaves the campaign as it was and readers fall back to the records.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

LOG = ".status.log"
LOCK = ".status.lock"
FOLDER = "index"
HEADER = b"# commstack status log 2\n"  # 1: appenders could start a log lacking earlier attempts
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


def start(campaign_root: Path) -> None:
    """A new campaign's log, empty (``Campaign.ensure``, before its first attempt): appenders
    never create one, since a log made by an appender would lack every attempt before it."""
    with contextlib.suppress(OSError), _locked(campaign_root, exclusive=True):
        with os.scandir(Path(campaign_root) / "points") as entries:
            if next(entries, None) is not None:
                return  # attempts may exist already: a reader rebuilds it from the records
        fd = os.open(log_path(campaign_root), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, HEADER)
        finally:
            os.close(fd)


def _append(campaign_root: Path, line: str) -> None:
    """Append one line to the log, when there is one; never the caller's failure (the log is
    derived, and a missing line only makes the next reader look at the folder or rebuild).
    Without a log (removed with index/, or a campaign an older commstack wrote) nothing is
    appended: the next reader rebuilds it from the records."""
    with contextlib.suppress(OSError), _locked(campaign_root, exclusive=False):
        fd = os.open(log_path(campaign_root), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line.encode())
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


def pair(point_id: str, repeat: int) -> str:
    """A (point, repeat) as ``Logged.done`` holds it."""
    return f"{point_id}\t{repeat}"


@dataclass
class Logged:
    """What the log holds. Done pairs are kept as text alone (``pair``): a log of 10^6 attempts
    is read by one regular expression, not a Python object per line."""

    # (point, repeat) with an attempt whose status is ok: done, whatever else it has
    done: Set[str] = field(default_factory=set)
    # every attempt of a pair not done -> its status (None: claimed, no record noted yet)
    attempts: Dict[AttemptKey, Optional[str]] = field(default_factory=dict)
    not_used: List[AttemptKey] = field(default_factory=list)


# The line of an attempt done with the components asked for: nearly every line of a large log.
_DONE = re.compile(r"^s\t([^\t\n]{1,1024}\t[0-9]{1,9})\t[0-9]{1,9}\tok\t-$", re.M)
# Lines other than those (claims, failures, unused components) beyond which a reader rewrites
# the log compact: a claim line whose attempt is finished is read on every call otherwise.
COMPACT_ABOVE = 10_000


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
    if not data.startswith(HEADER) or not data.endswith(b"\n"):
        return None
    text = data[len(HEADER):].decode(errors="replace")
    done = _DONE.findall(text)
    others = text.count("\n") - len(done)
    if not others:  # every line an attempt done: the common case
        return Logged(done=set(done))
    if others <= COMPACT_ABOVE:
        lines = _other_lines(text, others)
        if lines is not None:  # the few other lines alone, found by what they hold
            found = _parse("\n".join(lines))
            if found is None:
                return None
            logged = _as_logged(found)
            logged.done.update(done)
            logged.attempts = {k: v for k, v in logged.attempts.items()
                               if pair(k[0], k[1]) not in logged.done}
            return logged
    found = _parse(text)
    if found is None:
        return None  # a line the store did not write: rebuild from the records
    if others > COMPACT_ABOVE and len(found) < len(done) + others:
        _compact(root, data, found)
    return _as_logged(found)


# What a line other than an attempt done holds: a claim, or a status other than ok with the
# components used. A status the store writes besides these makes the counts differ: the
# whole log is parsed then.
_NOT_DONE = ("crash", "timeout", "parse-error", "launch-error", "placement-mismatch",
             "interrupted")


def _other_lines(text: str, count: int) -> Optional[List[str]]:
    """The ``count`` lines of ``text`` that are not an attempt done, found by searching what
    they hold (C-level searches, a Python step per line found); None when the lines found are
    not exactly ``count``."""
    starts = set()
    markers = ["\nc\t", "\tok\tu\n"] + [f"\t{status}\t" for status in _NOT_DONE]
    if text.startswith("c\t"):
        starts.add(0)
    for marker in markers:
        at = text.find(marker)
        while at >= 0:
            starts.add(at + 1 if marker == "\nc\t" else text.rfind("\n", 0, at) + 1)
            if len(starts) > count:
                return None
            at = text.find(marker, at + 1)
    if len(starts) != count:
        return None
    return [text[start:text.find("\n", start)] for start in sorted(starts)]


def _parse(text: str) -> Optional[List[Tuple[AttemptKey, Optional[str], bool]]]:
    """Every attempt the log names, its last status and whether components went unused."""
    attempts: Dict[AttemptKey, Optional[str]] = {}
    not_used: Set[AttemptKey] = set()
    for line in text.split("\n"):
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
                not_used.add(key)
        else:
            return None
    return [(key, status, key in not_used) for key, status in attempts.items()]


def _compact(root: Path, data: bytes, found: List[Tuple[AttemptKey, Optional[str], bool]]
             ) -> None:
    """The log rewritten with one line per attempt, when no line was appended since ``data``."""
    with contextlib.suppress(OSError), _locked(root, exclusive=True):
        if log_path(root).read_bytes() == data:
            _write(root, found)


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
    others = []
    for key, status, not_used in found:
        if status == "ok":
            out.done.add(pair(key[0], key[1]))
        else:
            others.append((key, status))
        if not_used:
            out.not_used.append(key)
    out.attempts = {key: status for key, status in others if pair(key[0], key[1]) not in out.done}
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
