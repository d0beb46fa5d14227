"""Large tables of result rows stored as pointers into the run's own output.

A whole IMB-MPI1 run parses into some 300 rows; written out, their numbers take about as many
bytes as the output that printed them. A block of a ``rows_table`` whose rows stand on
consecutive lines of ``stdout.txt`` is therefore stored as where they stand: the first line and
the row count (``at``), the whitespace-separated field of each column (``fields``) and each
column's type (``types``: ``i`` int, ``f`` float, ``s`` text); a block laid out as the pointer
block before it (IMB prints one table per benchmark and process count, alike) leaves out
``columns``, ``fields`` and ``types``. The table then names the file and its sha256 (``output``).

Reading one back splits those lines and converts those fields; no benchmark parser is involved,
so what the record says does not change when a parser does. A block is stored so only when
reading it back gives exactly the parsed values (``4.43``, not ``4.430``; ``0`` an int where the
parser made an int), checked when the record is written; any other block keeps its values. The
output's sha256 is checked on every read: an output that changed, or is gone, makes the record
unreadable with a sentence naming the file, never a wrong number.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

_DECODE: Dict[str, Callable[[str], Any]] = {"i": int, "f": float, "s": str}
MIN_ROWS = 4  # a shorter block costs about as much as a pointer
_MAX_MAPPINGS = 64  # field assignments tried per candidate line (values like 0 match many fields)


class OutputTableError(ValueError):
    """A pointer block that cannot be read back."""


def points_into(table: Dict[str, Any]) -> bool:
    return isinstance(table, dict) and "output" in table


def point_into(table: Dict[str, Any], data: bytes, file: str) -> Dict[str, Any]:
    """``table`` with each block found on consecutive lines of ``data`` (the output ``file``)
    stored as a pointer; unchanged (the same object) when no block is."""
    lines = [line.split() for line in _lines(data)]
    where = _where(lines)
    blocks, cursor, pointed, layout = [], 0, False, None
    for block in table["blocks"]:
        found = _find(block, lines, where, cursor)
        if found is None:
            blocks.append(block)
            layout = None
            continue
        first, fields, types = found
        cursor, pointed = first + len(block["rows"]), True
        pointer = {"same": block["same"], "at": [first, len(block["rows"])]}
        if (block["columns"], fields, types) != layout:  # else: as the block before
            layout = (block["columns"], fields, types)
            pointer.update(columns=block["columns"], fields=fields, types=types)
        blocks.append(pointer)
    if not pointed:
        return table
    return dict(table, blocks=blocks,
                output={"file": file, "sha256": hashlib.sha256(data).hexdigest()})


def resolve(table: Dict[str, Any], folder: Optional[Path]) -> Dict[str, Any]:
    """``table`` with its pointer blocks read back into rows from the output beside the record."""
    if not points_into(table):
        return table
    output = table["output"]
    name = output.get("file") if isinstance(output, dict) else None
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise OutputTableError(f"its 'output' names no file beside the record ({output!r})")
    if folder is None:
        raise OutputTableError(f"its rows point into {name}, which is read only when the record "
                               "is read from its folder")
    path = folder / name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OutputTableError(f"its rows point into {path}, which cannot be read "
                               f"({exc.strerror or exc})") from None
    if hashlib.sha256(data).hexdigest() != output.get("sha256"):
        raise OutputTableError(f"its rows point into {path}, which changed after the record "
                               "was written (sha256 differs)")
    lines = _lines(data)
    blocks: List[Dict[str, Any]] = []
    layout: Dict[str, Any] = {}
    try:
        for block in table["blocks"]:
            if "at" in block:
                if "columns" in block:
                    layout = {k: block[k] for k in ("columns", "fields", "types")}
                elif not layout:
                    raise OutputTableError(f"a block pointing into {path} names no columns and "
                                           "follows no block that does")
                block = {"columns": layout["columns"], "same": block["same"],
                         "rows": _read(dict(block, **layout), lines, path)}
            else:
                layout = {}
            blocks.append(block)
    except (KeyError, TypeError) as exc:
        raise OutputTableError(f"a block pointing into {path} lacks {exc}") from None
    resolved = {k: v for k, v in table.items() if k != "output"}
    resolved["blocks"] = blocks
    return resolved


def _lines(data: bytes) -> List[str]:
    return data.decode("utf-8", errors="replace").split("\n")


def _read(block: Dict[str, Any], lines: List[str], path: Path) -> List[list]:
    try:
        first, count = block["at"]
        decoders = [_DECODE[t] for t in block["types"]]
        fields = block["fields"]
        if len(decoders) != len(fields) or len(fields) != len(block["columns"]):
            raise ValueError("columns, fields and types differ in number")
        rows = []
        for line in lines[first:first + count]:
            words = line.split()
            rows.append([decode(words[i]) for decode, i in zip(decoders, fields)])
        if len(rows) != count:
            raise ValueError(f"lines {first + 1}-{first + count} are past its end")
        return rows
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise OutputTableError(f"a block pointing into {path} cannot be read back ({exc})") \
            from None


def _where(lines: List[List[str]]) -> Dict[Tuple[str, Any], List[int]]:
    """(type letter, value) -> the lines, in order, with a word reading as that value: the
    output indexed once, so a block is looked for only on lines holding its first row's values."""
    where: Dict[Tuple[str, Any], List[int]] = {}
    for number, words in enumerate(lines):
        for word in words:
            for letter, decode in _DECODE.items():
                try:
                    key = (letter, decode(word))
                except ValueError:
                    continue
                found = where.setdefault(key, [])
                if not found or found[-1] != number:
                    found.append(number)
    return where


def _find(block: Dict[str, Any], lines: List[List[str]],
          where: Dict[Tuple[str, Any], List[int]], cursor: int):
    """(first line, field per column, types) where every row of ``block`` reads back exactly
    from consecutive lines, searching from ``cursor``; None when nowhere."""
    rows = block["rows"]
    if len(rows) < MIN_ROWS or not block["columns"]:
        return None
    types = _types(rows, len(block["columns"]))
    if types is None:
        return None
    try:
        holding = [where.get((t, v), []) for t, v in zip(types, rows[0])]
    except TypeError:  # an unhashable value
        return None
    if not all(holding):
        return None
    wanted = [_json(v) for v in rows[0]]
    starts = min(holding, key=len)  # the lines holding the first row's rarest value
    for first in starts[bisect.bisect_left(starts, cursor):]:
        if first + len(rows) > len(lines):
            break
        words = lines[first]
        candidates = [[i for i, word in enumerate(words) if _reads_as(word, t, want)]
                      for t, want in zip(types, wanted)]
        if not all(candidates):
            continue
        for fields in itertools.islice(itertools.product(*candidates), _MAX_MAPPINGS):
            if _all_rows_read_back(rows, lines, first, fields, types):
                return first, list(fields), types
    return None


def _types(rows: List[list], width: int) -> Optional[str]:
    """One type letter per column, when every value of the column has that type."""
    letters = []
    for column in range(width):
        kinds = {type(row[column]) for row in rows}
        if kinds == {int}:
            letters.append("i")
        elif kinds == {float}:
            letters.append("f")
        elif kinds == {str} and all(row[column] and len(row[column].split()) == 1
                                    and row[column] == row[column].strip() for row in rows):
            letters.append("s")
        else:
            return None  # bools, nulls, mixed, or text with spaces: kept as values
    return "".join(letters)


def _all_rows_read_back(rows: List[list], lines: List[List[str]], first: int,
                        fields: Sequence[int], types: str) -> bool:
    for offset, row in enumerate(rows[1:], start=1):
        words = lines[first + offset]
        if len(words) <= max(fields):
            return False
        if not all(_reads_as(words[i], t, _json(v)) for i, t, v in zip(fields, types, row)):
            return False
    return True


def _reads_as(word: str, type_letter: str, wanted_json: str) -> bool:
    try:
        return _json(_DECODE[type_letter](word)) == wanted_json
    except ValueError:
        return False


def _json(value: Any) -> str:
    return json.dumps(value)
