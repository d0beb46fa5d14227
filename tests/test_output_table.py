"""Must show: a large table of result rows stored as pointers into the run's output reads back
exactly the rows the parser made, for every benchmark family's real outputs (here and from other
versions in the wild); a block whose values are not printed as they are parsed keeps its
values; an output that changed or is gone, or a record read without its folder, ends in one
sentence naming the file, never a wrong number."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from commstack.benchmarks import registry
from commstack.benchmarks.base import ParseError
from commstack.store import output_table
from commstack.store.record import Record, RecordError, rows_table, table_rows
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
# Each family's outputs, the benchmark whose parser reads them, and whether its tables print
# every parsed value as it is (so at least one block of some output must become a pointer).
FAMILIES = [
    ("imb", "imb-mpi1", True),
    ("osu", "osu", True),
    ("cartex", "cartex", False),
    ("gasnet", "gasnet-testlarge", False),
]


def _outputs(folder: str):
    return sorted(p for p in (FIXTURES / folder).rglob("*")
                  if p.suffix in (".out", ".txt") and p.is_file())


def _sorted_rows(rows):
    return json.loads(json.dumps([dict(sorted(r.items())) for r in rows]))


@pytest.mark.parametrize("folder,benchmark,points", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_every_real_output_reads_back_the_parsed_rows(folder, benchmark, points, tmp_path):
    parse = registry.parser_for(benchmark)
    pointed = 0
    outputs = _outputs(folder)
    assert outputs
    for path in outputs:
        data = path.read_bytes()
        try:
            rows = parse(data.decode(errors="replace")).rows
        except ParseError:
            continue
        if not rows:
            continue
        table = rows_table(rows)
        stored = output_table.point_into(table, data, "stdout.txt")
        pointed += sum("at" in b for b in stored["blocks"])
        (tmp_path / "stdout.txt").write_bytes(data)
        back = table_rows(output_table.resolve(json.loads(json.dumps(stored)), tmp_path), str(path))
        assert back == _sorted_rows(rows), path
    if points:
        assert pointed, f"no block of any {folder} output became a pointer"


def _whole_imb_run(tmp_path: Path) -> Path:
    """A record of a whole IMB-MPI1 run (schema-1 fixture, a real sweep) rewritten as the store
    writes it now, beside its output."""
    fixture = REPO / "tests/fixtures/campaigns/local/schema1-local"
    path = max(fixture.glob("points/*/rep*.try*/record.json"),
               key=lambda p: len(Record.load(p).parsed))
    folder = tmp_path / "attempt"
    shutil.copytree(path.parent, folder)
    record = Record.load(folder / "record.json")
    (folder / "record.json").write_bytes(record.dumps(folder))
    return folder / "record.json"


def test_a_whole_imb_run_is_stored_as_pointers_and_loads_unchanged(tmp_path):
    path = _whole_imb_run(tmp_path)
    original = Record.load(path)  # the pointer form, read back
    inline = Record.from_dict(json.loads(original.dumps()))
    data = json.loads(path.read_text())
    assert data["parsed"]["output"]["file"] == "stdout.txt"
    assert sum("at" in b for b in data["parsed"]["blocks"]) >= len(data["parsed"]["blocks"]) // 2
    assert len(original.parsed) > 200 and original == inline
    # Version 4 only where a table points into the output: a reader of up to 3 refuses it by
    # its version; the same record with its values written out stays 3.
    assert data["schema"] == 4 and json.loads(original.dumps())["schema"] == 3
    assert path.stat().st_size * 2 < len(original.dumps())  # the pointers halve it at least


def test_a_reader_of_version_3_refuses_a_pointer_record_by_its_version(tmp_path, monkeypatch):
    from commstack.store import record as record_module

    path = _whole_imb_run(tmp_path)
    monkeypatch.setattr(record_module, "SCHEMA_VERSION", 3)
    with pytest.raises(RecordError, match=f"{path}: schema 4 is newer than this commstack reads"):
        Record.load(path)


def test_a_changed_or_missing_output_or_no_folder_is_named(tmp_path):
    path = _whole_imb_run(tmp_path)
    output = path.parent / "stdout.txt"
    data = json.loads(path.read_text())
    with pytest.raises(RecordError, match="point into stdout.txt, which is read only when"):
        Record.from_dict(data, str(path))
    output.write_bytes(output.read_bytes().replace(b"1", b"2", 1))
    with pytest.raises(RecordError, match=f"{path}: parsed: .*{output}, which changed after"):
        Record.load(path)
    output.unlink()
    with pytest.raises(RecordError, match=f"{path}: parsed: .*{output}, which cannot be read"):
        Record.load(path)


def test_a_block_not_printed_as_parsed_keeps_its_values(tmp_path):
    data = (FIXTURES / "imb" / "external" / "imb4.1-mpi1-ompi-juno-internode-np2.txt").read_bytes()
    rows = registry.parser_for("imb-mpi1")(data.decode()).rows
    assert output_table.point_into(rows_table(rows), data, "stdout.txt")["blocks"][0].get("at")
    # The same rows in other units (as a parser converting them would make): nothing matches.
    scaled = [dict(r, **{k: v * 1000 for k, v in r.items() if k.startswith("t_")}) for r in rows]
    table = rows_table(scaled)
    assert output_table.point_into(table, data, "stdout.txt") is table


def _past_the_end(d):
    d["parsed"]["blocks"][0]["at"][0] = 10 ** 6


def _field_past_the_line(d):
    first = next(b for b in d["parsed"]["blocks"] if "fields" in b)
    first["fields"][0] = 99


def _layout_of_nothing(d):
    for key in ("columns", "fields", "types"):
        d["parsed"]["blocks"][0].pop(key)


@pytest.mark.parametrize("break_it,message", [
    (_past_the_end, "cannot be read back .*past its end"),
    (_field_past_the_line, "cannot be read back"),
    (_layout_of_nothing, "names no columns and follows no block that does"),
    (lambda d: d["parsed"]["output"].update(file="../stdout.txt"), "names no file beside the record"),
    (lambda d: d["parsed"]["blocks"][0].pop("same"), "lacks 'same'"),
], ids=["at", "fields", "layout", "file", "same"])
def test_a_broken_pointer_is_named(tmp_path, break_it, message):
    path = _whole_imb_run(tmp_path)
    data = json.loads(path.read_text())
    assert "at" in data["parsed"]["blocks"][0]
    break_it(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=f"{path}: parsed: .*{message}"):
        Record.load(path)
