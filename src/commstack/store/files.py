"""Atomic, never-overwriting file writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class AlreadyExists(FileExistsError):
    """A result file exists already; commstack never overwrites one."""


def _temporary(path: Path, data: bytes) -> Path:
    """``data`` written and synced to a hidden file beside ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def write_new(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data`` atomically; fail if it exists (readers never see half a file)."""
    tmp = _temporary(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise AlreadyExists(f"{path} exists already; results are never overwritten") from None
    finally:
        os.unlink(tmp)


def replace(path: Path, data: bytes) -> None:
    """Atomically replace a derived file (an index or report regenerated from records)."""
    os.replace(_temporary(path, data), path)


def dump_json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n").encode()


def write_new_json(path: Path, obj: Any) -> None:
    write_new(path, dump_json(obj))


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())
