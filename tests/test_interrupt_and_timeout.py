"""Must show: an interrupted sweep (SIGINT, SIGKILL) resumes with 0 lost and 0 duplicated
records; a hanging point is killed at its timeout, recorded as `timeout`, and the sweep goes on."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from textwrap import dedent

import pytest

from tests.sweeps import commstack, delayed_imb_bin, ok_counts, processes_under, records, start

pytestmark = pytest.mark.mpi

SWEEP = dedent("""
    benchmark: imb-mpi1
    repeats: 3
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      benchmarks: PingPong Allreduce
      msglog: "0:14"
      iter: 200
    product:
      ranks_per_node: [2]
      mapping: [block, cyclic]
      I_MPI_ADJUST_ALLREDUCE: [1, 2]
    """)


def _matrix(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / "matrices" / "local" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _wait_for_records(root: Path, n: int, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(list(root.glob("points/*/rep*.try*/record.json"))) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} records after {timeout}s")


def _wait_for_running(root: Path, timeout: float = 60) -> None:
    """Until an attempt directory has output but no record: a job is in flight."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for attempt in root.glob("points/*/rep*.try*"):
            if (attempt / "stdout.txt").exists() and not (attempt / "record.json").exists():
                return
        time.sleep(0.02)
    raise AssertionError("no run in flight")


def _slow_imb(tmp_path: Path, impi_root: Path) -> str:
    """A stack whose IMB-MPI1 is the real one after a 1 s sleep: a run seen in flight is still
    in flight when the signal arrives (a bare half-second run may end in between)."""
    slow_bin = delayed_imb_bin(tmp_path / "slow-imb", impi_root, 1)
    return SWEEP.replace('prefix: "${I_MPI_ROOT}"}', f'prefix: "${{I_MPI_ROOT}}", bin: "{slow_bin}"}}')


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_interrupt_then_resume_loses_and_duplicates_nothing(impi_root, tmp_path, sig):
    # SIGINT: the in-flight run must be recorded as interrupted, so make sure one is in flight.
    # SIGKILL records nothing; its real IMB ranks must die with the harness (a sleeping shell
    # wrapper would not, being no MPI process), so it runs the plain stack.
    text = _slow_imb(tmp_path, impi_root) if sig == signal.SIGINT else SWEEP
    matrix = _matrix(tmp_path, text, "interrupt")
    root = tmp_path / "results" / "local" / "interrupt"
    proc = start("run", str(matrix), "--out", str(tmp_path / "results"))
    _wait_for_records(root, 3)
    _wait_for_running(root)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    # The launcher got SIGTERM (from the harness, or from the kernel when the harness died);
    # on a loaded 2-core machine its ranks may take a few seconds to go.
    deadline = time.time() + 15
    while processes_under(root) and time.time() < deadline:
        time.sleep(0.2)
    assert processes_under(root) == [], "MPI processes outlived the interrupted sweep"
    done_before = sum(ok_counts(root).values())
    assert 3 <= done_before < 12

    if sig == signal.SIGINT:  # the interrupted attempt is kept and says so
        assert any(r["status"] == "interrupted" for r in records(root))

    again = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    assert again.returncode == 0, again.stderr[-2000:]
    counts = ok_counts(root)
    assert len(counts) == 4 * 3, "a (point, repeat) is missing"
    assert set(counts.values()) == {1}, "a (point, repeat) has two successful records"
    # Nothing written before the interruption was replaced.
    assert sum(1 for r in records(root) if r["status"] == "ok") == 12


def test_hanging_point_times_out_and_sweep_goes_on(impi_root, tmp_path):
    matrix = _matrix(tmp_path, dedent("""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 4
        stacks:
          impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
        parameters: {ranks_per_node: 2, benchmarks: PingPong, iter_policy: "off"}
        zip:
          - msglog: ["22:22", "0:4"]
            iter: [100000000, 50]
            time: [100000, 10]
        """), "hang")
    root = tmp_path / "results" / "local" / "hang"
    t0 = time.time()
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    elapsed = time.time() - t0
    assert run.returncode == 3, run.stderr  # failures present
    by_msglog = {r["params"]["msglog"]: r for r in records(root)}
    hung, quick = by_msglog["22:22"], by_msglog["0:4"]
    assert hung["status"] == "timeout" and 4 <= hung["duration_s"] < 4 + 12
    assert quick["status"] == "ok" and quick["parsed"]
    assert elapsed < 60
    assert processes_under(root) == []

    # A plain rerun leaves the failure alone; --retry-failed tries again as a new attempt.
    assert "0 runs now" in commstack("run", str(matrix), "--out",
                                     str(tmp_path / "results")).stderr
    retry = commstack("run", str(matrix), "--out", str(tmp_path / "results"), "--retry-failed")
    assert "1 runs now" in retry.stderr
    attempts = sorted(p.name for p in (root / "points" / hung["point_id"]).glob("rep1.try*"))
    assert attempts == ["rep1.try1", "rep1.try2"]
    assert (root / "points" / hung["point_id"] / "rep1.try1" / "record.json").exists()


def test_two_runners_on_one_campaign_share_the_work(impi_root, tmp_path):
    matrix = _matrix(tmp_path, SWEEP.replace("repeats: 3", "repeats: 2"), "shared")
    root = tmp_path / "results" / "local" / "shared"
    first = start("run", str(matrix), "--out", str(tmp_path / "results"))
    second = start("run", str(matrix), "--out", str(tmp_path / "results"))
    assert first.wait(timeout=300) == 0 and second.wait(timeout=300) == 0
    counts = ok_counts(root)
    assert len(counts) == 4 * 2 and set(counts.values()) == {1}
    assert len(records(root)) == 8  # no run was done twice


def test_a_launcher_starts_with_no_signal_held(tmp_path):
    # The harness holds SIGINT/SIGTERM while it forks the launcher (an interrupt landing in a
    # fork callback would be lost); the launcher must not inherit that mask, or it would not
    # stop when the harness sends SIGTERM.
    from commstack.launch import runner
    from commstack.launch.command import LaunchCommand

    out, err = tmp_path / "out", tmp_path / "err"
    outcome = runner.run(LaunchCommand(["grep", "SigBlk", "/proc/self/status"], {}, {}), out, err,
                         timeout=30, cwd=tmp_path)
    assert outcome.status == "ok", err.read_text()
    blocked = int(out.read_text().split()[1], 16)
    for sig in (signal.SIGINT, signal.SIGTERM):
        assert not blocked & (1 << (sig - 1)), f"{sig.name} held in the launcher"


def test_a_failed_run_is_logged_with_the_last_line_of_its_stderr(impi_root, tmp_path):
    fails = tmp_path / "fails"
    fails.write_text('#!/bin/sh\necho "rank $PMI_RANK: cannot open device mlx5_0" >&2\nexit 9\n')
    fails.chmod(0o755)
    matrix = _matrix(tmp_path, dedent(f"""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 60
        stacks:
          impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
        parameters: {{ranks_per_node: 2, executable: {fails}}}
        """), "fails")
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    assert run.returncode == 3, run.stderr
    (failed,) = records(tmp_path / "results" / "local" / "fails")
    assert failed["status"] == "crash"
    stderr = Path("fails", "points", failed["point_id"], "rep1.try1", "stderr.txt")
    last = (tmp_path / "results" / "local" / stderr).read_text().strip().splitlines()[-1]
    # Whatever the launcher adds after the rank's line, the log quotes the file's last line.
    assert f"exit {failed['exit_code']}; {stderr} ends: {last.strip()}" in run.stdout, run.stdout
