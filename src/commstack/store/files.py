"""Atomic, never-overwriting file writes.

Each write goes to a hidden temporary beside its target, ``.<name>.<pid>@<host>.tmp``, removed
when the write fails; one left by a killed process is removed by ``remove_stale_temporaries``
(each run of a campaign calls it). A failed write raises OSError naming the target.
"""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from typing import Any, BinaryIO, Callable, List, Union


class AlreadyExists(FileExistsError):
    """A result file exists already; commstack never overwrites one."""


_HOST = socket.gethostname().replace("/", "_")
# .<name>.<pid>@<host>.tmp; .<name>.<pid>.tmp is how commstack named them before the host was
# part of the name (no file commstack writes has an @ in its name).
_TAGGED = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)@(?P<host>[^@]+)\.tmp$")
_UNTAGGED = re.compile(r"^\.(?P<name>[^@]+)\.(?P<pid>\d+)\.tmp$")


def _temporary(path: Path, data: Union[bytes, Callable[[BinaryIO], None]]) -> Path:
    """``data`` (bytes, or a function writing to the open file) written and synced to a hidden
    file beside ``path``; nothing is left behind when that fails (the error then names
    ``path``, the file that could not be written)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}@{_HOST}.tmp")
    try:
        with open(tmp, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException as exc:
        _unlink_quietly(tmp)
        if isinstance(exc, OSError) and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    return tmp


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_new(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data`` atomically; fail if it exists (readers never see half a file)."""
    tmp = _temporary(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise AlreadyExists(f"{path} exists already; results are never overwritten") from None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        os.unlink(tmp)


def replace(path: Path, data: Union[bytes, Callable[[BinaryIO], None]]) -> None:
    """Atomically replace a derived file (an index or report regenerated from records);
    ``data`` may be a function that writes it to the open file (a large file, streamed)."""
    tmp = _temporary(path, data)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        _unlink_quietly(tmp)
        raise


def remove_stale_temporaries(folder: Path, recursive: bool = False) -> List[Path]:
    """Remove the temporaries in ``folder`` (and below it when ``recursive``) whose writer is
    gone (a killed process) and return them. Only hidden ``.<name>.<pid>[@<host>].tmp`` files
    are touched, never a result, and never one whose writer may still run: a live pid, or a
    writer on another host."""
    removed = []
    walked = os.walk(folder) if recursive else [(str(folder), [], _names(folder))]
    for directory, _, names in walked:
        for name in names:
            if not name.endswith(".tmp") or _writer_may_run(name):
                continue
            path = Path(directory, name)
            try:
                os.unlink(path)
            except FileNotFoundError:  # another runner removed it first
                continue
            removed.append(path)
    return removed


def _names(folder: Path) -> List[str]:
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _writer_may_run(name: str) -> bool:
    """False only for a temporary whose writer is known to be gone: a process of this host
    (untagged temporaries count as this host's) whose pid no longer exists."""
    match = _TAGGED.match(name) or _UNTAGGED.match(name)
    if match is None or match.groupdict().get("host", _HOST) != _HOST:
        return True
    try:
        os.kill(int(match.group("pid")), 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # exists but not ours to signal; not a pid at all
        return True
    return True


def dump_json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n").encode()


def write_new_json(path: Path, obj: Any) -> None:
    write_new(path, dump_json(obj))


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())
