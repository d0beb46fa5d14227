"""What a reader accepts: file sizes and the values no machine can have.

Every reader of outside text (benchmark outputs, binding reports, imported files, matrices,
plans, machine.yaml, record.json) goes through these: a value past a bound is an error naming the
file and line, never an allocation or a loop sized by it. The limits are in
docs/reference/input-limits.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Union

from commstack.parse_error import ParseError

MiB = 1 << 20
# A benchmark output, a binding report or an imported file (a whole IMB-MPI1 run at 512 ranks
# prints about 1 MiB; an stderr full of UCX debug lines some tens).
MAX_OUTPUT_BYTES = 64 * MiB
# A matrix, a plan, machine.yaml, record.json: written by hand or by commstack, kilobytes.
MAX_CONFIG_BYTES = 4 * MiB

# Values no machine has: the largest systems run some 10^7 processes on 10^5 nodes with a few
# hundred processors each.
MAX_RANKS = 1 << 24  # processes of one run, and a rank number
MAX_NODES = 1 << 20
MAX_CPUS = 1 << 16  # processor numbers of one node (OS or logical)
MAX_BYTES = (1 << 63) - 1  # a message size (the benchmarks' own counters are 64-bit at most)
MAX_COUNT = (1 << 63) - 1  # repetitions, iterations


class InputTooLarge(ValueError):
    """A file larger than commstack reads of its kind."""


class NotText(ValueError):
    """A file that is not UTF-8 text where text is read strictly."""


def size_checked(path: Union[str, Path], limit: int, what: str) -> int:
    """The size of ``path``; InputTooLarge when it is past ``limit`` (nothing read)."""
    size = Path(path).stat().st_size
    if size > limit:
        raise InputTooLarge(f"{path}: {size / MiB:.1f} MiB is larger than commstack reads of "
                            f"{what} ({limit // MiB} MiB); cut it to the part that matters")
    return size


def read_text(path: Union[str, Path], limit: int, what: str, errors: str = "strict") -> str:
    """The text of ``path``, refused in one sentence when larger than ``limit``."""
    size_checked(path, limit, what)
    try:
        with open(path, encoding="utf-8", errors=errors) as handle:
            text = handle.read(limit + 1)  # the file may have grown since stat
    except UnicodeDecodeError as exc:
        raise NotText(f"{path}: not UTF-8 text ({exc.reason} at byte "
                      f"{exc.object[exc.start:exc.start + 1]!r}); {what} is text") from None
    if len(text) > limit:
        raise InputTooLarge(f"{path}: grew past {limit // MiB} MiB while being read")
    return text


def integer(token: str, what: str, line: Optional[int], most: int, least: int = 0) -> int:
    """``token`` as an int in [least, most]; ParseError naming ``what`` and the line otherwise."""
    try:
        value = int(token)
    except ValueError:
        raise ParseError(f"{what}: {_quote(token)} is not a whole number", line) from None
    if not least <= value <= most:
        raise ParseError(f"{what} {_quote(token)} is past what any machine has "
                         f"(read {least} to {most})", line)
    return value


def finite(token: str, what: str, line: Optional[int]) -> float:
    """``token`` as a finite float; ParseError naming ``what`` and the line otherwise."""
    try:
        value = float(token)
    except ValueError:
        raise ParseError(f"{what}: {_quote(token)} is not a number", line) from None
    if not math.isfinite(value):
        raise ParseError(f"{what}: {_quote(token)} is not a finite number", line)
    return value


def _quote(token: str) -> str:
    return repr(token if len(token) <= 40 else token[:40] + "...")
