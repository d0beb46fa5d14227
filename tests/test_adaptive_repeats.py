"""Must show: adaptive repeats (`repeats: {min, max, ci}`). A point repeats, in rounds over the
points not yet precise, until the 95 % interval of its median is within +-ci at every result row
or max is reached; the record of its last repeat says why; a quiet point stops at min, a noisy
one runs to max; status shows a point below precision as pending; a resumed sweep reruns nothing
done; bad repeats objects are refused naming the key. Real runs: Intel MPI from PyPI, IMB-MPI1
with -iter 1 as the noisy point, a script printing one recorded IMB output as the quiet one."""

from __future__ import annotations

import re
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.adaptive import precision, stop_reason
from commstack.errors import CampaignError
from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix
from commstack.matrix.model import Adaptive, MatrixError
from commstack.store.record import Record
from commstack.sweep import check_repeat
from tests.sweeps import commstack, ok_counts, records

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests/fixtures/imb/intelmpi-2021.18/prebuilt-mpi1-pingpong-np2.out"
STACKS = "stacks:\n  impi: {flavour: intelmpi}\n"


@pytest.mark.parametrize("repeats, extra, message", [
    ("{min: 10, max: 8, ci: 0.05}", "", "repeats.min: 10 is more than repeats.max (8)"),
    ("{min: 0, max: 8, ci: 0.05}", "", "repeats.min: 0 is less than the minimum of 1"),
    ("{max: 8, ci: 0}", "", "repeats.ci: 0 is less than or equal to the minimum of 0"),
    ("{max: 8, ci: -0.05}", "", "repeats.ci: -0.05 is less than or equal to the minimum of 0"),
    ("{max: 8, ci: 5}", "", "repeats.ci: 5 is greater than or equal to the maximum of 1"),
    ("{max: 8, ci: five}", "", "repeats.ci: expected number, got str 'five'"),
    ("{max: 8}", "", "repeats: 'ci' is a required property"),
    ("{min: 6, ci: 0.05}", "", "repeats: 'max' is a required property"),
    ("{max: 8, ci: 0.05, tries: 3}", "", "repeats: unknown key 'tries'; expected one of: min, max, ci"),
    ("{min: 2, max: 5, ci: 0.05}", "", "repeats.max: 5 repeats give no 95 % interval"),
    ("{max: 8, ci: 0.05}", "repeats_across: jobs\n",
     "repeats: adaptive repeats are decided within one allocation"),
    ("0", "", "repeats: 0 is less than the minimum of 1"),
    ("5", "order: random\n", "order: 'random' is not one of shuffled, fixed"),
    ("5", "seed: -1\n", "seed: -1 is less than the minimum of 0"),
    ("5", "seed: one\n", "seed: expected integer, got str 'one'"),
])
def test_bad_repeats_and_order_are_refused_naming_the_key(write_matrix, repeats, extra, message):
    path = write_matrix(f"benchmark: imb-mpi1\nrepeats: {repeats}\n{extra}{STACKS}")
    with pytest.raises(MatrixError) as info:
        expand(load_matrix(path))
    assert str(path) in str(info.value) and message in str(info.value), str(info.value)


def test_good_repeats_objects_load(write_matrix):
    m = load_matrix(write_matrix(f"benchmark: imb-mpi1\nrepeats: {{max: 30, ci: 0.05}}\n{STACKS}"))
    assert (m.adaptive, m.repeats, m.first_repeats) == (Adaptive(6, 30, 0.05), 30, 6)
    m = load_matrix(write_matrix(f"benchmark: imb-mpi1\nrepeats: 4\n{STACKS}"))
    assert (m.adaptive, m.repeats, m.first_repeats, m.order) == (None, 4, 4, "shuffled")
    with pytest.raises(CampaignError, match="adaptive repeats .* run without --repeat"):
        check_repeat(load_matrix(write_matrix(
            f"benchmark: imb-mpi1\nrepeats: {{max: 8, ci: 0.05}}\n{STACKS}")), 1)


def _run(repeat: int, values, status: str = "ok", key: str = "t_avg_us") -> Record:
    """A record of one PingPong-like run: one row per size, ``values[i]`` at size 2**i."""
    rows = [{"benchmark": "Allreduce", "np": 2, "bytes": 2 ** i, key: v}
            for i, v in enumerate(values)]
    return Record(campaign="c", machine="m", benchmark="imb-mpi1", point_id="p", repeat=repeat,
                  attempt=1, params={}, status=status, parsed=rows if status == "ok" else [])


RULE = Adaptive(min=6, max=10, ci=0.05)
STEADY = [[10.0, 20.0]] * 6
SPREAD = [[10.0 + k * 0.1, 20.0] for k in range(6)]  # 10.0..10.5: +-2.5 % around 10.25
OUTLIER = [[10.0, 20.0]] * 5 + [[10.0, 30.0]]  # n=6: the interval is min..max


@pytest.mark.parametrize("samples, last, extra, expected", [
    (STEADY, 6, [], "precise: ±0.0 % at Allreduce np=2 1 B (the worst row) after 6 repeats"),
    (SPREAD, 6, [], "precise: ±2.4 % at Allreduce np=2 1 B (the worst row) after 6 repeats"),
    (OUTLIER, 6, [], None),  # +-50 % at 2 B: another repeat
    (OUTLIER, 10, [], "max reached: ±50.0 % at Allreduce np=2 2 B after 6 successful repeats"),
    (STEADY[:5], 5, [], None),  # fewer than min
    (STEADY[:5], 6, [_run(6, [], "crash")], None),  # a failed repeat adds no sample
    (STEADY[:5], 10, [_run(6, [], "crash")],
     "max reached: no interval yet (5 samples) at Allreduce np=2 1 B after 5 successful repeats"),
])
def test_stop_rule(samples, last, extra, expected):
    runs = [_run(k, values) for k, values in enumerate(samples, 1)] + extra
    assert stop_reason(runs, "imb-mpi1", RULE, last) == expected


def test_a_rate_is_judged_as_a_rate_and_every_row_counts():
    rates = [[100.0, 1000.0 + k] for k in range(6)]
    worst = precision([_run(k, v, key="mbytes_per_s") for k, v in enumerate(rates, 1)],
                      "imb-mpi1")
    assert worst.row == "Allreduce np=2 2 B" and worst.samples == 6
    median = 2 / (1 / 1002 + 1 / 1003)  # of a rate: the rate of the median time
    assert worst.halfwidth == pytest.approx(max(median - 1000, 1005 - median) / median)


# ----------------------------------------------------------------- real runs with Intel MPI


MATRIX = """
    benchmark: imb-mpi1
    campaign: adaptive
    repeats: REPEATS
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters: {benchmarks: PingPong, msglog: "0:3", iter: 1, ranks_per_node: 2}
    product:
      executable: [QUIET, IMB-MPI1]
    """


@pytest.fixture(scope="module")
def sweep(impi_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adaptive")
    quiet = tmp / "quiet-imb"
    quiet.write_text(f"#!/bin/sh\ncat {RECORDED}\n")  # the same numbers every run
    quiet.chmod(0o755)
    folder = tmp / "matrices" / "local"
    folder.mkdir(parents=True)
    text = dedent(MATRIX).replace("QUIET", str(quiet))
    (folder / "plain.yaml").write_text(text.replace("REPEATS", "6"))
    # -iter 1 times differ from run to run at 0.01 us steps: never within +-0.1 % at every size.
    (folder / "adaptive.yaml").write_text(text.replace("REPEATS", "{min: 6, max: 8, ci: 0.001}"))
    out = str(tmp / "results")
    plain = commstack("run", str(folder / "plain.yaml"), "--out", out)
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
    root = tmp / "results" / "local" / "adaptive"
    status_before = commstack("status", str(root), "--matrix", str(folder / "adaptive.yaml"), "-v")
    submit_before = commstack("submit", str(folder / "adaptive.yaml"), "--out", out, "--dry-run")
    run = commstack("run", str(folder / "adaptive.yaml"), "--out", out)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    again = commstack("run", str(folder / "adaptive.yaml"), "--out", out)
    status_after = commstack("status", str(root), "-v")
    submit_after = commstack("submit", str(folder / "adaptive.yaml"), "--out", out, "--dry-run",
                             "--resume")
    # The quiet point alone in a campaign of its own, adaptive from its first repeat.
    (folder / "quiet.yaml").write_text(text.replace("REPEATS", "{min: 6, max: 8, ci: 0.001}")
                                       .replace("IMB-MPI1]", "]").replace(", ]", "]")
                                       .replace("campaign: adaptive", "campaign: quiet"))
    alone = {}
    for campaign, extra in (("quiet", ()), ("quiet-parallel", ("--parallel", "2"))):
        alone[campaign] = commstack("run", str(folder / "quiet.yaml"), "--out", out,
                                    "--campaign", campaign, *extra)
        assert alone[campaign].returncode == 0, alone[campaign].stderr[-3000:]
    return root, (status_before, submit_before), run, again, (status_after, submit_after), alone


def _point(rows, executable: str) -> str:
    """The id of the quiet point or of the noisy one (real IMB-MPI1)."""
    return next(r["point_id"] for r in rows
                if (r["params"]["executable"] == "IMB-MPI1") == (executable == "noisy"))


def test_status_shows_a_point_below_precision_as_pending(sweep):
    root, (before, submit), *_ = sweep
    assert before.returncode == 0, before.stderr
    assert "# nodes=1: 1 runs" in submit.stdout, submit.stdout + submit.stderr  # as submit counts
    quiet, noisy = (_point(records(root), k) for k in ("quiet", "noisy"))
    lines = {line.split()[0]: line for line in before.stdout.splitlines()}
    # 12 done by the plain sweep (same campaign); the noisy point takes a 7th repeat.
    assert lines[quiet].startswith(f"{quiet}  d d d d d d  ") and "[precise: ±0.0 %" in lines[quiet]
    assert lines[noisy].startswith(f"{noisy}  d d d d d d p  "), lines[noisy]
    assert "12 done, 0 failed, 0 running, 1 pending (of 13 runs)" in before.stdout
    assert "1 point precise, 1 point still taking repeats" in before.stdout


def test_the_quiet_point_stops_at_min_the_noisy_one_runs_to_max(sweep):
    root, _, run, *_ = sweep
    rows = records(root)
    quiet, noisy = (_point(rows, k) for k in ("quiet", "noisy"))
    counts = ok_counts(root)
    assert sorted(r for p, r in counts if p == quiet) == [1, 2, 3, 4, 5, 6]
    assert sorted(r for p, r in counts if p == noisy) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert set(counts.values()) == {1}  # nothing run twice
    stopped = {(r["point_id"], r["repeat"]): r.get("repeats_stopped") for r in rows}
    # The plain sweep (repeats: 6) wrote no reason; the adaptive one writes it on the last.
    assert all(why is None for (p, k), why in stopped.items() if (p, k) != (noisy, 8))
    assert re.fullmatch(r"max reached: ±\d+\.\d % at PingPong np=2 \d+ B after 8 successful "
                        r"repeats", stopped[(noisy, 8)])
    assert "campaign " in run.stderr and "2 runs now, 12 already done, 0 failed" in run.stderr
    assert "round 7: 1 of 2 points take repeat 7 (not within ±0.1 % yet)" in run.stdout
    assert "[13/13, 0 failed] rep 7" in run.stdout and "[14/14, 0 failed] rep 8" in run.stdout
    assert f"no more repeats of {noisy}: max reached:" in run.stdout
    assert "round 9" not in run.stdout


@pytest.mark.parametrize("campaign", ["quiet", "quiet-parallel"])
def test_a_quiet_point_stops_at_min_and_its_last_record_says_why(sweep, campaign):
    root, *_, alone = sweep
    rows = records(root.parent / campaign)
    assert sorted(r["repeat"] for r in rows if r["status"] == "ok") == [1, 2, 3, 4, 5, 6]
    why = {r["repeat"]: r.get("repeats_stopped") for r in rows}
    assert why == {k: None for k in range(1, 6)} | {
        6: "precise: ±0.0 % at PingPong np=2 0 B (the worst row) after 6 repeats"}
    assert "[6/6, 0 failed] rep 6" in alone[campaign].stdout
    assert "round 7" not in alone[campaign].stdout


def test_a_resumed_adaptive_sweep_runs_nothing_done(sweep):
    root, _, _, again, (after, submit), _ = sweep
    assert again.returncode == 0, again.stderr
    assert "0 runs now, 14 already done, 0 failed" in again.stderr
    assert len(records(root)) == 14
    assert "14 done, 0 failed, 0 running, 0 pending (of 14 runs)" in after.stdout
    assert "1 point precise, 1 point at max" in after.stdout
    assert "nothing left to run" in submit.stdout, submit.stdout + submit.stderr
