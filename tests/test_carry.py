"""A step's incumbent carried from the step before (plan ``carry_incumbent: true``,
commstack.tune.carry): the step launches its challengers only, decides on the incumbent's runs
where they were made, says so in decision.json, and carries nothing that is not the same point."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.matrix.model import MatrixError
from commstack.tune.carry import measured
from commstack.tune.plan import load_plan
from tests.recorded_imb import TWO_STEPS, local_plan, recorded_imb, recorded_plan
from tests.sweeps import commstack

PLAN = recorded_plan("carried", 4, "I_MPI_ADJUST_ALLREDUCE: 1, I_MPI_ADJUST_BCAST: 1", TWO_STEPS,
                     "carry_incumbent: true\n")


@pytest.fixture(scope="module")
def carried(impi_root, tmp_path_factory) -> Path:
    """A real `commstack tune` of two steps, launched by Intel MPI's mpirun: the benchmark
    prints a recorded IMB-MPI1 output, its times three times longer under Allreduce
    algorithm 4, so the first step keeps algorithm 1 and the second step's incumbent is that
    point."""
    tmp = tmp_path_factory.mktemp("carried")
    return _tuned(tmp, dedent(PLAN).replace("EXE", str(recorded_imb(tmp))))


def _tuned(tmp: Path, text: str) -> Path:
    """The plan ``text`` tuned for real under ``tmp``: its case's folder."""
    plan = local_plan(tmp, "carried", text)
    out = tmp / "results"
    done = commstack("tune", str(plan), "--out", str(out), "--local")
    assert done.returncode in (0, 3), done.stdout[-3000:] + done.stderr[-3000:]
    return next(out.glob("local/carried/*/allreduce")).parent


def test_the_carried_incumbent_is_not_run_again(carried):
    first = json.loads((carried / "allreduce" / "decision.json").read_text())
    second = json.loads((carried / "bcast" / "decision.json").read_text())
    assert first["runs"] == 2 * 4 and "incumbent_from" not in first
    assert not first["changed"]
    # The second step launched its challenger alone; its incumbent's 4 runs are the first's.
    assert second["runs"] == 4
    assert second["incumbent_from"] == {"step": "allreduce", "runs": 4, "repeats": 4}
    assert second["candidates"] == 2 and not second["changed"]
    assert len(list((carried / "bcast" / "points").iterdir())) == 1
    scored = {json.dumps(s["setting"]) for s in second["scores"]}
    assert scored == {'{"I_MPI_ADJUST_BCAST": 1}', '{"I_MPI_ADJUST_BCAST": 2}'}


def test_only_the_same_point_is_carried(carried):
    params = {"benchmarks": "PingPong", "I_MPI_ADJUST_ALLREDUCE": 1, "I_MPI_ADJUST_BCAST": 1}
    found = measured("allreduce", carried / "allreduce", params)
    assert found is not None and found.runs == 4 and len(found.points) == 1
    assert measured("allreduce", carried / "allreduce",
                    dict(params, I_MPI_ADJUST_BCAST=2)) is None


def test_carry_incumbent_is_a_boolean(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(dedent(PLAN).replace("carry_incumbent: true", "carry_incumbent: yes please"))
    with pytest.raises(MatrixError, match="carry_incumbent: expected true or false"):
        load_plan(plan)


def test_the_review_counts_a_carried_incumbent_once(carried):
    plan = carried.parents[3] / "plans" / "local" / "carried.yaml"
    review = commstack("tune", str(plan), "--review")
    assert review.returncode == 0, review.stderr[-2000:]
    assert "| benchmarks=PingPong | allreduce | 2 | 8 | - |" in review.stdout
    assert "| benchmarks=PingPong | bcast | 1 | 4 | - |" in review.stdout
    assert "incumbents carried" in review.stdout


@pytest.fixture(scope="module")
def carried_race(impi_root, tmp_path_factory) -> Path:
    """The same two steps raced: the first race drops algorithm 4 after its first round and
    ends with the incumbent alone at 4 repeats, so the second step's incumbent is carried with
    4 repeats and runs the 2 it lacks there."""
    tmp = tmp_path_factory.mktemp("carried-race")
    text = dedent(PLAN).replace("EXE", str(recorded_imb(tmp))).replace("repeats: 4", "repeats: 6")
    return _tuned(tmp, text + "racing: {first: 4, round: 2, most: 6}\n")


def test_a_carried_incumbent_runs_only_the_repeats_it_lacks(carried_race):
    first = json.loads((carried_race / "allreduce" / "decision.json").read_text())
    second = json.loads((carried_race / "bcast" / "decision.json").read_text())
    assert first["racing"]["stopped"] == "only the incumbent left"
    assert first["runs"] == 2 * 4
    assert second["incumbent_from"] == {"step": "allreduce", "runs": 4, "repeats": 4}
    # the challenger's 6 repeats and the incumbent's 5th and 6th
    assert second["runs"] == 6 + 2 == second["racing"]["runs"]
    mine = [json.loads(p.read_text()) for p in
            (carried_race / "bcast" / "points").glob("*/rep*.try*/record.json")]
    assert sorted(r["repeat"] for r in mine if r["params"]["I_MPI_ADJUST_BCAST"] == 1) == [5, 6]
    table = (carried_race.parent / "decisions.md").read_text()
    assert "bcast: 8 runs, 0 of 2 dropped, incumbent's runs from allreduce" in table
