"""Must show: the record has a type and a JSON Schema that agree; every record an earlier version
wrote (the committed schema-1 campaigns) still loads, unchanged in content; a record that cannot
be read says which file and why instead of being skipped."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from commstack.store.campaign import Campaign
from commstack.store.record import (
    COMPACT_VERSION,
    SCHEMA_VERSION,
    Placement,
    Record,
    RecordError,
    StackInfo,
    UcxReport,
    schema,
)
from commstack.store.record import (
    JobStep as SlurmStep,
)
from tests.golden.snapshot import CAMPAIGNS
from tests.sweeps import commstack

SCHEMA = schema()


def _names(kind) -> set:
    return {f.name for f in dataclasses.fields(kind)}


@pytest.mark.parametrize("kind,properties", [
    (Record, SCHEMA["properties"]),
    (StackInfo, SCHEMA["properties"]["stack_info"]["properties"]),
    (Placement, SCHEMA["properties"]["placement"]["properties"]),
    (UcxReport, SCHEMA["properties"]["ucx"]["properties"]),
    (SlurmStep, SCHEMA["properties"]["slurm"]["properties"]),
])
def test_schema_and_dataclasses_name_the_same_fields(kind, properties):
    assert _names(kind) == set(properties)


def test_schema_requires_what_the_dataclass_requires():
    required = {f.name for f in dataclasses.fields(Record)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert required | {"schema"} == set(SCHEMA["required"])
    assert SCHEMA["properties"]["schema"]["enum"] == [COMPACT_VERSION, SCHEMA_VERSION]


def _raw_records(root: Path):
    for path in sorted(root.glob("points/*/rep*.try*/record.json")):
        yield path, json.loads(path.read_text())


def _holds(new, old) -> bool:
    """``new`` keeps every value of ``old`` (an object may gain fields that default to null)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return all(k in new and _holds(new[k], v) for k, v in old.items())
    return new == old


@pytest.mark.parametrize("name", sorted(CAMPAIGNS))
def test_old_campaign_records_load_and_keep_every_value(name):
    raw = list(_raw_records(CAMPAIGNS[name]))
    assert raw and all(data.get("schema", 1) == 1 for _, data in raw), "fixture must stay schema 1"
    for path, data in raw:
        record = Record.load(path)
        written = record.to_dict()
        jsonschema.validate(written, SCHEMA)
        old_rows = data["parsed"] if isinstance(data.get("parsed"), list) else (
            [data["parsed"]] if data.get("parsed") else [])
        assert record.parsed == old_rows
        for key, value in data.items():
            if key not in ("parsed", "schema"):
                assert _holds(written[key], value), f"{path}: {key} changed"
        assert Record.from_dict(written) == record  # the new form reads back the same


def test_cartex_record_becomes_one_row():
    path, data = next(_raw_records(CAMPAIGNS["betzy-reference"]))
    assert isinstance(data["parsed"], dict)
    assert Record.load(path).parsed == [data["parsed"]]


def _one_record(tmp_path: Path) -> Path:
    src = CAMPAIGNS["schema1-local"]
    dst = tmp_path / "local" / "copy"
    shutil.copytree(src, dst)
    return next(dst.glob("points/*/rep1.try1/record.json"))


def test_record_from_a_newer_commstack_is_refused_by_name(tmp_path):
    path = _one_record(tmp_path)
    data = json.loads(path.read_text())
    data["schema"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=rf"{path}: schema {SCHEMA_VERSION + 1} is newer"):
        list(Campaign(path.parents[3]).records())


@pytest.mark.parametrize("change,message", [
    (lambda d: d.pop("point_id"), "missing point_id"),
    (lambda d: d.update(mood="good"), "unknown field.*mood"),
    (lambda d: d.update(ucx={"bogus": 1}), "ucx: unknown field.*bogus"),
])
def test_malformed_record_names_file_and_field(tmp_path, change, message):
    path = _one_record(tmp_path)
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=message) as caught:
        Record.load(path)
    assert str(path) in str(caught.value)


def test_corrupt_record_stops_status_with_one_sentence(tmp_path):
    path = _one_record(tmp_path)
    path.write_text('{"schema": 2, "campaign": ')
    done = commstack("status", str(path.parents[3]))
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr and "not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", sorted(CAMPAIGNS))
def test_the_stored_status_is_read_without_decoding_or_not_at_all(name):
    """`commstack status` reads a record's status from its bytes (``stored_status``); in every
    form the store writes it agrees with Record.load, and where it cannot be sure it says None."""
    from commstack.store.files import dump_json
    from commstack.store.record import stored_status

    for path, _ in _raw_records(CAMPAIGNS[name]):
        record = Record.load(path)
        schema2 = dump_json({**record.to_dict(), "schema": 2})
        for data in (record.dumps(), record.dumps(path.parent), schema2):  # 3, maybe 4, 2
            assert stored_status(data) == record.status
        assert stored_status(path.read_bytes()) in (None, record.status)  # as found (schema 1)
        newer = record.dumps().replace(b'"schema":3', b'"schema":99')
        assert stored_status(newer) is None
        used = dataclasses.replace(record, components_used={"not_used": ["coll/ucc"]})
        assert stored_status(used.dumps()) is None  # components to check: Record.load
        escaped = dataclasses.replace(record, status='a "quoted" state')
        assert stored_status(escaped.dumps()) is None
