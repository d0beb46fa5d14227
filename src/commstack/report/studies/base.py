"""What a study plugin is: when it applies to a campaign, and the report section it writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from commstack.report.load import Samples
from commstack.store.campaign import Campaign
from commstack.store.files import read_json
from commstack.store.record import Record


@dataclass
class Context:
    """Everything a study sees of the campaign being reported."""

    campaign: Campaign
    records: List[Record]          # this campaign's records, imported ones included
    out_dir: Path                  # report/: sections write their PNGs and files here
    joined_campaigns: List[Campaign] = field(default_factory=list)  # `commstack report --with`
    joined: List[Record] = field(default_factory=list)  # their records that were run, not imported
    samples: Optional[Samples] = None  # every record's figures of merit (report.load), if read

    @cached_property
    def swept(self) -> List[Record]:
        """The records of runs (made here, or imported from their raw output), not numbers
        imported from a published file."""
        return [r for r in self.records if not r.published]

    @cached_property
    def info(self) -> Dict[str, Any]:
        """campaign.json."""
        return read_json(self.campaign.root / "campaign.json")


@dataclass(frozen=True)
class Study:
    """A report section in the style of a study or a published layout.

    ``applies`` decides from the campaign alone whether the study has anything to say;
    ``section`` returns its Markdown lines (it may write PNGs and files into ``out_dir``, and
    return no lines when the records hold nothing it can show). ``before_tables``: printed before
    the per-benchmark tables (layouts of published tables) rather than after them.
    ``uses_joined``: the section also shows the records of the campaigns given with ``--with``.
    ``files``: files besides PNGs it may write into ``out_dir``; one the report does not name
    is stale and removed. ``needs_rows(record, campaign_json)``: the section reads this record's
    result rows (the report keeps only those; the tables use the samples of every record).
    """

    name: str
    applies: Callable[[Context], bool]
    section: Callable[[Context], List[str]]
    before_tables: bool = False
    uses_joined: bool = False
    files: Tuple[str, ...] = ()
    needs_rows: Callable[[Record, Dict[str, Any]], bool] = lambda record, info: False
