"""Racing within a tuning step (commstack.tune.racing): a clearly worse candidate stops taking
runs after a round, the incumbent never does, a knob that does nothing still never wins, the
budget stops a race before a round that would pass it, a resumed race decides as the first did,
and `commstack tune` records every round and its runs (decision.json) and prints the runs a plan
takes before anything runs (--review). The lab's figures (SimGrid SMPI) are in
docs/measured.md, "The tuner lab"."""

from __future__ import annotations

import json
import random
from pathlib import Path
from textwrap import dedent
from typing import Dict, List

import pytest

from commstack.matrix.model import MatrixError
from commstack.tune import decide as rule
from commstack.tune.racing import Racing, load_racing, race
from tests.recorded_imb import local_plan, recorded_imb, recorded_plan
from tests.sweeps import commstack

SIZES = [2 ** k for k in range(0, 20, 2)]  # 10 sizes


class Lab:
    """Candidates with a true time per size (``level`` x the size's base time) and
    multiplicative launch noise: ``run`` takes one more repeat of each candidate asked."""

    def __init__(self, levels: Dict[str, float], noise: float, seed: int) -> None:
        self.levels, self.noise = levels, noise
        self.rng = random.Random(seed)
        self.samples: Dict[str, Dict[int, List[float]]] = {c: {s: [] for s in SIZES}
                                                          for c in levels}
        self.launched = 0

    def run(self, racing: List[str], repeat: int) -> int:
        for cand in racing:
            for size in SIZES:
                column = self.samples[cand][size]
                if len(column) < repeat:
                    column.append(self.levels[cand] * (1 + size / 1e4)
                                  * self.rng.lognormvariate(0, self.noise))
                    self.launched += 1 if size == SIZES[0] else 0
        return len(racing)

    def data_at(self, repeats: int) -> rule.Measurements:
        return {c: {s: v[:repeats] for s, v in by.items() if v}
                for c, by in self.samples.items() if any(by.values())}


def test_a_clearly_worse_candidate_is_dropped_and_the_best_kept():
    lab = Lab({"default": 1.0, "faster": 0.8, "same": 1.0, "slow": 2.0}, 0.02, 1)
    found = race(list(lab.levels), "default", Racing(4, 2, 12), rule.Rule(), lab.run, lab.data_at)
    first = found.rounds[0]
    assert first.repeats == 4 and "slow" in first.dropped
    dropped = {c for r in found.rounds for c in r.dropped}
    assert "faster" not in dropped and "default" not in dropped  # the incumbent never
    assert "same" in dropped  # 20 % slower than the best at every size
    assert found.runs < 4 * 12  # fewer than every candidate at 12 repeats
    outcome = rule.decide(lab.data_at(12), "default", rule.Rule())
    assert outcome.winner == "faster"


def test_a_knob_that_does_nothing_does_not_win_after_a_race():
    """200 races of four candidates drawn alike (noise 0.2): the step's decision after the
    race names a winner in at most 5 % of them (the rule's guarantee is kept)."""
    winners = 0
    for seed in range(200):
        lab = Lab({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, 0.2, seed)
        found = race(list(lab.levels), "a", Racing(4, 2, 8), rule.Rule(), lab.run, lab.data_at)
        repeats = found.rounds[-1].repeats
        winners += rule.decide(lab.data_at(repeats), "a", rule.Rule()).changed
    assert winners <= 10


def test_the_budget_stops_a_race_before_a_round_that_would_pass_it():
    lab = Lab({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, 0.2, 3)
    found = race(list(lab.levels), "a", Racing(4, 2, 16), rule.Rule(), lab.run, lab.data_at,
                 budget=22, launched=lambda: lab.launched)
    assert found.stopped == "budget of 22 runs reached"
    assert lab.launched <= 22 and found.rounds[-1].repeats == 4


def test_a_resumed_race_drops_what_the_first_dropped():
    """Rounds are decided on the repeats they cover: a race run again over the runs already made
    (a resumed step: nothing new launched) takes the same decisions."""
    lab = Lab({"default": 1.0, "faster": 0.8, "slow": 1.6, "slower": 3.0}, 0.05, 5)
    first = race(list(lab.levels), "default", Racing(4, 2, 10), rule.Rule(), lab.run,
                 lab.data_at)
    again = race(list(lab.levels), "default", Racing(4, 2, 10), rule.Rule(),
                 lambda racing, repeat: 0, lab.data_at)
    assert [(r.repeats, r.racing, r.dropped) for r in again.rounds] == \
        [(r.repeats, r.racing, r.dropped) for r in first.rounds]


@pytest.mark.parametrize("raw,message", [
    ({"first": 3}, "below 4 repeats"),
    ({"first": 4, "most": 2}, "most >= first"),
    ({"rounds": 2}, "unknown key(s) rounds"),
    ("yes", "expected a mapping"),
])
def test_racing_settings_are_checked(raw, message):
    with pytest.raises(MatrixError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_racing(Path("plan.yaml"), raw, 8)


PLAN = recorded_plan("raced", 6, "I_MPI_ADJUST_ALLREDUCE: 1", """\
      - name: algorithm
        product: {I_MPI_ADJUST_ALLREDUCE: [1, 2, 3, 4]}
    """, "racing: {first: 6, round: 2, most: 8}\n")


@pytest.fixture(scope="module")
def raced(impi_root, tmp_path_factory) -> Path:
    """A real `commstack tune` with racing, launched by Intel MPI's mpirun: the benchmark prints
    a recorded IMB-MPI1 output, its times three times longer under algorithm 4."""
    tmp = tmp_path_factory.mktemp("raced")
    exe = recorded_imb(tmp)
    plan = local_plan(tmp, "raced", dedent(PLAN).replace("EXE", str(exe)))
    return plan


def test_a_raced_tune_records_its_rounds_and_runs(raced):
    out = raced.parent.parent.parent / "results"
    review = commstack("tune", str(raced), "--review")
    assert review.returncode == 0, review.stderr[-2000:]
    # 4 candidates x 6 repeats without racing; raced: 4 x 6 (every challenger dropped at once)
    # to 4 x 8 (none dropped)
    assert "| benchmarks=PingPong | algorithm | 4 | 24 | 24-32 |" in review.stdout
    assert "racing: 6 repeats each, then 2 more per round" in review.stdout
    too_small = commstack("tune", str(raced), "--out", str(out), "--local", "--budget", "10")
    assert too_small.returncode == 2 and "first round alone takes 4 candidates x 6 repeats = 24 " \
        "runs" in too_small.stderr
    done = commstack("tune", str(raced), "--out", str(out), "--local")
    assert done.returncode in (0, 3), done.stdout[-3000:] + done.stderr[-3000:]
    decision = json.loads(next(out.glob("local/raced/*/algorithm/decision.json")).read_text())
    rounds = decision["racing"]["rounds"]
    assert [r["repeats"] for r in rounds] == [6, 8]
    assert rounds[0]["dropped"] == [{"I_MPI_ADJUST_ALLREDUCE": 4}]
    assert rounds[1]["racing"] == 3 and decision["racing"]["stopped"] == "8 repeats reached"
    assert decision["runs"] == 4 * 6 + 3 * 2 == decision["racing"]["runs"]
    assert not decision["changed"]  # algorithms 1, 2 and 3 print the same times
    assert "raced 4 candidates, 30 runs" in done.stdout
    table = (out / "local" / "raced" / "decisions.md").read_text()
    header = [cell.strip() for cell in table.splitlines()[0].strip("|").split("|")]
    assert header.index("runs") + 1 == header.index("racing")
    assert "algorithm: 30 runs, 1 of 4 dropped (1 at 6 repeats)" in table
