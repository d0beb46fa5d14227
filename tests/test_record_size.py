"""Must show: what a campaign stores per record beside the benchmark's own output (record.json,
the point's files, its share of the Parquet index) stays within 6 KB on a real sweep of whole
IMB-MPI1 runs (every benchmark, msglog 0:16, two ranks: some 300 result rows each), record.json is
smaller than that output, and the compact form (schema 3, its large tables pointing into the
output) reads back exactly what was measured and matches the record's JSON Schema."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from textwrap import dedent

import jsonschema
import pytest

from commstack.store import tidy_index
from commstack.store.files import dump_json
from commstack.store.record import Record, schema
from tests.sweeps import commstack

pytestmark = pytest.mark.mpi

BUDGET = 6 * 1024
RAW = ("stdout.txt", "stderr.txt")
MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 2
    timeout: 300
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      msglog: "0:16"
      iter: 10
      ranks_per_node: 2
      mapping: block
    product:
      I_MPI_ADJUST_ALLREDUCE: [1, 2]
    """)


@pytest.fixture(scope="module")
def campaign(impi_root, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("size")
    matrix = tmp / "matrices" / "local" / "size.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX)
    done = commstack("run", str(matrix), "--out", str(tmp / "results"))
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "results" / "local" / "size"


def test_bytes_per_record_beyond_the_raw_output(campaign):
    pytest.importorskip("pyarrow", reason="skipped: pyarrow not installed (pip install 'commstack[test]')")
    records = sorted(campaign.glob("points/*/rep*.try*/record.json"))
    assert len(records) == 4
    stored = sum(p.stat().st_size for p in (campaign / "points").rglob("*")
                 if p.is_file() and p.name not in RAW)
    index = sum(p.stat().st_size for p in (campaign / "index").glob("*.parquet"))
    assert index > 0, "the sweep wrote the index"
    # The index's share: what each record adds to it (a Parquet file's footer and column
    # headers, a few KB, are the campaign's, as campaign.json and the sessions are).
    one = len(tidy_index._parquet_bytes(tidy_index._table_of([Record.load(records[0])])))
    per_record = stored / len(records) + (index - one) / (len(records) - 1)
    assert per_record <= BUDGET, f"{per_record:.0f} bytes per record beyond the raw output"
    for path in records:
        raw = sum((path.parent / name).stat().st_size for name in RAW)
        record = Record.load(path)
        assert len(record.parsed) >= 300
        assert path.stat().st_size < raw
        # The schema-2 form (indented, every field, rows as objects) took several times more.
        assert path.stat().st_size * 3 < len(dump_json(record.to_dict()))


def test_compact_form_reads_back_what_was_measured(campaign):
    record_schema = schema()
    for path in sorted(campaign.glob("points/*/rep*.try*/record.json")):
        data = json.loads(path.read_text())
        jsonschema.validate(data, record_schema)
        assert data["schema"] == 4 and "blocks" in data["parsed"]  # 4: it points into stdout.txt
        output = (path.parent / "stdout.txt").read_bytes()
        assert data["parsed"]["output"] == {"file": "stdout.txt",
                                            "sha256": hashlib.sha256(output).hexdigest()}
        assert sum("at" in b for b in data["parsed"]["blocks"]) > len(data["parsed"]["blocks"]) / 2
        record = Record.load(path)
        jsonschema.validate(record.to_dict(), record_schema)
        text = (path.parent / "stdout.txt").read_text()
        assert record.parsed == json.loads(json.dumps(
            [dict(sorted(row.items())) for row in _parse(text)]))
        assert Record.from_dict(json.loads(record.dumps())) == record
        assert Record.from_dict(record.to_dict()) == record


def _parse(text: str):
    from commstack.benchmarks import registry

    return registry.parser_for("imb-mpi1")(text).rows


def test_rows_table_keeps_every_key_and_type():
    from commstack.store.record import rows_table, table_rows

    rows = [{"benchmark": "PingPong", "bytes": 0, "t_us": 1.0, "np": 2},
            {"benchmark": "PingPong", "bytes": 1, "t_us": 1, "np": 2},
            {"benchmark": "Allreduce", "bytes": 4, "t_avg_us": 2.5, "np": 2, "flag": True},
            {"benchmark": "Allreduce", "bytes": 4, "t_avg_us": 2.5, "np": 4, "flag": 1},
            {"bytes": 8}]
    back = table_rows(json.loads(json.dumps(rows_table(rows))), "test")
    assert json.dumps(back) == json.dumps([dict(sorted(r.items())) for r in rows])
