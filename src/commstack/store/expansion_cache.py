"""A campaign's matrix expanded once: ``<campaign>/index/.points-<key>.json``, so that
``commstack status`` of a 30,000-point matrix does not expand it (and hash every point) again.

The key is the sha256 of the matrix text and of the source of ``commstack.matrix`` (the code that
expands and names points), so another matrix or another expansion rule is another file; the file
holds each point's benchmark, id and parameters. Derived and optional: an unreadable, damaged or
foreign file is ignored (the matrix is expanded), and a failure to write it changes nothing.
A point is cached only when its parameters read back from JSON exactly as they are.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Callable, List, Optional

from commstack.matrix.model import Matrix, Point

FOLDER = "index"
MAX_BYTES = 256 << 20  # bounded reading


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    import commstack
    import commstack.matrix

    digest = hashlib.sha256(commstack.__version__.encode())
    for path in sorted(Path(commstack.matrix.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def _path(campaign_root: Path, matrix: Matrix) -> Path:
    key = hashlib.sha256((_code_digest() + "\0" + matrix.text).encode()).hexdigest()[:24]
    return Path(campaign_root) / FOLDER / f".points-{key}.json"


def points(campaign_root: Path, matrix: Matrix, expand: Callable[[Matrix], List[Point]]
           ) -> List[Point]:
    """``expand(matrix)``, read from the campaign's cache when it holds this matrix's points."""
    path = _path(campaign_root, matrix)
    cached = _read(path)
    if cached is not None:
        return cached
    found = expand(matrix)
    _write(path, found)
    return found


def ids(campaign_root: Path, matrix: Matrix, expand: Callable[[Matrix], List[Point]]
        ) -> List[str]:
    """The points' ids alone, in order (``.ids-<key>.txt``, one per line): what ``status``
    needs of a matrix without optional stacks."""
    path = _path(campaign_root, matrix)
    light = path.with_name(path.name.replace(".points-", ".ids-").replace(".json", ".txt"))
    try:
        if light.stat().st_size <= MAX_BYTES:
            text = light.read_text()
            if text.endswith("\n"):
                return text.split("\n")[:-1]
    except (OSError, ValueError):
        pass
    found = [p.id for p in points(campaign_root, matrix, expand)]
    with contextlib.suppress(OSError):
        light.parent.mkdir(exist_ok=True)
        tmp = light.with_name(f"{light.name}.{os.getpid()}.tmp")
        tmp.write_text("".join(i + "\n" for i in found))
        os.replace(tmp, light)
    return found


def _read(path: Path) -> Optional[List[Point]]:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        data = json.loads(path.read_bytes())
        out = []
        for benchmark, point_id, params in data["points"]:
            point = Point(benchmark, tuple((k, v) for k, v in params))
            point.__dict__["id"] = point_id  # Point.id is a cached property
            out.append(point)
        return out
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, found: List[Point]) -> None:
    rows = [[p.benchmark, p.id, [list(kv) for kv in p.params]] for p in found]
    text = json.dumps({"points": rows}, separators=(",", ":"))
    back = json.loads(text)["points"]
    if any(tuple((k, v) for k, v in row[2]) != p.params for row, p in zip(back, found)):
        return  # a value JSON does not keep as it is (a tuple, ...): not cached
    with contextlib.suppress(OSError):
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
