"""Snapshot what commstack reads today, so a refactor can prove it reads the same afterwards.

    python tests/golden/snapshot.py            # rewrite the snapshots (only on purpose)

Writes, next to this file:
  parsed/<fixture path>.json   every parser fixture: rows, notes, build config, or the ParseError
  tidy/<name>/records.csv      the tidy table (one row per parsed row) of each committed campaign
  tidy/<name>/summary.csv      its aggregate over repeats (the report's summary.csv)

tests/test_golden.py compares today's code against these files. They were first written by
commit 896b2ee (before benchmarks became one module each and the record got a type).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = REPO / "tests" / "fixtures"
# Committed campaigns whose tables must never change: results/ and old-shape test campaigns.
CAMPAIGNS = {
    "betzy-reference": REPO / "results" / "betzy" / "reference",
    "schema1-local": FIXTURES / "campaigns" / "local" / "schema1-local",
}
PARSERS = {"imb": "imb", "cartex": "cartex", "gasnet": "gasnet", "osu": "osu",
           "reprompi": "reprompi"}


def fixture_outputs():
    for family in PARSERS:
        for path in sorted((FIXTURES / family).rglob("*.out")):
            yield family, path


def parsed_snapshot(family: str, path: Path) -> dict:
    from commstack.benchmarks.base import ParseError
    from commstack.benchmarks.registry import parser_for

    try:
        output = parser_for(family)(path.read_text(errors="replace"))
    except ParseError as exc:
        return {"error": str(exc)}
    return {"rows": output.rows, "notes": list(output.notes),
            "build_config": output.build_config}


def tidy_tables(root: Path) -> "tuple[str, str]":
    """records.csv as ``commstack query --records`` writes it (from the index of a copy of the
    campaign, so the committed folder is left as it is), and the summary over repeats."""
    import shutil
    import tempfile

    from commstack.aggregate import aggregate
    from commstack.store.campaign import Campaign
    from commstack.store.table import write_csv

    records = list(Campaign(root).records())
    summary = sorted(aggregate(records), key=lambda r: json.dumps(r, sort_keys=True, default=str))
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / root.parent.name / root.name
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns("index"))
        sink = io.BytesIO()
        write_csv([copy], sink)
    return sink.getvalue().decode(), to_csv(summary)


def to_csv(rows: list) -> str:
    columns: list = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v, sort_keys=True) if isinstance(v, (list, dict))
                         else "" if v is None else v for k, v in row.items()})
    return buf.getvalue()


def canonical_csv(text: str) -> list:
    """Rows as sorted dicts without empty cells: column order, absent columns and how a
    number or a truth value is spelt (Python's csv module wrote 1.0 and True, Arrow writes 1
    and true) do not count."""
    rows = [{k: _canonical(v) for k, v in row.items() if v not in ("", None)}
            for row in csv.DictReader(io.StringIO(text))]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def _canonical(value: str) -> str:
    if value.lower() in ("true", "false"):
        return value.lower()
    try:
        return repr(float(value))
    except ValueError:
        return value


def main() -> int:
    for family, path in fixture_outputs():
        out = HERE / "parsed" / path.relative_to(FIXTURES).with_suffix(".json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(parsed_snapshot(family, path), indent=1, sort_keys=True) + "\n")
    for name, root in CAMPAIGNS.items():
        records, summary = tidy_tables(root)
        folder = HERE / "tidy" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "records.csv").write_text(records)
        (folder / "summary.csv").write_text(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
