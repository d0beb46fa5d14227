"""Must show: a report reads a campaign from its Parquet index as it reads it from the records
(the records, rows and per-rank placement rows aside, and every sample), in less memory: the
records of one point share their equal parts (launch line, environment, parameters), one stack's
records their placement check and UCX report; only equal JSON is shared (1, 1.0 and true stay
three values); a record.json form that is not a record is refused in one sentence naming the
file; the index is read the same when its part has many row groups; a record finished after
the report listed the attempts (its runner appended it to the index) is no reason to rebuild
the index."""

from __future__ import annotations

import importlib.util
import json
import shutil
from array import array
from pathlib import Path

import pytest

from commstack.report import from_index
from commstack.report.load import load
from commstack.store import tidy_index
from commstack.store.campaign import Campaign
from commstack.store.record import HeadReader, Record, RecordError
from tests.conftest import REPO

pa = pytest.importorskip("pyarrow", reason="skipped: pyarrow not installed (pip install 'commstack[test]')")
import pyarrow.parquet as pq  # noqa: E402

spec = importlib.util.spec_from_file_location("report_scale", REPO / "bench/report_scale.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

AXES = {"stack": ["ompi", "ompi-ucx"], "UCX_TLS": ["all", "self,sm"], "UCX_RNDV_THRESH": ["auto"],
        "ranks_per_node": [2, 4], "benchmarks": ["Allreduce"]}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """8 points x 3 repeats, records as `commstack run` writes them now (schema 3), indexed."""
    root = bench.write_campaign(tmp_path_factory.mktemp("load") / "bench" / "load", AXES, 1)
    for path in root.glob("points/*/rep*.try*/record.json"):
        path.write_bytes(Record.load(path).dumps())
    shutil.rmtree(root / "index")
    tidy_index.ensure(root)
    return root


def _copy(root: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bench" / root.name
    shutil.copytree(root, copy)
    return copy


def _without_rows(record: Record) -> dict:
    data = dict(record.to_dict(), parsed=[])
    if data["placement"] is not None:
        data["placement"]["ranks"] = []
    return data


def test_the_index_gives_the_records_and_samples_the_records_give(campaign):
    records = list(Campaign(campaign).records())
    assert any(r.placement and r.placement.ranks for r in records)
    loaded = from_index.load(campaign, lambda r: False)
    assert [r.to_dict() for r in loaded.records] == [_without_rows(r) for r in records]
    assert all(r.placement.ranks == [] for r in loaded.records)
    read = load(campaign, lambda r: False)
    for name in ("point_ids", "key_names", "keys", "metrics", "values", "oversubscribed",
                 "points", "spans"):
        assert getattr(loaded.samples, name) == getattr(read.samples, name), name
    assert isinstance(loaded.samples.values, array) and isinstance(read.samples.values, array)
    assert len(loaded.samples.values) == sum(len(r.parsed) for r in records) > 0
    # A record a study reads the rows of comes whole from its record.json.
    kept = from_index.load(campaign, lambda r: r.repeat == 2)
    assert [r.to_dict() for r in kept.records if r.repeat == 2] == [
        r.to_dict() for r in records if r.repeat == 2]


def test_records_of_one_point_share_their_equal_parts(campaign):
    loaded = from_index.load(campaign, lambda r: False)
    by_point = {}
    for record in loaded.records:
        by_point.setdefault(record.point_id, []).append(record)
    assert len(by_point) == 8 and all(len(rs) == 3 for rs in by_point.values())
    for first, *rest in by_point.values():
        for other in rest:
            for name in ("argv", "env", "env_prepends", "command", "params", "stack_info",
                         "placement", "ucx", "session", "stdout"):
                assert getattr(other, name) is getattr(first, name), name
    # Across points: one object per distinct value (the placement checks are all alike here).
    assert len({id(r.placement) for r in loaded.records}) == 1
    assert len({id(r.env) for r in loaded.records}) == len(
        {json.dumps(r.env, sort_keys=True) for r in loaded.records}) == 2
    # The samples hold one key tuple per distinct row key.
    keys = loaded.samples.keys
    assert len({id(k) for k in keys}) == len(set(keys)) < len(keys)


def _head(**fields) -> str:
    record = Record.load(bench.RECORD)
    data = json.loads(tidy_index.record_head(record))
    data.update(fields)
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def test_only_equal_json_is_shared():
    reader = HeadReader()
    one, real, true = (reader.record(_head(params={"iter": v}, env={"A": "1"}), "r.json")
                       for v in (1, 1.0, True))
    assert [type(r.params["iter"]) for r in (one, real, true)] == [int, float, bool]
    assert one.params is not real.params and real.params is not true.params
    assert one.env is real.env is true.env
    again = reader.record(_head(params={"iter": 1.0}), "r.json")
    assert again.params is real.params


def test_a_head_reads_as_from_dict_reads_it():
    """Schema 3 leaves out a command that argv and env give; schema 2 keeps what it has."""
    record = Record.load(bench.RECORD)
    reader = HeadReader()
    for head in (tidy_index.record_head(record),
                 json.dumps(dict(record.to_dict(), schema=2, parsed=None)),
                 json.dumps({k: v for k, v in record.to_dict().items() if k != "command"})):
        got = reader.record(head, "r.json")
        expected = Record.from_dict(dict(json.loads(head), parsed=None), "r.json")
        assert got.to_dict() == _without_rows(expected)
    without = dict(json.loads(tidy_index.record_head(record)), argv=["x", "y z"])
    without.pop("command", None)
    got = reader.record(json.dumps(without), "r.json")
    assert got.command == Record.from_dict(dict(without), "r.json").command


@pytest.mark.parametrize("text, problem", [
    ("[1, 2]", "not a JSON object"),
    ("{\"campaign\": ", "not valid JSON"),
    (_head(schema=9), "schema 9 is newer than this commstack reads"),
    (_head(colour="blue"), "unknown field\\(s\\) colour"),
    (_head(placement=[1]), "placement: expected an object"),
    (_head(ucx={"volume": 11}), "ucx: unknown field\\(s\\) volume"),
    (_head(placement={"verdict": "ok", "summary": "ok", "ranks": 3}),
     "placement.ranks: not a list of rows or a table of them"),
])
def test_a_head_that_is_not_a_record_is_named(text, problem):
    with pytest.raises(RecordError, match=f"^r.json: .*{problem}"):
        HeadReader().record(text, "r.json")
    missing = json.loads(_head())
    del missing["status"]
    with pytest.raises(RecordError, match="^r.json: missing status"):
        HeadReader().record(json.dumps(missing), "r.json")


def test_an_index_of_many_row_groups_reads_the_same(campaign, tmp_path):
    root = _copy(campaign, tmp_path)
    [part] = (root / "index").glob("*.parquet")
    expected = from_index.load(root, lambda r: False)
    table = pq.read_table(part)
    pq.write_table(table, part, row_group_size=100, compression="zstd")
    meta = pq.read_metadata(part)
    assert meta.num_row_groups > 3
    # Keep the format mark the index's parts carry (pq.write_table drops it).
    table = table.replace_schema_metadata({tidy_index._FORMAT_KEY: tidy_index.FORMAT})
    pq.write_table(table, part, row_group_size=100, compression="zstd")
    assert tidy_index._indexed([part]) == {(r.point_id, r.repeat, r.attempt)
                                           for r in expected.records}
    loaded = from_index.load(root, lambda r: False)
    assert [part] == list((root / "index").glob("*.parquet"))  # read as it is, not rebuilt
    assert [r.to_dict() for r in loaded.records] == [r.to_dict() for r in expected.records]
    assert loaded.samples == expected.samples


def test_a_record_finished_after_the_listing_is_no_reason_to_rebuild(campaign, tmp_path):
    root = _copy(campaign, tmp_path)
    listed = tidy_index.records_on_disk(Campaign(root))
    late = sorted(listed)[-1]
    del listed[late]  # as if its runner finished, and appended it, after the listing

    def parts():
        return {(p.name, p.stat().st_ino) for p in (root / "index").glob("*.parquet")}

    before = parts()
    tidy_index.ensure(root, on_disk=listed)
    assert parts() == before  # the same files: nothing rebuilt, nothing added
    # One that is gone is: the index is rebuilt from the records.
    path = Path(tidy_index.records_on_disk(Campaign(root))[late][0])
    path.unlink()
    tidy_index.ensure(root, on_disk=listed)
    assert not parts() & before


def _without(root: Path, key) -> None:
    """The campaign's index without the rows of record ``key`` (as before its runner appends)."""
    [part] = (root / "index").glob("*.parquet")
    table = pq.read_table(part)
    point, repeat, attempt = key
    keep = [not (p == point and r == repeat and a == attempt) for p, r, a in zip(
        *(table.column(k).to_pylist() for k in ("point_id", "repeat", "attempt")))]
    table = table.filter(pa.array(keep))
    table = table.replace_schema_metadata({tidy_index._FORMAT_KEY: tidy_index.FORMAT})
    pq.write_table(table, part, compression="zstd")


def _rows_of(root: Path, key) -> int:
    return sum(1 for part in (root / "index").glob("*.parquet") for k in zip(
        *(pq.read_table(part).column(c).to_pylist() for c in ("point_id", "repeat", "attempt")))
        if k == key)


def test_a_record_appended_while_ensure_looks_is_added_once(campaign, tmp_path, monkeypatch):
    """A record listed while its runner held the attempt, and appended by the runner before
    ``ensure`` asked: its part, written after the parts were first read, is read too."""
    root = _copy(campaign, tmp_path)
    listed = tidy_index.records_on_disk(Campaign(root))
    key = sorted(listed)[-1]
    record = Record.load(listed[key][0])
    _without(root, key)
    assert _rows_of(root, key) == 0
    real = tidy_index.finished_records

    def finished(*args, **kwargs):
        assert tidy_index.append(root, record)  # the runner appends, then lets the attempt go
        monkeypatch.setattr(tidy_index, "finished_records", real)
        return real(*args, **kwargs)

    monkeypatch.setattr(tidy_index, "finished_records", finished)
    tidy_index.ensure(root, on_disk=listed)
    assert _rows_of(root, key) == len(record.parsed) > 0  # once: the runner's part alone
    assert len(list((root / "index").glob("r-*.parquet"))) == 1
    assert len(list((root / "index").glob("c-*.parquet"))) == 1  # nothing built here


def test_a_record_removed_after_the_listing_is_left_out(campaign, tmp_path):
    root = _copy(campaign, tmp_path)
    shutil.rmtree(root / "index")
    listed = tidy_index.records_on_disk(Campaign(root))
    key = sorted(listed)[0]
    Path(listed[key][0]).unlink()
    tidy_index.ensure(root, on_disk=listed)  # a rebuild: every record listed, one gone
    indexed = tidy_index._indexed(list((root / "index").glob("*.parquet")))
    assert indexed == set(listed) - {key}
    assert from_index.load(root, lambda r: False) is not None  # listed again: it has no record
