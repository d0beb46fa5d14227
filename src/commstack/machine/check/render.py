"""`commstack machine check`'s output: an aligned table for a terminal, or JSON for scripts."""

from __future__ import annotations

import json
from typing import List

from commstack.machine.check.checks import show
from commstack.machine.check.result import NOT_HERE, OK, SYMBOLS, Outcome

HEADERS = ("fact", "declared", "measured", "", "how / why not")
WIDEST = 48  # a longer declared/measured value is cut in the table (--json has it whole)


def _cut(text: str) -> str:
    return text if len(text) <= WIDEST else text[:WIDEST - 1] + "…"


def table(outcome: Outcome) -> str:
    rows = [(c.fact + (" [cheap]" if c.cheap else ""), _cut(f"{show(c.declared)} ({c.source})"),
             _cut(show(c.measured)), c.symbol, c.how + (f" — why: {c.why}" if c.why and c.verdict != OK else ""))
            for c in outcome.checks]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(HEADERS[:4])]
    lines: List[str] = [f"machine {outcome.machine}: "
                        + ("this machine" if outcome.this_machine else "NOT this machine")
                        + f" ({outcome.identity})"]
    for row in [HEADERS, *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])
    counts = {v: sum(c.verdict == v for c in outcome.checks) for v in SYMBOLS}
    if outcome.this_machine:
        lines.append(f"{counts['ok']} ✔, {counts['contradiction']} ✘ (contradiction), "
                     f"{counts['unknown']} ? (could not be read here)")
    else:
        lines.append(f"{counts[NOT_HERE]} facts not checked: run `commstack machine check "
                     f"{outcome.machine}` on {outcome.machine} (a login node, then inside an "
                     "allocation)")
    return "\n".join(lines)


def as_json(outcome: Outcome) -> str:
    return json.dumps(outcome.to_dict(), indent=1, default=str)
