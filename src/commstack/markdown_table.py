"""The one writer of GitHub-flavoured Markdown tables in commstack.

Reports, comparisons, the results index and the tuner's decisions all print their tables with
:func:`table`, so a cell's ``|`` or line break can never split a row. This module imports nothing
of commstack: anything may use it without an import cycle.
"""

from __future__ import annotations

from typing import Iterable, List, Sequence

_RULES = {"l": "---", "r": "---:", "c": ":---:"}


def escape(value: object) -> str:
    """A cell's text: ``None`` empty, ``|`` escaped, line breaks as ``<br>``."""
    if value is None:
        return ""
    text = str(value).replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("|", "\\|").replace("\n", "<br>")


def _line(cells: Sequence[str]) -> str:
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def table(headers: Sequence[object], rows: Iterable[Sequence[object]], align: str = "") -> List[str]:
    """The lines of a table: header, alignment row, one line per row.

    ``align``: one letter per column, ``l`` (left, the default for columns it does not reach),
    ``r`` (right: numbers) or ``c`` (centre). A row with fewer cells than headers is padded with
    empty cells; one with more is an error, not a silently shifted table."""
    width = len(headers)
    unknown = set(align) - set(_RULES)
    if unknown or len(align) > width:
        raise ValueError(f"align {align!r}: one of l, r, c per column ({width} columns)")
    lines = [_line([escape(h) for h in headers]),
             "|" + "|".join(_RULES[a] for a in align.ljust(width, "l")) + "|"]
    for number, row in enumerate(rows):
        cells = [escape(c) for c in row]
        if len(cells) > width:
            raise ValueError(f"row {number} has {len(cells)} cells, the table {width} columns: "
                             f"{cells}")
        lines.append(_line(cells + [""] * (width - len(cells))))
    return lines
