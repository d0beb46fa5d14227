"""Write imported numbers into a campaign, as records that look like sweep records.

Each distinct cell becomes one point (``points/<id>/point.json``) with one record
(``rep1.try1/record.json``): status ``ok``, the dimensions as ``params``, the number as a parsed
value, ``"imported": true`` and a ``source`` (file, checksum, where the number is printed)
instead of argv, environment and timings. The layout goes to ``imports/<file stem>.json`` so that
``commstack report`` can print the published tables again from the records.

Writes never overwrite: importing the same file again writes nothing; a file whose numbers differ
from those already imported for the same dimensions is refused.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import List, Optional

import commstack
from commstack import flavours
from commstack.benchmarks import cartex
from commstack.importers.betzy import METRIC, UNIT, Cell, ParsedFile
from commstack.matrix.model import Point
from commstack.store.campaign import Campaign
from commstack.store.files import AlreadyExists, dump_json, write_new, write_new_json
from commstack.store.record import Record, StackInfo

BENCHMARK = cartex.NAME  # Betzy's tables are cartex's


@dataclass
class ImportResult:
    campaign: Path
    source: str
    values: int                     # numbers in the file (distinct cells)
    new_points: int
    already: int                    # identical records found from an earlier import
    missing: int                    # cells printed as NaN
    tables: int
    corrections: List[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.source}: {self.values} numbers from {self.tables} tables "
                f"({self.missing} cells NaN) -> {self.campaign}: {self.new_points} new points, "
                f"{self.already} already imported")


def record_for(cell: Cell, parsed: ParsedFile, campaign: Campaign) -> Record:
    part = cell.appearances[0].part
    params = dict(cell.dims)
    params.update(parsed.decomposition_args.get((part, str(params.get("decomposition"))), {}))
    point = Point(BENCHMARK, tuple(sorted(params.items())))
    toolchain = params.get("toolchain")
    nodes, per_node = params.get("nodes"), params.get("ranks_per_node")
    return Record(
        imported=True,
        campaign=campaign.name,
        machine=campaign.machine,
        benchmark=BENCHMARK,
        point_id=point.id,
        repeat=1,
        attempt=1,
        params=params,
        stack=toolchain,
        stack_info=StackInfo(flavour=flavours.by_toolchain(str(toolchain))),
        ranks=nodes * per_node if nodes and per_node else None,
        nodes=nodes,
        status="ok",
        parsed=[{METRIC: cell.value, "mean_s": float(f"{cell.value / 1e4:.12g}")}],
        units={METRIC: UNIT, "mean_s": "s per exchange call (derived: printed value / 10000)"},
        notes=cell.notes,
        source={**parsed.layout.source, "printed": [asdict(a) for a in cell.appearances]},
    )


def write_import(parsed: ParsedFile, root: Path, text: str, origin: Optional[str] = None
                 ) -> ImportResult:
    """Write ``parsed`` into the campaign at ``root``; ``text`` (the file as read) is kept in
    ``imports/<stem>.json`` like a run keeps its stdout; ``origin`` says where it comes from."""
    if origin:
        parsed.layout.source["origin"] = origin
    campaign = Campaign(Path(root))
    campaign.ensure({"campaign": campaign.name, "machine": campaign.machine, "imported": True,
                     "benchmark": BENCHMARK, "created": time.time(),
                     "commstack_version": commstack.__version__})
    source = parsed.layout.source["file"]
    result = ImportResult(campaign.root, source, len(parsed.cells), 0, 0, parsed.missing,
                          sum(1 for _ in parsed.layout.tables()), parsed.corrections)
    records = [record_for(cell, parsed, campaign) for cell in parsed.cells]
    for record in records:  # check everything before writing anything
        existing = _existing(campaign, record)
        if existing is not None and existing.parsed != record.parsed:
            raise AlreadyExists(
                f"{campaign.root}: point {record.point_id} ({_label(record)}) was imported "
                f"from {(existing.source or {}).get('file')} with {existing.parsed[0][METRIC]}; "
                f"{source} says {record.parsed[0][METRIC]}")
    imports = campaign.root / "imports"
    imports.mkdir(exist_ok=True)
    _write_once(imports / f"{Path(source).stem}.json", dump_json({
        "source": parsed.layout.source, "metric": METRIC, "unit": UNIT,
        "numbers": len(parsed.cells), "nan_cells": parsed.missing,
        "corrections": parsed.corrections, "notes": parsed.notes,
        "layout": parsed.layout.to_dict(), "text": text}))
    for record in records:
        if _existing(campaign, record) is not None:
            result.already += 1
            continue
        directory = campaign.point_dir(record.point_id)
        (directory / "rep1.try1").mkdir(parents=True, exist_ok=True)
        if not (directory / "point.json").exists():
            write_new_json(directory / "point.json", {"benchmark": BENCHMARK, "imported": True,
                                                      "params": record.params})
        write_new_json(directory / "rep1.try1" / "record.json", record.to_dict())
        result.new_points += 1
    return result


def _existing(campaign: Campaign, record: Record) -> Optional[Record]:
    path = campaign.point_dir(record.point_id) / "rep1.try1" / "record.json"
    return Record.load(path) if path.exists() else None


def _write_once(path: Path, data: bytes) -> None:
    """Create ``path``; an identical file is fine (imported before), a different one is not."""
    if path.exists():
        if path.read_bytes() != data:
            raise AlreadyExists(f"{path} exists with different content (another version of "
                                "the file, or another --origin); results are never overwritten "
                                "(import into a new campaign)")
        return
    write_new(path, data)


def _label(record: Record) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(record.params.items()))
