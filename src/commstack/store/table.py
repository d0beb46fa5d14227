"""The tidy table: one row per parsed result row of every record, written as records.csv.

``simulated``: the platform a simulated record's simulator ran (``commstack.simulated``), empty
for a measured one: a simulated number never reads as a measured one."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Dict, Iterable, List

from commstack.simulated import platform
from commstack.store.files import replace
from commstack.store.record import Record

# Record-level columns; `benchmark` and `status` of a parsed row keep those names for the row
# (PingPong, ok), so the record's are renamed.
RENAMED = {"benchmark": "matrix_benchmark"}
RECORD_COLUMNS = [
    "campaign", "machine", "benchmark", "point_id", "repeat", "attempt", "status", "exit_code",
    "stack", "flavour", "ranks", "nodes", "oversubscribed", "start", "end", "duration_s",
]


def tidy_rows(records: Iterable[Record]) -> List[Dict[str, object]]:
    rows: List[Dict[str, object]] = []
    for rec in records:
        base = {RENAMED.get(col, col): getattr(rec, col) for col in RECORD_COLUMNS}
        base["flavour"] = rec.flavour
        base["placement"] = rec.placement.verdict if rec.placement else None
        base["simulated"] = platform(rec.simulation)
        for name, value in rec.params.items():
            base.setdefault(f"param.{name}", value)
        if not rec.parsed:
            rows.append(base)
            continue
        for item in rec.parsed:
            row = dict(base)
            for key, value in item.items():
                row["row_status" if key == "status" else key] = value
            rows.append(row)
    return rows


def to_csv(rows: List[Dict[str, object]]) -> str:
    columns: List[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return buf.getvalue()


def _cell(value: object) -> object:
    if isinstance(value, (list, dict)):
        import json

        return json.dumps(value, sort_keys=True)
    return "" if value is None else value


def current(path: Path, newest: float) -> bool:
    """Whether records.csv at ``path`` is newer than every record (``newest``: the newest
    record.json's mtime) and has every column this code writes (one written before the
    ``simulated`` column was added is written again)."""
    try:
        if path.stat().st_mtime < newest:
            return False
        with open(path, newline="") as handle:
            header = next(csv.reader(handle), [])
    except OSError:
        return False
    return "simulated" in header


def write_records_csv(campaign_root: Path, records: Iterable[Record]) -> Path:
    path = Path(campaign_root) / "records.csv"
    replace(path, to_csv(tidy_rows(records)).encode())
    return path
