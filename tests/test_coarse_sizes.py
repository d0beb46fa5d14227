"""Sizes where they matter (plan ``coarse_sizes: N``, commstack.tune.sizes): a step measures
every N-th size of its msglog range first, then the sizes between two neighbours whose best
differs, by those bests and the incumbent alone, and places its band boundary there; IMB is
given the sizes as a list (-msglen, a file in the run's folder)."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.matrix.model import MatrixError
from commstack.tune import decide as rule
from commstack.tune import sizes
from commstack.tune.measurements import measurements
from commstack.tune.plan import load_plan
from tests.recorded_imb import RECORDED, local_plan
from tests.sweeps import commstack


def test_the_coarse_sizes_are_every_nth_power_of_two_and_the_last():
    assert sizes.coarse("0:20", 4, "p") == [1, 16, 256, 4096, 65536, 1048576]
    assert sizes.coarse("2:12", 3, "p") == [4, 32, 256, 2048, 4096]
    assert sizes.coarse("10", 4, "p") == [1, 16, 256, 1024]
    with pytest.raises(MatrixError, match="msglog '8:2'"):
        sizes.coarse("8:2", 2, "p")


def test_only_the_sizes_between_two_different_bests_are_refined():
    bands = [rule.Band(1, 16, "two", 0.5), rule.Band(256, 256, "inc", 0.0),
             rule.Band(4096, 65536, "three", 0.4)]
    outcome = rule.Outcome("inc", "inc", bands=bands)
    at = [1, 16, 256, 4096, 65536]
    # "close" is within 5 % of the fastest at 4096 (the neighbour of a change): it may be
    # best in between, so it is measured there too; "slow" never is.
    data = {"inc": {s: [10.0] for s in at}, "two": {s: [5.0] for s in at},
            "three": {s: [6.0] for s in at}, "close": {s: [30.0] for s in at},
            "slow": {s: [40.0] for s in at}}
    data["three"][4096], data["close"][4096] = [2.0], [2.08]
    found = sizes.refinement(outcome, data, 0.05)
    assert found.between == [(16, 256), (256, 4096)]
    assert found.sizes == [32, 64, 128, 512, 1024, 2048]
    assert found.candidates == ["inc", "two", "three", "close"]
    same = sizes.refinement(rule.Outcome("inc", "inc", bands=[rule.Band(1, 65536, "two", 0.5)]),
                            data, 0.05)
    assert same.sizes == [] and same.candidates == []


PLAN = """
    campaign: coarse
    base:
      benchmark: imb-mpi1
      repeats: 6
      timeout: 60
      stacks:
        impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
      parameters: {stack: impi, ranks_per_node: 1, executable: EXE, msglog: "0:12"}
    cases:
      benchmarks: [PingPong]
    defaults: {I_MPI_ADJUST_ALLREDUCE: 1}
    steps:
      - name: algorithm
        product: {I_MPI_ADJUST_ALLREDUCE: [1, 2, 3]}
    coarse_sizes: 4
    """

# An IMB-MPI1 that prints the sizes it is given (-msglen FILE or -msglog a:b) with the recorded
# run's banner: algorithm 2 twice as fast below 64 bytes, algorithm 3 from 64 bytes.
FAKE = """\
    #!/bin/sh
    sizes=""
    while [ $# -gt 0 ]; do
      case "$1" in
        -msglen) sizes=$(cat "$2"); shift ;;
        -msglog) sizes=$(echo "$2" | awk -F: '{ for (e = $1; e <= $2; e++) print 2 ^ e }'); shift ;;
      esac
      shift
    done
    sed -n '1,/#bytes/p' RECORDED
    for s in $sizes; do
      awk -v s="$s" -v alg="$I_MPI_ADJUST_ALLREDUCE" 'BEGIN {
        f = 1; if (alg == 2 && s < 64) f = 0.5; if (alg == 3 && s >= 64) f = 0.5
        t = (1 + s / 1000) * f; printf "%13d %12d %12.2f %12.2f\\n", s, 100, t, s / t }'
    done
    printf '\\n\\n# All processes entering MPI_Finalize\\n\\n'
    """


@pytest.fixture(scope="module")
def tuned(impi_root, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("coarse")
    exe = tmp / "imb-by-sizes"
    exe.write_text(dedent(FAKE).replace("RECORDED", str(RECORDED)))
    exe.chmod(0o755)
    plan = local_plan(tmp, "coarse", dedent(PLAN).replace("EXE", str(exe)))
    out = tmp / "results"
    done = commstack("tune", str(plan), "--out", str(out), "--local")
    assert done.returncode in (0, 3), done.stdout[-3000:] + done.stderr[-3000:]
    assert "refined 16-256 bytes: 3 sizes x 3 candidates, 18 runs" in done.stdout
    return next(out.glob("local/coarse/*/algorithm"))


def test_a_step_refines_where_its_best_changes_and_places_the_boundary_there(tuned):
    decision = json.loads((tuned / "decision.json").read_text())
    assert decision["sizes"]["coarse"] == [1, 16, 256, 4096]
    assert decision["sizes"]["between"] == [[16, 256]]
    assert decision["sizes"]["sizes"] == [32, 64, 128]
    assert decision["runs"] == 3 * 6 + 3 * 6  # the coarse step and the refinement
    bands = [(b["from_bytes"], b["to_bytes"], b["best"]["I_MPI_ADJUST_ALLREDUCE"])
             for b in decision["bands"]]
    assert bands == [(1, 32, 2), (64, 4096, 3)]
    # IMB was given the sizes as a file in each run's folder, and measured those alone.
    record = json.loads(next((tuned / "refine" / "points").glob("*/rep1.try1/record.json"))
                        .read_text())
    assert (Path(record["argv"][record["argv"].index("-msglen") + 1]).read_text()
            == "32\n64\n128\n")
    refined = measurements(tuned / "refine", ["I_MPI_ADJUST_ALLREDUCE"], "PingPong")
    assert {c: sorted(by) for c, by in refined.items()} == {
        (1,): [32, 64, 128], (2,): [32, 64, 128], (3,): [32, 64, 128]}
    coarse = measurements(tuned, ["I_MPI_ADJUST_ALLREDUCE"], "PingPong")
    assert {c: sorted(by) for c, by in coarse.items()} == {
        (a,): [1, 16, 256, 4096] for a in (1, 2, 3)}


def test_coarse_sizes_needs_a_benchmark_that_takes_a_list_of_sizes(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(dedent(PLAN).replace("imb-mpi1", "osu"))
    with pytest.raises(MatrixError, match="coarse_sizes: the benchmark takes no list"):
        load_plan(plan)
    plan.write_text(dedent(PLAN).replace("coarse_sizes: 4", "coarse_sizes: 1"))
    with pytest.raises(MatrixError, match="coarse_sizes: expected a whole number >= 2"):
        load_plan(plan)


def test_the_review_shows_the_coarse_sizes(tuned):
    plan = tuned.parents[4] / "plans" / "local" / "coarse.yaml"
    review = commstack("tune", str(plan), "--review")
    assert review.returncode == 0, review.stderr[-2000:]
    assert "every 4th size of msglog first" in review.stdout
    shown = commstack("plan", str(plan))
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "msglen=1,16,256,4096" in shown.stdout and "msglog" not in shown.stdout
    assert "PingPong -msglen" in shown.stdout


def test_decisions_md_says_where_a_step_refined(tuned):
    table = (tuned.parents[1] / "decisions.md").read_text()
    assert "algorithm: 4 sizes, refined 16-256 bytes (3 sizes x 3 candidates, 18 runs)" in table
    header = [cell.strip() for cell in table.splitlines()[0].strip("|").split("|")]
    row = next(line for line in table.splitlines() if "PingPong" in line)
    runs = [cell.strip() for cell in row.strip("|").split("|")][header.index("runs")]
    assert int(runs) == 3 * 6 + 3 * 6 + 2 * 6  # the step, its refinement and the verify


def test_intel_mpi_imb_measures_the_sizes_it_is_given(impi_root, tmp_path):
    """The real IMB-MPI1 of Intel MPI's wheel, given msglen: its rows are those sizes only, and
    the list it read stays in the run's folder."""
    matrix = tmp_path / "matrices" / "local" / "msglen.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(dedent("""\
        benchmark: imb-mpi1
        repeats: 1
        timeout: 60
        stacks:
          impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
        parameters: {stack: impi, benchmarks: Allreduce, msglen: "4,64,1024", npmin: 2,
                     ranks_per_node: 2, iter: 10}
        """))
    done = commstack("run", str(matrix), "--out", str(tmp_path / "results"), "--local")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    folder = next((tmp_path / "results").glob("local/msglen/points/*/rep1.try1"))
    assert (folder / "msglen.txt").read_text() == "4\n64\n1024\n"
    data = measurements(folder.parents[2], ["stack"], "Allreduce")
    assert sorted(data[("impi",)]) == [4, 64, 1024]
