"""Damaged copies of real outputs: what reaches commstack from runs that died mid-write, mail
archives and pasted tables. Shared by tests/test_hostile_inputs.py (Hypothesis) and bench/fuzz.py.

``FAMILIES``: per family the `commstack parse` options and the real outputs of tests/fixtures it
mutates. ``mutate(data, rng)``: one to three of: truncation, byte flips, repeated, shuffled and
deleted lines, CRLF line ends, NUL bytes, numbers replaced by extreme and non-finite values, a
line grown to 20-200 kB.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Callable, Dict, List, Tuple

FIXTURES = Path(__file__).parent / "fixtures"
# What a count or a time may be replaced by: non-finite, past any bound, negative.
EXTREMES = (b"nan", b"inf", b"-inf", b"1e309", b"-5", b"99999999999999999999999", b"0",
            b"18446744073709551616", b"NaN", b"1" * 5000)
_NUMBER = re.compile(rb"\d+(?:\.\d+)?")


def _files(*patterns: str) -> List[Path]:
    found = sorted({p for pattern in patterns for p in FIXTURES.glob(pattern) if p.is_file()})
    return [p for p in found if p.suffix in (".out", ".txt", ".err") and p.stat().st_size > 0]


def _placement_files() -> List[Path]:
    return [p for p in _files("placement/**/*") if _has_report(p.read_bytes())]


def _has_report(data: bytes) -> bool:
    return any(marker in data for marker in (b"bound to", b"is not bound", b"Process rank:",
                                             b"MPI startup()", b"binding:", b"bind=", b"bind_"))


# family -> (`commstack parse` options, fixture files)
FAMILIES: Dict[str, Tuple[List[str], Callable[[], List[Path]]]] = {
    "imb": (["--benchmark", "imb"], lambda: _files("imb/**/*.out", "imb/external/*.txt")),
    "osu": (["--benchmark", "osu"], lambda: _files("osu/**/*.out", "osu/external/*.txt")),
    "cartex": (["--benchmark", "cartex"], lambda: _files("cartex/*.out")),
    "gasnet": (["--benchmark", "gasnet"], lambda: _files("gasnet/*.out")),
    "placement": (["--placement"], _placement_files),
}


def _lines(data: bytes) -> List[bytes]:
    return data.splitlines(keepends=True) or [data]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def repeat_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    j = min(len(lines), i + rng.randint(1, 5))
    return b"".join(lines[:j] + lines[i:j] * rng.randint(1, 50) + lines[j:])


def shuffle_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    j = min(len(lines), i + rng.randint(2, 20))
    part = lines[i:j]
    rng.shuffle(part)
    return b"".join(lines[:i] + part + lines[j:])


def delete_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    return b"".join(lines[:i] + lines[i + rng.randint(1, 5):])


def crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n" if rng.random() < 0.8 else b"\r")


def nul_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out) + 1):0] = b"\0" * rng.randint(1, 3)
    return bytes(out)


def extreme_numbers(data: bytes, rng: random.Random) -> bytes:
    """Replace one to all numbers of a few lines (or of the whole text) by an extreme value."""
    numbers = list(_NUMBER.finditer(data))
    if not numbers:
        return data
    chosen = rng.sample(numbers, min(len(numbers), rng.choice((1, 1, 2, 5, len(numbers)))))
    out = bytearray(data)
    for m in sorted(chosen, key=lambda m: m.start(), reverse=True):
        out[m.start():m.end()] = rng.choice(EXTREMES)
    return bytes(out)


def long_line(data: bytes, rng: random.Random) -> bytes:
    """A line grown to 20 to 200 kB: a word repeated in place, or many lines run together (a
    regex that backtracks over a line takes time quadratic in its length)."""
    lines = _lines(data)
    i = rng.randrange(len(lines))
    words = lines[i].split() or [b"1"]
    word = rng.choice(words)[:20] or b"1"
    grown = word * (rng.randint(20_000, 200_000) // len(word))
    if rng.random() < 0.5:
        lines[i] = lines[i].replace(word, grown, 1) if word in lines[i] else grown + lines[i]
    else:
        lines[i] = b" ".join(line.rstrip(b"\r\n") for line in lines[i:] * 50)[:200_000] + b"\n"
    return b"".join(lines)


MUTATIONS = (truncate, flip_bytes, repeat_lines, shuffle_lines, delete_lines, crlf, nul_bytes,
             extreme_numbers, extreme_numbers, long_line)


def mutate(data: bytes, rng: random.Random) -> bytes:
    for mutation in rng.sample(MUTATIONS, rng.randint(1, 3)):
        data = mutation(data, rng) if data else data
    return data
