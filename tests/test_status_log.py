"""Must show: `commstack status` reads the campaign's status log, which a real Intel MPI sweep
keeps up to date, and gives what the records give; a log that is missing, damaged or older than
a change to the points is rebuilt from the records; an attempt the log holds no status for is
looked up in its folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from commstack.cli.status import scan_campaign
from commstack.store import state_log
from commstack.store.campaign import Campaign
from commstack.store.record import stored_status
from tests.sweeps import HALF_FAILING_MATRIX, commstack

pytestmark = pytest.mark.mpi

MATRIX = HALF_FAILING_MATRIX
SUMMARY = "2 done, 2 failed, 0 running, 0 pending (of 4 runs)"


@pytest.fixture
def campaign(impi_root, tmp_path) -> Path:
    matrix = tmp_path / "matrices" / "local" / "m.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX)
    out = commstack("run", str(matrix), "--out", str(tmp_path / "r"))
    assert out.returncode == 3, out.stderr[-2000:]
    return tmp_path / "r" / "local" / "m"


def _status(root: Path) -> str:
    out = commstack("status", str(root))
    assert out.returncode in (0, 3), out.stderr
    return out.stdout.strip()


def _as_records_say(root: Path) -> tuple:
    """The pairs done and every other attempt's status, as the log holds them (``_says``)."""
    found = Campaign(root).scan_records()
    done = {state_log.pair(p, r) for (p, r, _), status, _ in found if status == "ok"}
    return done, {key: status for key, status, _ in found
                  if state_log.pair(key[0], key[1]) not in done}


def _says(logged: state_log.Logged) -> tuple:
    return logged.done, logged.attempts


def test_the_sweep_writes_the_log_and_status_reads_it(campaign):
    logged = state_log.read(campaign)
    assert logged is not None, "the sweep left no usable status log"
    assert _says(logged) == _as_records_say(campaign)
    assert logged.done and set(logged.attempts.values()) == {"parse-error"}
    before = state_log.log_path(campaign).read_bytes()
    assert _status(campaign).endswith(SUMMARY)
    assert state_log.log_path(campaign).read_bytes() == before  # read, nothing to repair


def test_a_missing_or_damaged_log_is_rebuilt_from_the_records(campaign):
    path = state_log.log_path(campaign)
    path.unlink()
    assert state_log.read(campaign) is None
    assert _status(campaign).endswith(SUMMARY)
    assert _says(state_log.read(campaign)) == _as_records_say(campaign)
    path.write_bytes(path.read_bytes() + b"garbage line\n")
    assert state_log.read(campaign) is None
    assert _status(campaign).endswith(SUMMARY)
    assert _says(state_log.read(campaign)) == _as_records_say(campaign)


def test_a_change_to_the_points_makes_the_log_stale(campaign):
    """An attempt removed by hand, and one added by a writer that keeps no log (as an older
    commstack would): both change a point folder after the log, so the records are read."""
    assert _status(campaign).endswith(SUMMARY)
    attempts = sorted(campaign.glob("points/*/rep*.try*"))
    ok = [a for a in attempts if stored_status((a / "record.json").read_bytes()) == "ok"]
    shutil.rmtree(ok[0])
    assert state_log.read(campaign) is None  # stale: its point folder changed after the log
    assert _status(campaign).endswith("1 done, 2 failed, 0 running, 1 pending (of 4 runs)")
    # A retry of a failed repeat written without the store's claim (no log line): now done.
    failed = next(a for a in attempts if a != ok[0] and a not in ok)
    retry = failed.with_name(failed.name.replace(".try1", ".try2"))
    retry.mkdir()
    text = (ok[1] / "record.json").read_text()
    (retry / "record.json").write_text(text.replace('"attempt":1', '"attempt":2'))
    assert _status(campaign).endswith("2 done, 1 failed, 0 running, 1 pending (of 4 runs)")
    assert _says(state_log.read(campaign)) == _as_records_say(campaign)


def test_an_attempt_without_its_status_line_is_read_from_its_folder(campaign):
    """A runner killed between writing its record and its line: the record decides, and the
    reader adds the line."""
    path = state_log.log_path(campaign)
    lines = path.read_text().splitlines(keepends=True)
    dropped = next(line for line in lines if line.startswith("s\t") and "\tparse-error\t" in line)
    stamp = os.stat(path).st_mtime_ns
    path.write_text("".join(line for line in lines if line != dropped))
    os.utime(path, ns=(stamp, stamp))
    logged = state_log.read(campaign)
    key = tuple(dropped.split("\t")[1:4])
    key = (key[0], int(key[1]), int(key[2]))
    assert logged.attempts[key] is None  # claimed, no status
    scan = scan_campaign(Campaign(campaign))
    assert scan.state(key[0], key[1]) == "failed"
    assert _says(state_log.read(campaign)) == _as_records_say(campaign)


def test_a_long_log_is_read_by_its_done_lines_and_written_compact(tmp_path):
    """Each attempt appends a claim and a status line; past ``COMPACT_ABOVE`` lines of other
    kinds the reader rewrites the log with one line per attempt, after which a log of done
    attempts is read by one regular expression. The records say the same either way."""
    root = tmp_path / "c"
    (root / "points").mkdir(parents=True)
    count = state_log.COMPACT_ABOVE + 5
    lines = [f"c\tp{i:06d}\t1\t1\ns\tp{i:06d}\t1\t1\tok\t-\n" for i in range(count)]
    lines += ["c\tq\t1\t1\n", "s\tq\t1\t1\tcrash\t-\n", "c\tq\t1\t2\n", "c\tr\t2\t1\n"]
    state_log.log_path(root).parent.mkdir()
    state_log.log_path(root).write_text(state_log.HEADER.decode() + "".join(lines))
    first = state_log.read(root)
    assert len(first.done) == count and "p000000\t1" in first.done
    assert first.attempts == {("q", 1, 1): "crash", ("q", 1, 2): None, ("r", 2, 1): None}
    compact = state_log.log_path(root).read_text().splitlines()
    assert len(compact) == 1 + count + 3  # the header, one line per attempt
    assert not any(line.startswith("c\tp") for line in compact)
    again = state_log.read(root)
    assert (again.done, again.attempts) == (first.done, first.attempts)
    state_log.log_path(root).write_text(state_log.HEADER.decode() + "s\tx\t1\t1\tok\t-")
    assert state_log.read(root) is None  # cut off mid-line: rebuilt from the records


def test_a_log_of_done_lines_and_a_few_others_reads_those_alone(tmp_path):
    """The few lines that are not an attempt done (a claim still running, a crash, an attempt
    whose components went unused, a status of another name) are found and read; the log is
    left as it is."""
    root = tmp_path / "c"
    (root / "points").mkdir(parents=True)
    lines = [f"s\tp{i:04d}\t1\t1\tok\t-\n" for i in range(500)]
    lines[10:10] = ["c\tq\t1\t1\n", "s\tq\t1\t1\tcrash\t-\n", "c\tq\t1\t2\n",
                    "s\tu\t1\t1\tok\tu\n", "s\tv\t2\t1\tlater-status\t-\n"]
    state_log.log_path(root).parent.mkdir()
    text = state_log.HEADER.decode() + "".join(lines)
    state_log.log_path(root).write_text(text)
    logged = state_log.read(root)
    assert len(logged.done) == 501 and "u\t1" in logged.done
    assert logged.attempts == {("q", 1, 1): "crash", ("q", 1, 2): None,
                               ("v", 2, 1): "later-status"}
    assert logged.not_used == [("u", 1, 1)]
    assert state_log.log_path(root).read_text() == text
