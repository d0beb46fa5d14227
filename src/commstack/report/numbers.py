"""Numbers as the benchmark printed them, with their spread over repeats.

Every number in a table has :data:`SIGNIFICANT` significant digits (whole numbers keep all
their digits), so that ``0.04333`` and ``3.207`` line up, except where the benchmark printed
coarser: a metric's resolution is the unit of the last digit the benchmark printed (``quantum``
of the summary: 0.01 for IMB's ``0.42``), and no number is shown finer than that, so a mean of
0.40, 0.42 and 0.43 (summary.csv's trimmed mean) reads ``0.42``, not ``0.4167``, and 3207.45 reads
``3207``. Values a program computed (a quotient, say) have no printed resolution: significant digits only.

Every cell, in the standard tables and in the layouts of published studies alike, has one shape
(:func:`interval_cell`): ``median [low–high] (n)`` and the markers of unclean runs after it;
:func:`reading_notes` says how to read such cells under a table that has no legend of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Iterable, List, Optional, Sequence

from commstack.plain_number import plain
from commstack.stats import LEVEL, MIN_CI_SAMPLES

SIGNIFICANT = 4
# More digits than this at the largest value means the numbers were computed, not printed.
MAX_PRINTED_DIGITS = 10

OVERSUBSCRIBED, SUBRUN = "⚠ov", "⚠sub"
MARKERS = {
    OVERSUBSCRIBED: "oversubscribed: the job had more processes than cores, so ranks took turns "
                    "on the cores; its times measure the oversubscription, not the configuration",
    SUBRUN: "sub-run: IMB measured this smaller process count inside a larger job (its -npmin "
            "steps); the job's other ranks were present and waiting, so it is not a run of that "
            "size on its own",
}


def unclean_markers(oversubscribed: bool, subrun: bool) -> List[str]:
    """The markers a number of such runs carries (``⚠sub``, ``⚠ov``), in the tables' order."""
    return ([SUBRUN] if subrun else []) + ([OVERSUBSCRIBED] if oversubscribed else [])


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
        return significant(value, SIGNIFICANT, self.decimals)

    def format_many(self, values) -> "list[list[str]]":
        """:meth:`format` of every value of a 2-d array (rows of strings)."""
        import numpy as np

        values = np.asarray(values, dtype=float)
        finite = np.isfinite(values) & (values != 0)
        magnitude = np.where(finite, np.abs(values), 1.0)
        exponent = np.floor(np.log10(magnitude))
        decimals = np.maximum(0, SIGNIFICANT - 1 - exponent)
        # Rounding can add a digit (9.9996 -> 10.00) only this close below the next power of
        # ten; Python's own round() decides there, as in significant().
        near = finite & (decimals > 0) & (magnitude >= 10.0 ** (exponent + 1) * (1 - 10.0 ** -SIGNIFICANT))
        if self.decimals is not None:
            capped = np.minimum(decimals, self.decimals)
        else:
            capped = decimals
        out = []
        for row in zip(values, decimals, exponent, finite, near, capped):
            out.append([(f"{v:.{int(c)}f}" if not n else self._one(v, int(d), int(e))) if f
                        else self.format(v) for v, d, e, f, n, c in zip(*row)])
        return out

    def _one(self, value: float, decimals: int, exponent: int) -> str:
        if decimals and abs(round(value, decimals)) >= 10.0 ** (exponent + 1):
            decimals -= 1
        if self.decimals is not None and decimals > self.decimals:
            decimals = self.decimals
        return f"{value:.{decimals}f}"

    def describe(self) -> str:
        if self.decimals is None:
            return f"{SIGNIFICANT} significant digits"
        return (f"{SIGNIFICANT} significant digits, none finer than the printed resolution "
                f"{plain(self.quantum, 6)}")


def significant(value: float, digits: int = SIGNIFICANT, most_decimals: Optional[int] = None
                ) -> str:
    """``value`` with ``digits`` significant digits and no exponent; whole numbers keep every
    digit (``123457``); at most ``most_decimals`` decimals (a printed resolution)."""
    if not math.isfinite(value):
        return f"{value:g}"
    if value == 0:
        return f"{0:.{most_decimals or 0}f}"
    exponent = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - exponent)
    if decimals and abs(round(value, decimals)) >= 10.0 ** (exponent + 1):
        decimals -= 1  # rounding made it a digit longer (9.9996 -> 10.00)
    if most_decimals is not None:
        decimals = min(decimals, most_decimals)
    return f"{value:.{decimals}f}"


def interval_cell(median: str, low: Optional[str], high: Optional[str], n: Optional[int],
                  markers: Sequence[str] = ()) -> str:
    """The shape of every cell, from its numbers already formatted: ``0.42 [0.38–0.48] (7)``,
    ``0.42 (5)`` without an interval, markers (``⚠ov``) after."""
    text = median
    if low is not None and high is not None:
        text += f" [{low}–{high}]"
    if n is not None:
        text += f" ({int(n)})"
    return " ".join([text, *markers])


def cell(center: Optional[float], low: Optional[float], high: Optional[float], n: Optional[int],
         res: Resolution, repeats: int = 0, markers: Sequence[str] = ()) -> str:
    """``0.42 [0.38–0.48] (7)``: the median, its 95 % interval (absent below six repeats: no
    distribution-free interval exists there) and the count of repeats; markers (``⚠ov``) after.
    ``repeats`` is kept for callers that pass it; every cell now shows its count."""
    if center is None or (isinstance(center, float) and math.isnan(center)):
        return "–"
    bounded = low is not None and high is not None and not (
        isinstance(low, float) and math.isnan(low))
    return interval_cell(res.format(center), res.format(low) if bounded else None,
                         res.format(high) if bounded else None, n, markers)


def reading_notes(cells: int, without_interval: int, markers: Collection[str] = (),
                  what: str = "repeats") -> List[str]:
    """Sentences under a study's table: how its cells read, how many have no interval (fewer than
    :data:`~commstack.stats.MIN_CI_SAMPLES` ``what``) and what each marker present means."""
    level = f"{LEVEL * 100:g} %"
    out = [f"A cell `median [{level} interval] (n)` is the median over the n {what} that "
           f"succeeded and, in brackets, its distribution-free {level} confidence interval "
           "(order statistics; no normality assumed)."]
    if without_interval:
        out.append(f"{without_interval} of {cells} such cells have fewer than {MIN_CI_SAMPLES} "
                   f"{what} and show no interval: the interval needs {MIN_CI_SAMPLES} {what} "
                   f"(the fewest whose range covers the median with {level}), so such a median "
                   "is a single estimate, not a finding.")
    for marker in sorted(markers):
        out.append(f"`{marker}` {MARKERS[marker]}.")
    return out
