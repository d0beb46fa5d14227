"""records.csv: every result row of campaigns with all its fields, one row per parsed row,
written on request (``commstack query CAMPAIGN --records``) by Arrow from the records' own
tables of rows, a block of rows at a time, never a Python object per row.

Columns: the record's (``campaign``, ``machine``, ``matrix_benchmark``: the matrix's benchmark,
``point_id``, ``repeat``, ``attempt``, ``status``: the run's, ``exit_code``, ``stack``,
``flavour``, ``ranks``, ``nodes``, ``oversubscribed``, ``start``, ``end``, ``duration_s``,
``placement``, ``simulated``: the platform of a simulated record, empty for a measured one),
``param.<name>`` for each parameter, then the row's own fields as its parser made them
(``benchmark``: the row's, IMB's Allreduce or OSU's osu_latency; ``np``, ``bytes``, the figures;
``row_status``: the row's status where it has one). A record without rows has one row with the
record's columns only.

commstack wrote records.csv at the end of every run until it cost the whole campaign each time
(26 s and 164 MB at 10,000 records of 70 rows: docs/measured.md); a records.csv left by an
earlier version is stale after the next run, which removes it and says where it went
(``retire``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO, Dict, List, Optional, Sequence

from commstack.optional import require
from commstack.simulated import platform
from commstack.store import tidy_index
from commstack.store.campaign import Campaign
from commstack.store.record import (
    Record,
    RecordError,
    read_json,
    resolved_table,
    rows_table,
    table_blocks,
)

NAME = "records.csv"
RENAMED = {"benchmark": "matrix_benchmark"}
RECORD_COLUMNS = [
    "campaign", "machine", "benchmark", "point_id", "repeat", "attempt", "status", "exit_code",
    "stack", "flavour", "ranks", "nodes", "oversubscribed", "start", "end", "duration_s",
    "placement", "simulated",
]
HOW = "`commstack query {campaign} --records > records.csv` writes it (docs/reference/results.md)"


def retire(campaign_root: Path) -> Optional[str]:
    """Remove a records.csv an earlier commstack left (stale once a run adds records); the
    sentence that says so, or None when there was none."""
    path = Path(campaign_root) / NAME
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    return (f"{path}: removed, as runs no longer keep it up to date; "
            + HOW.format(campaign=campaign_root))


def write_csv(campaign_roots: Sequence[Path], sink: BinaryIO) -> int:
    """records.csv of the campaigns to ``sink``; its rows."""
    import pyarrow.csv as pcsv

    table = records_table(campaign_roots)
    pcsv.write_csv(table, sink)
    return table.num_rows


def records_table(campaign_roots: Sequence[Path]):
    """The records.csv table of the campaigns' finished records, in the store's order (point,
    repeat, attempt, then the record's rows as parsed). Rows are read a block at a time from
    each record's table of rows (schema 3: one list of values per column), never as a dict
    per row."""
    columns = _Columns()
    for root in campaign_roots:
        campaign = Campaign(Path(root))
        for _, path in sorted(tidy_index.finished_records(campaign).items()):
            try:
                columns.add(path)
            except FileNotFoundError:  # removed since it was listed
                continue
    return columns.table()


class _Columns:
    """records.csv's columns, one list each, padded with None where a row has no value."""

    def __init__(self) -> None:
        self.data: Dict[str, List[Any]] = {RENAMED.get(c, c): [] for c in RECORD_COLUMNS}
        self.rows = 0

    def add(self, path: str) -> None:
        data = read_json(path)
        where = str(path)
        if not isinstance(data, dict):
            raise RecordError(f"{where}: not a JSON object")
        parsed = data.get("parsed")
        if isinstance(parsed, dict) and "blocks" in parsed:  # schema 3 on: a table of rows
            record = Record.from_dict(dict(data, parsed=None), where)
            table = resolved_table(parsed, Path(path).parent, f"{where}: parsed")
        else:  # rows as a list of objects (earlier schemas)
            record = Record.from_dict(data, where)
            table = rows_table(record.parsed)
        blocks = table_blocks(table, f"{where}: parsed")
        count = sum(len(rows) for _, _, rows in blocks) or 1
        for name, value in self._record_values(record).items():
            self._column(name).extend([value] * count)
        for same, columns, rows in blocks:
            size = len(rows)
            for name, value in same.items():
                self._column(_row_name(name)).extend([value] * size)
            for name, values in zip(columns, zip(*rows)):
                self._column(_row_name(name)).extend(values)
            self._pad(self.rows + size)
            self.rows += size
        if not blocks:
            self.rows += 1
        self._pad(self.rows)

    @staticmethod
    def _record_values(record: Record) -> Dict[str, Any]:
        values = {RENAMED.get(c, c): getattr(record, c) for c in RECORD_COLUMNS
                  if c not in ("placement", "simulated")}
        values["placement"] = record.placement.verdict if record.placement else None
        values["simulated"] = platform(record.simulation)
        for name, value in record.params.items():
            values.setdefault(f"param.{name}", value)
        return values

    def _column(self, name: str) -> List[Any]:
        column = self.data.get(name)
        if column is None:
            column = self.data[name] = [None] * self.rows
        return column

    def _pad(self, length: int) -> None:
        for column in self.data.values():
            if len(column) < length:
                column.extend([None] * (length - len(column)))

    def table(self):
        pa = require(*tidy_index.PYARROW)
        return pa.table({name: _array(values) for name, values in self.data.items()})


def _row_name(name: str) -> str:
    """A row's own ``status`` is ``row_status`` (``status`` is the run's)."""
    return "row_status" if name == "status" else name


def _array(values: List[Any]):
    """One column as Arrow infers it; values of several JSON types, lists or objects, as text."""
    pa = require(*tidy_index.PYARROW)
    try:
        array = pa.array(values)
        if not pa.types.is_nested(array.type):
            return array
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    return pa.array([_text(v) for v in values], pa.string())


def _text(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)
