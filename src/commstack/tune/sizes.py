"""Sizes where they matter: a step measured at a coarse set of message sizes first, then at the
sizes between two where the best candidate changes (a plan's ``coarse_sizes: N``).

The case's sizes are the powers of two of its ``msglog`` range (IMB's ``-msglog a:b``). The
step's candidates run every N-th of them, the last always included (``N = 4`` over ``0:20``: 1,
16, 256, 4 KiB, 64 KiB, 1 MiB), given to the benchmark as a list (IMB's ``-msglen``). The step's
rule names the best candidate at each of those sizes (the incumbent where none is better); where
two neighbouring sizes have different bests, the sizes between them are measured too, by those
two and the incumbent, at the step's repeats, so the band boundaries the step writes are where
the data places them, not halfway between two far sizes. The step decides on every size measured
(one corrected family, as always). A run is then shorter (the large sizes, which cost most,
mostly skipped); the refining adds a few runs of the candidates that matter.

A band between two coarse sizes with the same best is taken as it stands: a candidate best only
at sizes between two coarse ones where another is best on both sides is not looked for.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Hashable, List, Optional, Tuple

from commstack.matrix.model import MatrixError
from commstack.tune import decide as rule

MSGLOG = "msglog"
MSGLEN = "msglen"


def load_coarse(path: Path, raw: Any, options: Any) -> Optional[int]:
    """A plan's ``coarse_sizes`` (None: every size at once); ``options``: the benchmark's."""
    if raw is None or raw is False:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 2:
        raise MatrixError(f"{path}: coarse_sizes: expected a whole number >= 2 (every N-th "
                          f"power of two of the msglog range first), got {raw!r}")
    if MSGLEN not in options or MSGLOG not in options:
        raise MatrixError(f"{path}: coarse_sizes: the benchmark takes no list of message sizes "
                          f"({MSGLEN}); only a benchmark with {MSGLOG} and {MSGLEN} (IMB) can "
                          "be measured at chosen sizes")
    return raw


def exponents(msglog: Any, where: str) -> Tuple[int, int]:
    """``"a:b"`` (or ``"b"``, IMB's ``0:b``) as (a, b)."""
    parts = str(msglog).split(":")
    try:
        low, high = (0, int(parts[0])) if len(parts) == 1 else (int(parts[0]), int(parts[1]))
    except ValueError:
        raise MatrixError(f"{where}: coarse_sizes: msglog {msglog!r} is not 'a:b'") from None
    if not 0 <= low <= high <= 62:
        raise MatrixError(f"{where}: coarse_sizes: msglog {msglog!r}: expected 0 <= a <= b <= 62")
    return low, high


def coarse(msglog: Any, every: int, where: str) -> List[int]:
    """Every ``every``-th power of two of the msglog range, its last always."""
    low, high = exponents(msglog, where)
    found = list(range(low, high + 1, every))
    if found[-1] != high:
        found.append(high)
    return [2 ** e for e in found]


@dataclass
class Refinement:
    """What a step measures again between coarse sizes: who, and where."""

    sizes: List[int] = field(default_factory=list)
    candidates: List[Hashable] = field(default_factory=list)
    between: List[Tuple[int, int]] = field(default_factory=list)  # coarse neighbours

    def as_dict(self, named) -> Dict[str, Any]:
        return {"between": [list(pair) for pair in self.between], "sizes": self.sizes,
                "candidates": [named(c) for c in self.candidates]}


def best_at(outcome: rule.Outcome, size: int) -> Hashable:
    for band in outcome.bands:
        if band.first is not None and band.first <= size <= band.last:
            return band.best
    return outcome.incumbent


def near_best(data: rule.Measurements, size: int, threshold: float) -> List[Hashable]:
    """The candidates whose median at ``size`` is within ``threshold`` of the lowest there."""
    medians = {c: statistics.median(by[size]) for c, by in data.items() if by.get(size)}
    if not medians:
        return []
    best = min(medians.values())
    return [c for c, m in medians.items() if m <= best * (1 + threshold)]


def refinement(outcome: rule.Outcome, data: rule.Measurements, threshold: float) -> Refinement:
    """The sizes strictly between two measured neighbours whose bests differ, and who is
    measured there: the incumbent, those bests, and every candidate within ``threshold`` of
    the fastest at either neighbour (one that may be best in between)."""
    found = Refinement()
    sizes = sorted(s for s in data[outcome.incumbent] if s is not None)
    for low, high in zip(sizes, sizes[1:]):
        left, right = best_at(outcome, low), best_at(outcome, high)
        between = [2 ** e for e in range(low.bit_length(), high.bit_length() - 1)]
        if left == right or not between:
            continue
        found.between.append((low, high))
        found.sizes += between
        close = near_best(data, low, threshold) + near_best(data, high, threshold)
        for cand in (outcome.incumbent, left, right, *close):
            if cand not in found.candidates:
                found.candidates.append(cand)
    return found


def merged(*parts: rule.Measurements) -> rule.Measurements:
    """Measurements of the same candidates at different sizes, together."""
    out: rule.Measurements = {}
    for part in parts:
        for cand, by_size in part.items():
            for size, samples in by_size.items():
                out.setdefault(cand, {}).setdefault(size, []).extend(samples)
    return out
