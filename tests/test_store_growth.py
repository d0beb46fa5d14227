"""Must show: a campaign grows without slowing its sessions down. A session's end costs what it
ran (its own index parts merged, nothing of the campaign read again), a resumed session skips
done repeats without reading their records, an index is built from the records in parallel
batches and only the records it lacks are added, records.csv is an export on request that reads
as the records do, and a session killed during its end leaves a campaign whose next status and
report are right. Real Intel MPI sweeps throughout; the figures at 10^4 to 10^6 records are
bench/store_scale.py's (docs/measured.md)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.store import tidy_index
from commstack.store.campaign import Campaign
from tests.sweeps import commstack, records_csv

pytest.importorskip("pyarrow", reason="skipped: pyarrow not installed (pip install 'commstack[index]')")
pytestmark = pytest.mark.mpi

MATRIX = dedent("""
    campaign: growing
    benchmark: imb-mpi1
    repeats: 2
    timeout: 120
    stacks:
      impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
    parameters:
      benchmarks: PingPong Allreduce
      msglog: "0:4"
      ranks_per_node: 2
    product:
      iter: {iters}
    """)


def _run(tmp: Path, iters: list, *extra: str) -> subprocess.CompletedProcess:
    matrix = tmp / "matrices" / "local" / "growing.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)
    matrix.write_text(MATRIX.format(iters=json.dumps(iters)))
    return commstack("run", str(matrix), "--out", str(tmp / "results"), *extra)


@pytest.fixture(scope="module")
def grown(impi_root, tmp_path_factory) -> Path:
    """A real campaign of 2 points x 2 repeats, as its first session left it."""
    tmp = tmp_path_factory.mktemp("growth")
    done = _run(tmp, [10, 11])
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp


def _copy(grown: Path, tmp_path: Path) -> Path:
    shutil.copytree(grown, tmp_path, dirs_exist_ok=True)
    return tmp_path / "results" / "local" / "growing"


def _parts(root: Path) -> dict:
    return {p.name: p.stat().st_ino for p in (root / "index").glob("*.parquet")}


BY_THE_LOG = """
import sys
from commstack import sweep
sweep.CLAIMS_BEFORE_LOG = 0  # a session of this many runs and more skips done runs by the log
from commstack.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_session_reads_nothing_of_the_campaign_it_does_not_run(grown, tmp_path):
    """Every earlier record made unreadable: a session of a new point runs and ends by merging
    its own index parts only; a session of the whole matrix skips the done repeats by the
    status log (as every session of more than ``CLAIMS_BEFORE_LOG`` runs does)."""
    root = _copy(grown, tmp_path)
    before = _parts(root)
    assert len(before) == 1 and next(iter(before)).startswith("c-")
    for record in root.glob("points/*/rep*.try*/record.json"):
        record.write_bytes(b'{"damaged": ')  # whoever reads one now fails
    os.utime(tidy_index.index_dir(root) / ".status.log")  # the log is newer than that
    done = _run(tmp_path, [12])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 runs now, 0 already done" in done.stderr + done.stdout
    after = _parts(root)
    assert {k: v for k, v in after.items() if k in before} == before  # the old part untouched
    [new] = set(after) - set(before)
    assert new.startswith("c-")  # the session's two one-record parts, merged into one
    table = tidy_index.read_table([root / "index" / new])
    assert set(table.column("params").to_pylist()) == {json.dumps(
        {"benchmarks": "PingPong Allreduce", "iter": 12, "msglog": "0:4", "ranks_per_node": 2,
         "stack": "impi"}, sort_keys=True)}
    matrix = tmp_path / "matrices" / "local" / "growing.yaml"
    matrix.write_text(MATRIX.format(iters=json.dumps([10, 11, 12, 13])))
    again = subprocess.run([sys.executable, "-c", BY_THE_LOG, "run", str(matrix), "--out",
                            str(tmp_path / "results")], capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 runs now, 6 already done" in again.stderr + again.stdout


def test_an_index_is_built_in_batches_and_only_what_it_lacks_is_added(grown, tmp_path,
                                                                      monkeypatch):
    root = _copy(grown, tmp_path)
    expected = sorted(json.dumps(row, sort_keys=True, default=str) for record in
                      Campaign(root).records() for row in tidy_index.rows_of(record))
    shutil.rmtree(root / "index")
    monkeypatch.setattr(tidy_index, "BATCH", 1)  # a batch per record: worker processes
    tidy_index.ensure(root)
    parts = _parts(root)
    assert len(parts) == 4  # one per batch, read by workers, none merged
    rows = tidy_index.read_table([root / "index" / p for p in parts]).to_pylist()
    assert sorted(json.dumps(r, sort_keys=True, default=str) for r in rows) == expected
    # One record's part removed: the next build reads that record alone, beside the others.
    gone = next(iter(parts))
    (root / "index" / gone).unlink()
    tidy_index.ensure(root)
    now = _parts(root)
    kept = {k: v for k, v in parts.items() if k != gone}
    assert {k: v for k, v in now.items() if k in kept} == kept  # the others as they were
    assert len(set(now) - set(kept)) == 1  # and one new part: the record it lacked
    rows = tidy_index.read_rows([root])
    assert len(rows) == len(expected)


def test_records_csv_is_an_export_that_reads_as_the_records_do(grown, tmp_path):
    root = _copy(grown, tmp_path)
    stale = root / "records.csv"
    stale.write_text("as an earlier commstack left it\n")
    done = _run(tmp_path, [10, 11])  # nothing to run; the stale table goes, with a sentence
    assert done.returncode == 0, done.stderr[-3000:]
    assert not stale.exists()
    assert "records.csv: removed" in done.stdout + done.stderr
    assert f"commstack query {root} --records > records.csv" in done.stdout + done.stderr
    exported = list(csv.DictReader(io.StringIO(records_csv(root))))
    expected = []
    for record in Campaign(root).records():
        for row in record.parsed:
            expected.append({**{f"param.{k}": v for k, v in record.params.items()},
                             "point_id": record.point_id, "repeat": record.repeat,
                             "matrix_benchmark": record.benchmark, "status": record.status,
                             **{("row_status" if k == "status" else k): v
                                for k, v in row.items()}})
    assert len(exported) == len(expected) > 0

    def canonical(row: dict) -> str:
        return json.dumps({k: _canonical(v) for k, v in row.items() if v not in ("", None)
                           and k in expected[0]}, sort_keys=True)

    assert sorted(map(canonical, exported)) == sorted(map(canonical, expected))


def _canonical(value) -> str:
    text = str(value)
    try:
        return repr(float(text))
    except ValueError:
        return text.lower() if text.lower() in ("true", "false") else text


KILL_DURING_END = """
import os, signal, sys
from commstack.store import tidy_index


def killed(made, replaced):
    for part in replaced:  # the run's one-record parts gone, the merged one not yet in place
        part.unlink()
    os.kill(os.getpid(), signal.SIGKILL)


tidy_index._swap = killed
from commstack.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_session_killed_during_its_end_loses_nothing(grown, tmp_path):
    root = _copy(grown, tmp_path)
    matrix = tmp_path / "matrices" / "local" / "growing.yaml"
    matrix.write_text(MATRIX.format(iters=json.dumps([10, 11, 12])))
    done = subprocess.run([sys.executable, "-c", KILL_DURING_END, "run", str(matrix), "--out",
                           str(tmp_path / "results")], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    assert not list((root / "index").glob("r-*.parquet"))  # killed where they were gone
    assert list((root / "index").glob(".c-*.tmp"))  # and the merged one a temporary
    status = commstack("status", str(root))
    assert status.returncode == 0, status.stderr[-3000:]
    assert "6 done, 0 failed, 0 running, 0 pending (of 6 runs)" in status.stdout
    report = commstack("report", str(root))
    assert report.returncode == 0, report.stderr[-3000:]
    records = list(Campaign(root).records())
    assert len(records) == 6
    assert len(tidy_index.read_rows([root])) == sum(len(r.parsed) for r in records)
    with open(root / "summary.csv", newline="") as handle:
        summarised = {row["point_id"] for row in csv.DictReader(handle)}
    assert summarised == {r.point_id for r in records}  # the killed session's point too
    again = _run(tmp_path, [10, 11, 12])  # the next session removes the killed one's temporary
    assert again.returncode == 0, again.stderr[-3000:]
    assert not list((root / "index").glob(".*.tmp"))


def test_a_session_after_index_was_removed_keeps_every_record_counted(grown, tmp_path):
    """index/ removed (as docs/known-limits.md advises for a damaged part), then a session:
    the status log is rebuilt from the records before the session skips by it (an appender
    never starts a log that would lack the attempts before it)."""
    root = _copy(grown, tmp_path)
    shutil.rmtree(root / "index")
    done = _run(tmp_path, [10, 11, 12])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 runs now, 4 already done" in done.stderr + done.stdout
    status = commstack("status", str(root))
    assert "6 done, 0 failed, 0 running, 0 pending (of 6 runs)" in status.stdout, status.stdout
    assert len(tidy_index.read_rows([root])) == sum(len(r.parsed) for r in
                                                    Campaign(root).records())


def test_parts_that_pile_up_are_merged_smallest_first_within_a_bound(grown, tmp_path,
                                                                      monkeypatch):
    root = _copy(grown, tmp_path)
    shutil.rmtree(root / "index")
    monkeypatch.setattr(tidy_index, "BATCH", 1)
    tidy_index.ensure(root)
    parts = sorted((root / "index").glob("*.parquet"))
    sizes = [tidy_index._checked_metadata(p).num_rows for p in parts]
    assert len(parts) == 4
    monkeypatch.setattr(tidy_index, "MAX_PARTS", 3)
    monkeypatch.setattr(tidy_index, "TARGET_ROWS", sum(sorted(sizes)[:2]))
    tidy_index.ensure(root)
    merged = [tidy_index._checked_metadata(p).num_rows
              for p in (root / "index").glob("*.parquet")]
    assert len(merged) < 4 and max(merged) <= max(sum(sorted(sizes)[:2]), max(sizes))
    assert sum(merged) == sum(sizes)  # every row once


def test_records_csv_of_a_damaged_record_is_one_sentence(grown, tmp_path):
    root = _copy(grown, tmp_path)
    victim = sorted(root.glob("points/*/rep1.try1/record.json"))[0]
    victim.write_bytes(victim.read_bytes()[:200])  # cut off mid-way
    done = commstack("query", str(root), "--records")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert str(victim) in done.stderr and "not valid JSON" in done.stderr
