"""Numbers as the benchmark printed them, with their spread over repeats.

A metric's resolution is the unit of the last digit the benchmark printed (``quantum`` of the
summary: 0.01 for IMB's ``0.42``). Means are rounded to it, so a trimmed mean of 0.40, 0.42 and
0.43 reads ``0.42``, not ``0.41667``. Values a program computed (a quotient, say) have no printed
resolution: they get :data:`SIGNIFICANT` significant digits.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

SIGNIFICANT = 4
# More digits than this at the largest value means the numbers were computed, not printed.
MAX_PRINTED_DIGITS = 10


@dataclass(frozen=True)
class Resolution:
    """How to print the numbers of one metric: fixed ``decimals``, or significant digits."""

    decimals: Optional[int]  # None: SIGNIFICANT significant digits
    quantum: float = 0.0

    @classmethod
    def of(cls, quantum: float, values: Iterable[float]) -> "Resolution":
        finite = [abs(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
        if not quantum or quantum <= 0 or not finite:
            return cls(None)
        decimals = max(0, -round(math.log10(quantum)))
        largest = max(finite)
        digits = (math.floor(math.log10(largest)) + 1 if largest > 0 else 1) + decimals
        return cls(decimals if digits <= MAX_PRINTED_DIGITS else None, quantum)

    def format(self, value: Optional[float]) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "–"
        if self.decimals is not None:
            return f"{value:.{self.decimals}f}"
        return plain(value, SIGNIFICANT)

    def describe(self) -> str:
        if self.decimals is None:
            return f"{SIGNIFICANT} significant digits"
        return f"the printed resolution, {plain(self.quantum, 6)}"


def plain(value: float, significant: int = 6) -> str:
    """``value`` to ``significant`` digits without exponent notation (0.0006, 120000)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = format(decimal.Decimal(f"{value:.{significant}g}").normalize(), "f")
    return text


def cell(mean: Optional[float], low: Optional[float], high: Optional[float], n: Optional[int],
         res: Resolution, repeats: int, markers: Sequence[str] = ()) -> str:
    """``0.42 [0.38–0.48]``: the trimmed mean and the range over the repeats; `` n=3`` when fewer
    repeats than ``repeats`` succeeded; markers (``⚠ov``) after."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    text = res.format(mean)
    if n is not None and n > 1:
        text += f" [{res.format(low)}–{res.format(high)}]"
    if n is not None and n != repeats:
        text += f" n={int(n)}"
    return " ".join([text, *markers])
