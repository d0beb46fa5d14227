"""Read tables printed in MATLAB's ``table`` display layout (the published Betzy cartex tables).

One fenced code block holds one or more tables, each::

    ompi                                          <- optional title line
                                      h1f1      h5f1      <- column labels, centred
                                     ______    ______     <- one underline per column
                                                          <- blank
        benchmark_ghex_comm_mpi          2.9035    16.704 <- row label, then one cell per column

The underlines give each column's extent; labels and numbers are read inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from commstack.benchmarks.base import ParseError

_UNDERLINE = re.compile(r"^\s*_+(?:\s+_+)*\s*$")
Line = Tuple[int, str]  # (1-based line number in the file, text)


@dataclass
class RawRow:
    label: str
    cells: List[str]
    line: int


@dataclass
class RawTable:
    title: Optional[str]
    columns: List[str]
    rows: List[RawRow] = field(default_factory=list)
    line: int = 0  # line of the column labels


def is_underline(text: str) -> bool:
    return bool(_UNDERLINE.match(text))


def _groups(lines: List[Line]) -> List[List[Line]]:
    """Runs of non-blank lines."""
    groups: List[List[Line]] = []
    current: List[Line] = []
    for number, text in lines:
        if text.strip():
            current.append((number, text))
        elif current:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def _outside(text: str, spans: List[Tuple[int, int]]) -> str:
    """What a line holds outside the column spans (after the row-label area)."""
    rest, previous = [], spans[0][0]
    for start, end in spans:
        rest.append(text[previous:start])
        previous = end
    rest.append(text[previous:])
    return "".join(rest).strip()


def parse_tables(lines: List[Line]) -> List[RawTable]:
    """The tables of one code block; raises :class:`ParseError` naming the line."""
    groups = _groups(lines)
    tables: List[RawTable] = []
    index = 0
    while index < len(groups):
        head = groups[index]
        number, underline = head[-1]
        if not is_underline(underline) or len(head) not in (2, 3):
            raise ParseError("expected an (optional) title line, column labels and an "
                             "underline of ____ per column", head[0][0])
        spans = [(m.start(), m.end()) for m in re.finditer(r"_+", underline)]
        header_number, header = head[-2]
        if header[:spans[0][0]].strip() or _outside(header, spans):
            raise ParseError("column label outside its underline", header_number)
        table = RawTable(title=head[0][1].strip() if len(head) == 3 else None,
                         columns=[header[s:e].strip() for s, e in spans], line=header_number)
        if index + 1 >= len(groups) or is_underline(groups[index + 1][-1][1]):
            raise ParseError("table without rows", number)
        for row_number, text in groups[index + 1]:
            if _outside(text, spans):
                raise ParseError(f"text outside the columns: {text.strip()!r}", row_number)
            label = text[:spans[0][0]].strip()
            cells = [text[s:e].strip() for s, e in spans]
            if not label or not all(cells):
                raise ParseError(f"row without a label or with an empty cell: {text.strip()!r}",
                                 row_number)
            table.rows.append(RawRow(label, cells, row_number))
        tables.append(table)
        index += 2
    return tables
