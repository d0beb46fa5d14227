"""Tables in the layout of the published Betzy cartex results.

* imported files (``commstack import``): each file's tables printed again from the records, as
  published in ``report/<file stem>.md``, with corrected labels and notes in the report;
* swept cartex campaigns: "chosen results"-style tables (rows executables, columns hXfY).

In the report every cell reads as the standard tables' do, ``median [95 % interval] (n)`` with
the markers of unclean runs (published values: one number, ``(1)``); only the file printed again
as published has the medians alone, since it must equal the published file.
"""

from __future__ import annotations

from typing import List

from commstack.benchmarks import cartex
from commstack.report.layout import AmbiguousCell, auto_layout
from commstack.report.published import imported_layouts, layout_notes, render_layout
from commstack.report.studies.base import Context, Study
from commstack.store.files import replace


def published_tables(context: Context) -> List[str]:
    campaign, records = context.campaign, context.records
    lines: List[str] = []
    for item in imported_layouts(campaign.root):
        source = item.layout.source
        text = render_layout(item.layout, records, as_published=True, intervals=False)
        replace(context.out_dir / f"{item.stem}.md",
                (f"<!-- printed by commstack from the records of {campaign.machine}/"
                 f"{campaign.name}, in the layout of {source.get('file')} -->\n\n"
                 + text).encode())
        lines += ["", f"## Published tables: {source.get('file')}", "",
                  f"{item.info.get('numbers')} numbers ({item.layout.unit}) imported from "
                  f"`{source.get('file')}` (sha256 {str(source.get('sha256'))[:12]}); "
                  f"{item.info.get('nan_cells')} cells printed as NaN. Printed again from the "
                  f"records in the published layout: [{item.stem}.md]({item.stem}.md).", ""]
        lines += [f"- {n}" for n in item.info.get("notes", [])]
        lines += [f"- corrected: {n}" for n in item.info.get("corrections", [])]
        lines += ["", "Published values are one number per cell (n = 1: the study ran each "
                  "configuration once). " + " ".join(layout_notes(item.layout, records)),
                  "", render_layout(item.layout, records, markdown=True, as_published=False)]
    return lines


def cartex_tables(context: Context) -> List[str]:
    records = context.swept
    layout = auto_layout(records)
    if layout is None:
        return []
    try:
        text = render_layout(layout, records)
    except AmbiguousCell as exc:
        return ["", "## Halo exchange tables", "", f"Not printed: {exc}."]
    return ["", "## Halo exchange tables (Betzy layout)", "",
            f"{layout.unit}; rows executables, columns hXfY = halo X, fields Y; numbers with 5 "
            "significant digits, as the published tables. "
            + " ".join(layout_notes(layout, records)), "", text]


PUBLISHED = Study("betzy-published", lambda c: any(r.imported for r in c.records),
                  published_tables, before_tables=True,
                  needs_rows=lambda record, info: record.imported)
CARTEX = Study("betzy-cartex", lambda c: any(r.benchmark == cartex.NAME for r in c.swept),
               cartex_tables, before_tables=True,
               needs_rows=lambda record, info: record.benchmark == cartex.NAME)
