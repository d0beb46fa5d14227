"""Must show: one results store over campaigns (tidy rows + what identifies each run), the history
of one point across 10 campaigns of real Intel MPI sweeps (dates from their records, one median
with its 95 % interval per campaign), and a compare against a baseline chosen by date.

The 10 campaigns run the same matrix (IMB-MPI1 PingPong, 2 ranks, msglog 0:4, 6 repeats) one
after another, so their dates are minutes apart: what a centre's nightly runs would be, compressed.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from textwrap import dedent

import pytest

from commstack import baseline, stats
from commstack.history import Entry, mark_changes
from tests.sweeps import commstack

pytestmark = pytest.mark.mpi
pytest.importorskip("duckdb", reason="skipped: DuckDB not installed (pip install 'commstack[query]')")

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 6
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters: {ranks_per_node: 2, benchmarks: PingPong, msglog: "0:4", iter: 100}
    """)
DAYS = [f"day{i:02d}" for i in range(1, 11)]


@pytest.fixture(scope="module")
def results(impi_root, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("history")
    for day in DAYS:
        matrix = tmp / "matrices" / "local" / f"{day}.yaml"
        matrix.parent.mkdir(parents=True, exist_ok=True)
        matrix.write_text(MATRIX)
        run = commstack("run", str(matrix), "--out", str(tmp / "results"))
        assert run.returncode == 0, run.stderr[-3000:]
    return tmp / "results"


def _records(root: Path) -> list:
    return [json.loads(p.read_text()) for p in sorted(root.glob("points/*/rep*/record.json"))]


def test_the_store_joins_rows_with_their_runs(results):
    from commstack.store.results import open_store

    con = open_store([results])
    got = con.execute("""
        SELECT campaign, count(*), count(DISTINCT session), min(mpi_version), min(flavour),
               min(node_type), min(commstack_commit), bool_and(origin = 'measured'),
               min(date) IS NOT NULL
        FROM results WHERE test = 'PingPong' GROUP BY campaign ORDER BY campaign""").fetchall()
    assert [g[0] for g in got] == DAYS
    impi = (Path(results).parent / "results" / "local" / "day01" / "sessions")
    version_file = next(impi.glob("*/impi.version.txt")).read_text()
    for _, rows, sessions, version, flavour, node, commit, measured, dated in got:
        assert rows == 6 * 6 and sessions == 1  # 6 repeats x sizes 0, 1, 2, 4, 8, 16 bytes
        assert version and version.split()[0] in version_file and flavour == "intelmpi"
        assert node and commit and measured and dated


def test_history_of_one_point_over_ten_campaigns(results, tmp_path):
    out = commstack("history", str(results), "--where", "test=PingPong", "--where", "bytes=16",
                    "--csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [r["campaign"] for r in rows] == DAYS  # in date order, one value per campaign
    for row in rows:
        samples = [item["t_us"] for rec in _records(results / "local" / row["campaign"])
                   for item in rec_rows(rec) if item["bytes"] == 16]
        assert len(samples) == 6
        center = stats.describe(samples)
        assert float(row["median"]) == pytest.approx(center.median, rel=1e-3)
        assert float(row["low"]) == pytest.approx(center.low, rel=1e-3)
        assert float(row["high"]) == pytest.approx(center.high, rel=1e-3)
        assert row["stack change"] == ""  # one Intel MPI throughout
    dates = [r["date (UTC)"] for r in rows]
    assert dates == sorted(dates)
    later = commstack("history", str(results), "--where", "test=PingPong", "--where", "bytes=16",
                      "--csv", "--since", _iso(rows[5]["campaign"], results))
    assert later.returncode == 0, later.stderr
    assert [r["campaign"] for r in csv.DictReader(io.StringIO(later.stdout))] == DAYS[5:]
    drawn = commstack("history", str(results), "--where", "test=PingPong", "--out",
                      str(tmp_path / "h"))
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "h" / "history.png").stat().st_size > 5000
    assert "6 point(s) over 10 campaign(s)" in (tmp_path / "h" / "history.md").read_text()


def rec_rows(rec: dict) -> list:
    from commstack.store.record import Record

    return Record.from_dict(rec).parsed


def _iso(campaign: str, results: Path) -> str:
    """A millisecond before the earliest start of the campaign's records (UTC, to the
    microsecond). Cut to the second it let the campaign before in when that one's last run
    started in the same second (CI, 2026-11-30); that run started a whole run earlier."""
    from datetime import datetime, timezone

    start = min(r["start"] for r in _records(results / "local" / campaign)) - 0.001
    return datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


def test_a_baseline_chosen_by_date(results):
    b = results / "local" / "day10"
    chosen = baseline.last_before([results], b, 3)
    assert [c.name for c in chosen] == ["day07", "day08", "day09"]
    cut = baseline.campaign_date(results / "local" / "day05")
    assert [c.name for c in baseline.last_before([results], b, 2, cut)] == ["day03", "day04"]
    out = commstack("compare", str(b), "--baseline-last", "3", "--where", "benchmark=PingPong")
    assert out.returncode in (0, 1), out.stderr
    assert out.stdout.startswith("Baseline: ")
    assert all(name in out.stdout for name in ("day07", "day08", "day09"))
    assert "day06" not in out.stdout.split("\n")[0]
    pooled = baseline.pooled_figures(chosen)
    assert {len(f.samples) for f in pooled} == {18}  # 3 campaigns x 6 repeats
    named = commstack("compare", str(b), "--baseline", str(results / "local" / "day01"))
    assert named.returncode in (0, 1), named.stderr
    assert "day01" in named.stdout.split("\n")[0]


def test_a_stack_change_is_marked_where_it_happens():
    def entry(name: str, version: str, spack: str = None) -> Entry:
        return Entry(name, 0.0, [1.0], {"flavour": "intelmpi", "mpi_version": version,
                                        "spack_hash": spack}, "measured")

    entries = [entry("a", "2021.17"), entry("b", "2021.17"), entry("c", "2021.18.1"),
               entry("d", "2021.18.1", "abc")]
    mark_changes(entries)
    assert [e.change for e in entries] == [
        None, None, "mpi_version 2021.17 -> 2021.18.1", "spack_hash ? -> abc"]
