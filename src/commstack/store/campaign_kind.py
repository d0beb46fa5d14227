"""A campaign's kind, read from its record files: measured, simulated (on which platforms), or
both (commstack.simulated says what a kind is and how every reader words it)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from commstack.simulated import Kind, kind_of_records
from commstack.store.campaign import Campaign


def kind_of_campaign(root: Path) -> Kind:
    """The kind of a campaign's records (read from their record.json files)."""
    return kind_of_records(Campaign(Path(root)).records())


def kind_of_campaigns(roots: Sequence[Path]) -> Kind:
    kinds = [kind_of_campaign(r) for r in roots]
    return Kind(tuple(sorted({p for k in kinds for p in k.platforms})),
                any(k.measured for k in kinds),
                tuple(sorted({s for k in kinds for s in k.simulators})))
