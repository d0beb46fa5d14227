"""Under a study's tables: the campaign's deviations from the published setup it reproduces, as
its records list them (the matrix's `deviations` and a stack's own, in each record's notes)."""

from __future__ import annotations

from typing import Dict, List

from commstack.matrix.model import DEVIATION
from commstack.report.studies.base import Context, Study
from commstack.store.record import Record


def deviation_lines(records: List[Record]) -> List[str]:
    """Each deviation the records list, with how many list it when not all do."""
    counts: Dict[str, int] = {}
    for record in records:
        for note in dict.fromkeys(n for n in record.notes if n.startswith(DEVIATION)):
            counts[note[len(DEVIATION):]] = counts.get(note[len(DEVIATION):], 0) + 1
    if not counts:
        return []
    lines = ["", "### Deviations from the published setup", "",
             f"What these runs did differently from the study they reproduce, as their records "
             f"list it ({len(records)} records): a difference from the published numbers may come "
             "from these as much as from the machine.", ""]
    return lines + [f"- {text}" + ("" if n == len(records) else f" ({n} of {len(records)} records)")
                    for text, n in counts.items()]


def _section(context: Context) -> List[str]:
    return deviation_lines(context.swept)


STUDY = Study("deviations", lambda c: any(n.startswith(DEVIATION) for r in c.swept for n in r.notes),
              _section)
