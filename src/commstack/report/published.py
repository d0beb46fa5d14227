"""Print a campaign's records in the layout of a published file, and check a round trip.

``imports/<stem>.json`` (written by ``commstack import``) holds the layout of a published file;
:func:`render_published` prints it again with every number taken from the campaign's records, as
the file printed it (the median alone); :func:`render_layout` prints any records in a layout,
each cell with its interval and count unless asked for the published form.
:func:`differences` compares two such texts table by table: labels and numbers must be equal,
whitespace may differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from commstack.report.layout import CellIndex, Layout, counted, render_markdown, render_text
from commstack.report.numbers import reading_notes
from commstack.simulated import MARK
from commstack.store.campaign import Campaign
from commstack.store.files import read_json
from commstack.store.record import Record


@dataclass
class Imported:
    stem: str
    info: dict          # imports/<stem>.json without the layout
    layout: Layout


def imported_layouts(campaign_root: Path) -> List[Imported]:
    out = []
    for path in sorted((Path(campaign_root) / "imports").glob("*.json")):
        data = read_json(path)
        data.pop("text", None)
        layout = Layout.from_dict(data.pop("layout"))
        out.append(Imported(path.stem, data, layout))
    return out


def render_published(campaign_root: Path, stem: str, as_published: bool = True,
                     records: Optional[List[Record]] = None) -> str:
    """The tables of the imported file ``stem`` printed from the campaign's records."""
    found = [i for i in imported_layouts(campaign_root) if i.stem == stem]
    if not found:
        raise FileNotFoundError(f"{campaign_root}/imports/{stem}.json: no such import")
    layout = found[0].layout
    records = records if records is not None else list(Campaign(Path(campaign_root)).records())
    index = CellIndex.from_records(records, layout.metric)
    return render_text(layout, index.lookup, as_published, intervals=False)


def render_layout(layout: Layout, records: List[Record], markdown: bool = False,
                  as_published: bool = True, intervals: bool = True) -> str:
    """The records in ``layout``: MATLAB-style text, or Markdown tables; each cell ``median
    [interval] (n)`` (``intervals=False``, text only: the median alone, as published)."""
    index = CellIndex.from_records(records, layout.metric)
    if markdown:
        return render_markdown(layout, index.lookup, as_published)
    return render_text(layout, index.lookup, as_published, intervals)


def layout_notes(layout: Layout, records: List[Record], what: str = "repeats") -> List[str]:
    """How the cells of ``layout`` printed from ``records`` read: the interval, the cells
    without one (fewer than 6 ``what``), the markers present."""
    index = CellIndex.from_records(records, layout.metric)
    cells, without, markers = counted(layout, index.lookup)
    notes = reading_notes(cells, without, markers, what) if cells else []
    if cells and index.simulated:
        notes.append(f"`{MARK}`: computed by a simulator on the platform "
                     f"{' and '.join(sorted(set(index.simulated.values())))}, not measured.")
    return notes


# --- round trip -------------------------------------------------------------------------------

_LABEL_LINE = re.compile(r"^(#{2,}\s|.*numbering order: \*\*)")


def structure(text: str) -> List[str]:
    """What must survive a round trip: headings of sections with tables, order labels, and every
    line inside code blocks, with runs of whitespace collapsed and blank lines dropped."""
    out: List[str] = []
    pending: List[str] = []
    inside = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if not inside:
                out += pending
                pending = []
            inside = not inside
            continue
        norm = " ".join(line.split())
        if inside:
            if norm:
                out.append(norm)
        elif _LABEL_LINE.match(line):
            if line.startswith("## "):
                pending = [norm]
            elif line.startswith("### "):
                pending = [p for p in pending if p.startswith("## ")] + [norm]
            else:
                pending = [p for p in pending if p.startswith("#")] + [norm]
    return out


def differences(published: str, rendered: str, limit: int = 20) -> List[str]:
    """Lines that differ between the published text and the rendered one (empty: equal)."""
    import difflib

    a, b = structure(published), structure(rendered)
    if a == b:
        return []
    diff = list(difflib.unified_diff(a, b, "published", "rendered", lineterm="", n=0))
    return diff[:limit]
