"""Import published results as campaign records: ``commstack import FILE --out DIR``.

``betzy``         the Betzy cartex tables (GHEX-BENCH ``cartex/results/betzy/*.md``)
``matlab_table``  reading MATLAB ``table`` display text (used by ``betzy``)
``write``         cells -> points and records in a campaign, plus the layout for rendering
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from commstack import bounds
from commstack.benchmarks.base import ParseError


def import_file(path: Path, campaign_root: Path, origin: Optional[str] = None):
    """Parse ``path`` (format recognised from its content) and write it into the campaign.
    Returns an :class:`commstack.importers.write.ImportResult`."""
    from commstack.importers import betzy
    from commstack.importers.write import write_import
    from commstack.report.published import differences, render_published

    text = bounds.read_text(path, bounds.MAX_OUTPUT_BYTES, "an imported file")
    if not betzy.looks_like_betzy(text):
        raise ParseError(f"{path}: not a known published format (Betzy cartex tables: Markdown "
                         "with 'execution time [s] of 10000 exchange calls' and fenced tables)")
    result = write_import(betzy.parse_file(Path(path)), Path(campaign_root), text, origin)
    diff = differences(text, render_published(campaign_root, Path(path).stem))
    if diff:  # the records cannot print the file back: a bug, never silently accepted
        raise ParseError(f"{path}: round trip failed: " + " | ".join(diff))
    return result
