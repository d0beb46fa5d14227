"""Must show: a campaign's tidy rows land in a Parquet index as its records are written (a real
Intel MPI sweep), which pandas and DuckDB read as it is; the index is rebuilt from the records when
it is deleted or holds a record that is gone; `commstack query` over two campaigns on two machines
gives the numbers of their summary tables and calls no win within noise; a missing pyarrow or
DuckDB ends in one sentence with the install command, and a sweep runs without pyarrow."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.store import tidy_index
from commstack.store.campaign import Campaign
from tests import sweeps
from tests.sweeps import commstack

pa = pytest.importorskip("pyarrow", reason="skipped: pyarrow not installed (pip install 'commstack[test]')")
import pyarrow.parquet as pq  # noqa: E402

pytestmark = pytest.mark.mpi

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 3
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      benchmarks: Allreduce PingPong
      msglog: "0:6"
      iter: 20
      ranks_per_node: 2
    product:
      I_MPI_ADJUST_ALLREDUCE: [%s]
    """)


def _sweep(tmp: Path, machine: str, name: str, settings: str, *prefix: str) -> Path:
    matrix = tmp / "matrices" / machine / f"{name}.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)
    matrix.write_text(MATRIX % settings)
    argv = [*prefix, "run", str(matrix), "--machine", machine, "--out", str(tmp / "results"),
            "--report"]
    done = (subprocess.run(argv, capture_output=True, text=True, timeout=600) if prefix
            else commstack(*argv))
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "results" / machine / name


@pytest.fixture(scope="module")
def results(impi_root, tmp_path_factory) -> Path:
    """Two campaigns on two machines, each a real sweep with its report (summary.csv)."""
    tmp = tmp_path_factory.mktemp("index")
    _sweep(tmp, "alpha", "allreduce", "1, 2")
    _sweep(tmp, "beta", "allreduce-more", "1, 2, 3")
    return tmp / "results"


def _keys(rows) -> list:
    return sorted((r["point_id"], r["repeat"], r["attempt"], r["test"], r["np"], r["bytes"])
                  for r in rows)


def _canonical(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


def test_the_sweep_wrote_the_index_of_every_record(results):
    for root in (results / "alpha" / "allreduce", results / "beta" / "allreduce-more"):
        parts = sorted((root / "index").glob("*.parquet"))
        assert len(parts) == 1, "the run merges its parts at its end"
        table = pq.read_table(parts[0])
        records = list(Campaign(root).records())
        assert table.num_rows == sum(len(r.parsed) or 1 for r in records) > len(records)
        indexed = {(p, r, a) for p, r, a in zip(*(table.column(k).to_pylist()
                                                  for k in ("point_id", "repeat", "attempt")))}
        assert indexed == {(r.point_id, r.repeat, r.attempt) for r in records}
        assert set(table.column("machine").to_pylist()) == {root.parent.name}


def test_pandas_and_duckdb_read_the_index_as_it_is(results):
    pd = pytest.importorskip("pandas")
    duckdb = pytest.importorskip("duckdb", reason="skipped: duckdb not installed")
    root = results / "alpha" / "allreduce"
    frame = pd.read_parquet(root / "index")
    records_csv = pd.read_csv(io.StringIO(sweeps.records_csv(root)))
    assert len(frame) == len(records_csv)
    ok = frame[(frame["metric"] == "t_avg_us") & (frame["status"] == "ok")]
    assert sorted(ok["value"]) == sorted(records_csv["t_avg_us"].dropna())
    con = duckdb.connect()
    [(count,)] = con.execute(f"SELECT count(*) FROM read_parquet('{root}/index/*.parquet')").fetchall()
    con.close()
    assert count == len(records_csv)


def _copy(results: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "results" / "alpha" / "allreduce"
    shutil.copytree(results / "alpha" / "allreduce", copy)
    return copy


def test_index_is_rebuilt_when_deleted(results, tmp_path):
    root = _copy(results, tmp_path)
    before = pq.read_table(next((root / "index").glob("*.parquet")),
                           columns=tidy_index.ROW_COLUMNS).to_pylist()
    shutil.rmtree(root / "index")
    after = tidy_index.read_rows([root])
    assert len(after) == len(before) > 0
    assert sorted(map(_canonical, after)) == sorted(map(_canonical, before))


def test_index_holding_a_record_that_is_gone_is_rebuilt(results, tmp_path):
    root = _copy(results, tmp_path)
    gone = next(root.glob("points/*/rep3.try1"))
    shutil.rmtree(gone)
    rows = tidy_index.read_rows([root])
    assert _keys(rows) == _keys(row for r in Campaign(root).records()
                                for row in tidy_index.rows_of(r))
    assert (gone.parent.name, 3, 1) not in {(r["point_id"], r["repeat"], r["attempt"]) for r in rows}


def _query(*args: str) -> list:
    done = commstack("query", *args, "--csv")
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


def _size(row: dict) -> tuple:
    return int(float(row["np"])), int(float(row["bytes"]))


def _same_number(a, b) -> bool:
    """Equal numbers, or both missing (an interval below six repeats: None, or '' in CSV)."""
    missing = (None, "", "nan")
    if a in missing or b in missing or str(a) == "nan":
        return (a in missing or str(a) == "nan") and (b in missing or str(b) == "nan")
    return float(a) == float(b)


def test_best_per_size_over_two_campaigns_gives_their_summary_numbers(results):
    found = _query(str(results), "--best-per-size", "--benchmark", "IMB-MPI1", "--test", "Allreduce")
    summaries = {}
    for machine, name in (("alpha", "allreduce"), ("beta", "allreduce-more")):
        with open(results / machine / name / "summary.csv") as fh:
            summaries[machine] = [r for r in csv.DictReader(fh) if r["benchmark"] == "Allreduce"]
    assert {r["machine"] for r in found} == {"alpha", "beta"}
    for machine, rows in summaries.items():
        sizes = {_size(r) for r in rows}
        assert {_size(r) for r in found if r["machine"] == machine} == sizes
    for row in found:
        same_row = [s for s in summaries[row["machine"]]
                    if _size(s) == _size(row)]
        best = next(s for s in same_row if s["point_id"] == row["point_id"])
        for column in ("median", "ci_low", "ci_high"):
            assert _same_number(row[column], best[column]), (column, row, best)
        assert int(row["n"]) == int(best["n"]) == 3
        assert row["setting"] == f"I_MPI_ADJUST_ALLREDUCE={best['I_MPI_ADJUST_ALLREDUCE']}"
        # Lowest median; with 3 repeats a rank test cannot reach p < 0.1: never a win.
        assert float(best["median"]) == min(float(s["median"]) for s in same_row)
        wins = False
        assert row["verdict"].startswith("best, significantly") == wins
        assert row["verdict"].startswith("no win") == (not wins)


def test_sql_over_two_campaigns(results):
    pytest.importorskip("duckdb", reason="skipped: duckdb not installed")
    found = _query(str(results / "alpha"), str(results / "beta"), "--sql",
                   "SELECT machine, campaign, count(*) AS n, min(value) AS lowest FROM rows "
                   "WHERE test = 'Allreduce' GROUP BY ALL ORDER BY machine")
    assert [r["machine"] for r in found] == ["alpha", "beta"]
    for row, (machine, name) in zip(found, (("alpha", "allreduce"), ("beta", "allreduce-more"))):
        rows = [r for r in csv.DictReader(io.StringIO(sweeps.records_csv(results / machine / name)))
                if r["benchmark"] == "Allreduce"]
        assert int(row["n"]) == len(rows)
        assert float(row["lowest"]) == min(float(r["t_avg_us"]) for r in rows)


def _without(module: str, *argv: str) -> subprocess.CompletedProcess:
    """`commstack argv` in a Python where ``module`` cannot be imported."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from commstack.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("module,args,extra", [
    ("pyarrow", ["--best-per-size", "--benchmark", "imb-mpi1"], "index"),
    ("duckdb", ["--sql", "SELECT 1"], "query"),
])
def test_missing_optional_package_is_one_sentence(results, tmp_path, module, args, extra):
    root = _copy(results, tmp_path)
    shutil.rmtree(root / "index")
    done = _without(module, "query", str(root), *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert f"pip install 'commstack[{extra}]'" in done.stderr and repr(module) in done.stderr


def test_sweep_runs_without_pyarrow_and_the_index_is_built_later(impi_root, tmp_path):
    code = ("import sys; sys.modules['pyarrow'] = None\n"
            "from commstack.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    root = _sweep(tmp_path, "gamma", "no-arrow", "1", sys.executable, "-c", code)
    assert not list((root / "index").glob("*.parquet")) if (root / "index").exists() else True
    rows = tidy_index.read_rows([root])
    assert len(rows) == sum(len(r.parsed) or 1 for r in Campaign(root).records()) > 0
    assert len(list((root / "index").glob("*.parquet"))) == 1


def test_unreadable_part_means_a_rebuild(results, tmp_path):
    root = _copy(results, tmp_path)
    before = sorted(map(_canonical, tidy_index.read_rows([root])))
    (root / "index" / "r-0000-rep1.try1.parquet").write_bytes(b"not parquet")
    assert sorted(map(_canonical, tidy_index.read_rows([root]))) == before
    assert [p.name.startswith("c-") for p in (root / "index").glob("*.parquet")] == [True]


def test_an_index_that_is_complete_is_left_as_it_is(results, tmp_path):
    root = _copy(results, tmp_path)
    [part] = (root / "index").glob("*.parquet")
    written = part.stat().st_mtime_ns
    tidy_index.ensure(root)
    assert [p.name for p in (root / "index").glob("*.parquet")] == [part.name]
    assert part.stat().st_mtime_ns == written


def test_a_part_larger_than_commstack_writes_is_rebuilt_unread(results, tmp_path):
    """A 2 GiB part (sparse: nothing on disk) is past the limit: rebuilt from the records at once,
    never handed to pyarrow (its footer would size what is read)."""
    root = _copy(results, tmp_path)
    before = sorted(map(_canonical, tidy_index.read_rows([root])))
    huge = root / "index" / "c-00000000T000000Z-elsewhere-1-1.parquet"
    with open(huge, "wb") as handle:
        handle.truncate(2 << 30)
    with pytest.raises(tidy_index.UnsoundPart, match=r"2048 MiB is larger than an index part"):
        tidy_index._checked_metadata(huge)
    assert sorted(map(_canonical, tidy_index.read_rows([root]))) == before
    assert not huge.exists()


def test_a_footer_claiming_more_than_commstack_writes_is_rebuilt(results, tmp_path, monkeypatch):
    """The footer's claimed rows and uncompressed sizes are checked before any data is read: with
    the limit below what the campaign's part claims, the part is refused in one sentence and the
    rows come from the records."""
    root = _copy(results, tmp_path)
    [part] = (root / "index").glob("*.parquet")
    rows = pq.read_metadata(part).num_rows
    monkeypatch.setattr(tidy_index, "MAX_PART_ROWS", rows - 1)
    with pytest.raises(tidy_index.UnsoundPart, match=rf"claims {rows} rows"):
        tidy_index._checked_metadata(part)
    monkeypatch.undo()
    monkeypatch.setattr(tidy_index, "MAX_PART_UNCOMPRESSED", 1)
    with pytest.raises(tidy_index.UnsoundPart, match="more than an index part commstack writes"):
        tidy_index._checked_metadata(part)
    assert tidy_index._indexed([part]) is None  # so `ensure` rebuilds from the records


def _report(root: Path, *prefix: str) -> dict:
    """report.md and summary.csv of a cold ``commstack report`` of ``root``."""
    shutil.rmtree(root / "report", ignore_errors=True)
    (root / "summary.csv").unlink(missing_ok=True)
    argv = [*prefix, "report", str(root)]
    done = (subprocess.run(argv, capture_output=True, text=True, timeout=600) if prefix
            else commstack(*argv))
    assert done.returncode == 0, done.stderr[-3000:]
    return {name: (root / name).read_text() for name in ("report/report.md", "summary.csv")}


def test_report_from_the_index_is_the_report_from_the_records(results, tmp_path, monkeypatch):
    """The report reads its records and samples from the index (rebuilt here: a part commstack
    did not write), not from every record.json, and writes the report it writes from the records
    without pyarrow."""
    from commstack.report import document, from_index

    root = _copy(results, tmp_path)
    (root / "index" / "r-extra.parquet").write_bytes(b"")  # nothing commstack wrote: rebuilt
    no_arrow = ("import sys; sys.modules['pyarrow'] = None\n"
                "from commstack.cli import main\n"
                "sys.exit(main(sys.argv[1:]))")
    from_records = _report(root, sys.executable, "-c", no_arrow)
    monkeypatch.setattr(document, "load", lambda *a: pytest.fail("read every record"))
    shutil.rmtree(root / "report")
    (root / "summary.csv").unlink()
    document.write_report(root)
    assert {n: (root / n).read_text() for n in from_records} == from_records
    records = list(Campaign(root).records())
    loaded = from_index.load(root, lambda r: False)
    assert [r.to_dict() for r in loaded.records] == [_without_rows(r) for r in records]
    assert len(loaded.samples.values) == sum(len(r.parsed) for r in records) > 0


def _without_rows(record) -> dict:
    """A record as a report reads it from the index: no result rows, no per-rank placement
    rows (report.from_index)."""
    data = dict(record.to_dict(), parsed=[])
    if data["placement"] is not None:
        data["placement"]["ranks"] = []
    return data
