"""Must show: the points of each repeat run in a seeded shuffled order by default (anew every
repeat, recorded in every record, shown by `commstack plan`, the same again for the same seed);
`order: fixed` keeps the matrix's order; a resumed sweep keeps the order and reruns nothing done.
Real runs with Intel MPI from PyPI (a script printing one recorded IMB output as the benchmark);
plan-level checks need no MPI."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix
from commstack.matrix.model import Point
from commstack.run_order import ordered, seed_of
from tests.sweeps import commstack, launcher_stand_ins, ok_counts, records

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests/fixtures/imb/intelmpi-2021.18/prebuilt-mpi1-pingpong-np2.out"
POINTS = [Point("imb-mpi1", (("iter", i),)) for i in range(12)]


def _ids(points) -> list:
    return [p.id for p in points]


def test_shuffled_order_is_reproducible_differs_by_seed_and_repeat():
    first = ordered(POINTS, 1, seed=7)
    assert sorted(_ids(first)) == sorted(_ids(POINTS))  # every point once
    assert _ids(first) == _ids(ordered(POINTS, 1, seed=7))  # same seed, same order
    assert _ids(first) != _ids(POINTS)
    assert _ids(first) != _ids(ordered(POINTS, 1, seed=8))
    assert _ids(first) != _ids(ordered(POINTS, 2, seed=7))  # anew every repeat
    # Given in another order (another matrix layout), the same order comes out.
    assert _ids(ordered(list(reversed(POINTS)), 3, seed=7)) == _ids(ordered(POINTS, 3, seed=7))


def test_each_repeat_starts_at_another_point():
    firsts = [ordered(POINTS, k, seed=7)[0].id for k in range(1, 13)]
    assert len(set(firsts)) == 12  # no point is always first (each --repeat K job starts elsewhere)


def test_a_subset_keeps_the_relative_order():
    """A shard or a node-count group of a campaign runs its points in the campaign's order
    (except the first point of each repeat, which rotates within the subset)."""
    whole = _ids(ordered(POINTS, 4, seed=7))
    part = [p for p in POINTS if p.get("iter") % 2]
    mine = _ids(ordered(part, 4, seed=7))
    assert [i for i in whole if i in set(mine[1:])] == mine[1:]


@pytest.mark.parametrize("rotate, repeat, expected", [
    (False, 3, list(range(12))),  # a sweep of every repeat: the matrix's order every time
    (True, 1, list(range(12))),
    (True, 3, list(range(2, 12)) + [0, 1]),  # --repeat 3: starts at the third point
])
def test_fixed_order_is_the_matrixs(rotate, repeat, expected):
    assert _ids(ordered(POINTS, repeat, None, rotate)) == [POINTS[i].id for i in expected]


MATRIX = """
    benchmark: imb-mpi1
    campaign: CAMPAIGN
    repeats: 3
    timeout: 60
    EXTRA
    stacks:
      STACK
    parameters: {benchmarks: PingPong, ranks_per_node: 1, executable: EXE}
    product:
      iter: [1, 2, 3, 4, 5, 6]
    """


def _matrix(folder: Path, stack: str, exe: str, extra: str = "", name: str = "order",
            campaign: str = "") -> Path:
    path = folder / "matrices" / "local" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(MATRIX).replace("STACK", stack).replace("EXE", exe)
                    .replace("EXTRA", extra).replace("CAMPAIGN", campaign or name))
    return path


def _planned(matrix: Path, *extra: str) -> list:
    out = commstack("plan", str(matrix), "--json", "--local", *extra, cwd=matrix.parents[2])
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_plan_shows_the_order(tmp_path):
    stack = f"m: {{flavour: mpich, bin: {launcher_stand_ins(tmp_path / 'bin')}}}"
    shuffled = _matrix(tmp_path, stack, "\"true\"")
    fixed = _matrix(tmp_path, stack, "\"true\"", "order: fixed", "fixed")
    seeded = _matrix(tmp_path, stack, "\"true\"", "seed: 42", "seeded")
    points = expand(load_matrix(shuffled))
    lines = _planned(shuffled)
    seed = seed_of(load_matrix(shuffled), "order")
    assert [x["point_id"] for x in lines] == _ids(ordered(points, 1, seed))
    assert [x["order"] for x in lines] == [
        {"kind": "shuffled", "seed": seed, "repeat": 1, "position": i} for i in range(1, 7)]
    assert [x["point_id"] for x in _planned(fixed)] == _ids(points)
    assert _planned(fixed)[0]["order"] == {"kind": "fixed", "seed": None, "repeat": 1,
                                           "position": 1}
    assert [x["point_id"] for x in _planned(seeded)] == _ids(ordered(points, 1, 42))
    assert [x["point_id"] for x in _planned(seeded)] != [x["point_id"] for x in lines]
    text = commstack("plan", str(shuffled), "--local", cwd=tmp_path)
    assert (f"# order: shuffled anew every repeat, seed {seed} (derived from the campaign name);"
            " the points below in the order of repeat 1") in text.stdout


def _run_order(root: Path) -> dict:
    """Repeat -> point ids in the order their runs started, with each record's order."""
    rows = sorted(records(root), key=lambda r: r["start"])
    found: dict = {}
    for r in rows:
        found.setdefault(r["repeat"], []).append((r["point_id"], r["order"]))
    return found


@pytest.fixture(scope="module")
def runs(impi_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("order")
    quiet = tmp / "recorded-imb"
    quiet.write_text(f"#!/bin/sh\ncat {RECORDED}\n")
    quiet.chmod(0o755)
    stack = 'impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}'
    out = str(tmp / "results")
    fixed = _matrix(tmp, stack, str(quiet), "order: fixed", "fixed")
    shuffled = _matrix(tmp, stack, str(quiet))
    two = _matrix(tmp, stack, str(quiet), name="two", campaign="order")
    two.write_text(two.read_text().replace("repeats: 3", "repeats: 2"))
    done = {}
    for name, matrix in (("fixed", fixed), ("two", two), ("three", shuffled)):
        done[name] = commstack("run", str(matrix), "--out", out)
        assert done[name].returncode == 0, done[name].stdout[-3000:] + done[name].stderr[-3000:]
    return tmp / "results" / "local", load_matrix(shuffled), done


def test_fixed_order_runs_the_matrixs_order_every_repeat(runs):
    results, matrix, _ = runs
    order = _run_order(results / "fixed")
    points = _ids(expand(matrix))
    assert sorted(order) == [1, 2, 3]
    for ran in order.values():
        assert [p for p, _ in ran] == points
        assert [o for _, o in ran] == [{"kind": "fixed", "position": i} for i in range(1, 7)]


def test_shuffled_order_is_recorded_and_reproducible_across_a_resume(runs):
    """Repeats 1-2 by one sweep, repeat 3 by a second of the same campaign: each repeat in the
    order the seed gives, nothing rerun."""
    results, matrix, done = runs
    root = results / "order"
    assert "6 runs now, 12 already done, 0 failed" in done["three"].stderr
    counts = ok_counts(root)
    assert len(counts) == 18 and set(counts.values()) == {1}
    seed = seed_of(matrix, "order")
    points = expand(matrix)
    order = _run_order(root)
    for repeat in (1, 2, 3):
        ran = order[repeat]
        assert [p for p, _ in ran] == _ids(ordered(points, repeat, seed))
        assert [o for _, o in ran] == [{"kind": "shuffled", "seed": seed, "position": i}
                                       for i in range(1, 7)]
    assert [p for p, _ in order[1]] != _ids(points)  # not the fixed order
    assert len({order[k][0][0] for k in (1, 2, 3)}) == 3
    assert f"order: shuffled anew every repeat, seed {seed}" in done["two"].stdout


# --- a tuning plan's sweeps -----------------------------------------------------------------------

TUNE_PLAN = """
    campaign: ordered
    base:
      benchmark: imb-mpi1
      repeats: 2
      timeout: 60
      EXTRA
      stacks:
        impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
      parameters: {stack: impi, ranks_per_node: 1, executable: EXE}
    cases:
      benchmarks: [PingPong]
    defaults: {I_MPI_ADJUST_ALLREDUCE: 1}
    steps:
      - name: algorithm
        product: {I_MPI_ADJUST_ALLREDUCE: [1, 2, 3, 4]}
    """


def _tune_plan(folder: Path, exe: str, extra: str) -> Path:
    path = folder / "plans" / "local" / "ordered.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(TUNE_PLAN).replace("EXE", exe).replace("EXTRA", extra))
    return path


def test_a_tuning_plan_passes_order_and_seed_to_every_sweep_it_makes(impi_root, tmp_path):
    """`base: {seed: 42}`: the step and the verify sweep run each repeat in the order seed 42
    gives, and their matrices and records say so."""
    quiet = tmp_path / "recorded-imb"
    quiet.write_text(f"#!/bin/sh\ncat {RECORDED}\n")
    quiet.chmod(0o755)
    plan = _tune_plan(tmp_path, str(quiet), "seed: 42")
    run = commstack("tune", str(plan), "--out", str(tmp_path / "results"), "--local")
    assert run.returncode in (0, 3), run.stdout[-3000:] + run.stderr[-3000:]
    sweeps = sorted(p.parent for p in (tmp_path / "results" / "local" / "ordered")
                    .glob("*/*/matrix.yaml"))
    assert [p.name for p in sweeps] == ["algorithm", "verify"]
    for step_dir in sweeps:
        matrix = load_matrix(step_dir / "matrix.yaml")
        assert (matrix.order, matrix.seed) == ("shuffled", 42)
        points = expand(matrix)
        order = _run_order(step_dir)
        assert sorted(order) == [1, 2]
        for repeat, ran in order.items():
            assert [p for p, _ in ran] == _ids(ordered(points, repeat, 42))
            assert [o for _, o in ran] == [{"kind": "shuffled", "seed": 42, "position": i}
                                           for i in range(1, len(points) + 1)]
        assert "order: shuffled anew every repeat, seed 42 (seed: of the matrix)" in run.stdout
    step = _run_order(sweeps[0])
    assert len(step[1]) == 4 and [p for p, _ in step[1]] != [p for p, _ in step[2]]


def test_a_tuning_plans_order_is_checked_like_a_matrixs(tmp_path):
    from commstack.run_order import seed_of
    from commstack.tune.plan import load_plan
    from commstack.tune.review import step_sweeps

    fixed = load_plan(_tune_plan(tmp_path, "true", "order: fixed"))
    (sweep,) = list(step_sweeps(fixed))
    assert sweep.matrix.order == "fixed" and seed_of(sweep.matrix, "algorithm") is None
    default = load_plan(_tune_plan(tmp_path, "true", ""))
    (sweep,) = list(step_sweeps(default))
    assert (sweep.matrix.order, sweep.matrix.seed) == ("shuffled", None)
    for extra, message in (("order: random", "base.order: 'random' is not one of shuffled, fixed"),
                           ("seed: -1", "base.seed: -1 is less than the minimum of 0"),
                           ("seed: first", "base.seed: expected integer, got str 'first'")):
        plan = _tune_plan(tmp_path, "true", extra)
        run = commstack("tune", str(plan), "--out", str(tmp_path / "results"), "--local")
        assert run.returncode == 2 and message in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert not (tmp_path / "results").exists()  # refused before anything ran
