"""A number as people write it: to a few significant digits, never in exponent notation."""

from __future__ import annotations

import decimal
import math


def plain(value: float, significant: int = 6) -> str:
    """``value`` to ``significant`` digits without exponent notation (0.0006, 120000)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    text = format(decimal.Decimal(f"{value:.{significant}g}").normalize(), "f")
    return text
