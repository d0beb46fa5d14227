"""Must show: `commstack compare` passes an identical rerun within noise, flags an injected 20 %
slowdown (and a slowdown of one configuration at three sizes), and checks reference values with
tolerances; its exit status is usable in CI (0 pass, 1 regression, 2 user error). Seven repeats:
the fewest with which a rank test can single out three figures among about a hundred after the
correction (2 / C(14, 7) = 0.0006; with five repeats the floor is 0.008).

The identical rerun is the same matrix run into a second campaign, its repeats interleaved with
the first campaign's in ABBA order (repeat 1 of A then B, repeat 2 of B then A, ...): on this
shared 2-core machine the load from other jobs changes by 2x within minutes, which a
back-to-back rerun would measure as a real difference. Even interleaved, whole runs are lucky or
unlucky (medians of B/A of 0.9 and 1.3 were seen): the rank tests see that spread in the
repeats. The slowdowns are injected into a copy of campaign A's records.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from textwrap import dedent
from typing import Callable, List

import pytest
import yaml

from commstack.store.files import write_new_json
from commstack.store.record import Record
from tests.sweeps import commstack, ok_counts, records

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: {repeats}
    timeout: 120
    stacks:
      impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
    parameters:
      benchmarks: Allreduce Alltoall Allgather PingPong
      msglog: "0:12"
      iter: 100
      ranks_per_node: 2
    product:
      I_MPI_ADJUST_ALLREDUCE: ["", 2]
    """)
REPEATS = 7
TIMES = ("t_min_us", "t_max_us", "t_avg_us", "t_us")


@pytest.fixture(scope="module")
def campaigns(impi_root, tmp_path_factory):
    """Campaigns A and B: the same matrix, repeats interleaved in time (ABBA order)."""
    tmp = tmp_path_factory.mktemp("compare")
    matrix = tmp / "matrices" / "local" / "rerun.yaml"
    matrix.parent.mkdir(parents=True)
    for repeats in range(1, REPEATS + 1):
        matrix.write_text(MATRIX.format(repeats=repeats))  # a resumed run does only the new repeat
        for name in ("a", "b") if repeats % 2 else ("b", "a"):
            run = commstack("run", str(matrix), "--out", str(tmp / "results"), "--campaign", name)
            assert run.returncode == 0, run.stderr[-3000:]
    return tmp, tmp / "results" / "local" / "a", tmp / "results" / "local" / "b"


def scaled_copy(source: Path, target: Path, factor: float,
                select: Callable[[dict, dict], bool] = lambda rec, row: True) -> Path:
    """A new campaign holding ``source``'s records with the times of selected rows x factor."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("record.json", "report"))
    for path in source.glob("points/*/rep*.try*/record.json"):
        rec = Record.load(path).to_dict()  # rows as objects, whatever form record.json holds
        for row in rec.get("parsed") or []:
            if select(rec, row):
                row.update({k: row[k] * factor for k in TIMES if isinstance(row.get(k), float)})
        write_new_json(target / path.relative_to(source), rec)
    return target


def summary_counts(markdown: str) -> dict:
    """{"matched figures": 96, "regressions": 0, "slower": 90, ...} from compare's summary."""
    counts = {}
    for line in markdown.splitlines()[:10]:
        for part in line.lstrip("- ").split("; "):
            name, _, value = part.partition(": ")
            if value.isdigit():
                counts[name] = int(value)
    return counts


def test_campaigns_ran_interleaved(campaigns):
    _, a, b = campaigns
    for root in (a, b):
        counts = ok_counts(root)
        assert len(counts) == 2 * REPEATS and set(counts.values()) == {1}
    sessions = sorted(s.name for root in (a, b) for s in (root / "sessions").iterdir())
    assert len(sessions) == 2 * REPEATS


def _samples(root: Path, point: str, metric: str) -> List[float]:
    """The metric of every repeat of the row a compare table line names."""
    want = dict(part.split("=", 1) for part in point.split(", "))
    out = []
    for rec in records(root):
        setting = want.get("I_MPI_ADJUST_ALLREDUCE")
        if setting is not None and str(rec["params"].get("I_MPI_ADJUST_ALLREDUCE")) != setting:
            continue
        out += [row[metric] for row in rec["parsed"] if row.get("benchmark") == want["benchmark"]
                and str(row.get("bytes")) == want["bytes"] and metric in row]
    return out


def test_identical_rerun_passes_within_noise(campaigns):
    tmp, a, b = campaigns
    run = commstack("compare", str(a), str(b), "--out", str(tmp / "rerun.md"))
    assert "Benjamini-Hochberg over" in run.stdout
    if run.returncode != 0:
        # This 2-core VM now and then runs one configuration's small PingPongs twice as slow for
        # a whole campaign (seen in CI: 0.29 vs 0.56 us in every repeat). Then compare must be
        # right to say so: every flagged point's B repeats all worse than all of A's.
        flagged = [line.lstrip("| ").split(" | ")[:2] for line in run.stdout.splitlines()
                   if line.endswith("| regression |")]
        assert flagged, run.stdout[:3000]
        for point, metric in flagged:
            sa, sb = _samples(a, point, metric), _samples(b, point, metric)
            assert len(sa) == len(sb) == REPEATS, (point, sa, sb)
            assert sorted(sb)[REPEATS // 2] > 1.05 * sorted(sa)[REPEATS // 2], (point, sa, sb)
        return
    assert "verdict: **PASS**" in run.stdout and "regressions: 0;" in run.stdout
    assert "matched on: I_MPI_ADJUST_ALLREDUCE, benchmarks, iter, msglog, ranks_per_node" \
        in run.stdout
    assert (tmp / "rerun.md").read_text() == run.stdout


def test_injected_20_percent_slowdown_is_flagged(campaigns):
    tmp, a, _ = campaigns
    slow = scaled_copy(a, tmp / "results" / "local" / "slow20", 1.2)
    run = commstack("compare", str(a), str(slow))  # default threshold 5 %
    assert run.returncode == 1, run.stdout[:3000]
    assert "over the figures 1.200 (broad slowdown)" in run.stdout, run.stdout[:2000]
    assert "verdict: **FAIL**" in run.stdout
    # Every pass of B is 1.2x its A: seven paired passes, all slower (p = 1 / 2^7).
    assert "per paired pass 1.200, 1.200, 1.200, 1.200, 1.200, 1.200, 1.200; their " \
        "Hodges-Lehmann estimate 1.200; signed-rank p = 0.0078 (significant" in run.stdout
    assert summary_counts(run.stdout)["improvements"] == 0
    # The same slowdown is within a 25 % threshold.
    assert commstack("compare", str(a), str(slow), "--threshold", "0.25").returncode == 0


def test_a_slowdown_of_one_configuration_at_large_sizes_is_a_regression(campaigns):
    tmp, a, _ = campaigns

    def allreduce_large(rec: dict, row: dict) -> bool:
        return (row.get("benchmark") == "Allreduce" and (row.get("bytes") or 0) >= 1024
                and rec["params"]["I_MPI_ADJUST_ALLREDUCE"] == 2)

    slow = scaled_copy(a, tmp / "results" / "local" / "slow-allreduce", 10.0, allreduce_large)
    # Among all 108 figures, 7 repeats cannot single out three (p >= 0.0006 each, corrected over
    # 108 at alpha/2): compare says so rather than guess.
    everything = commstack("compare", str(a), str(slow))
    assert "a change at a single one cannot be called" in everything.stdout, everything.stdout[:2000]
    run = commstack("compare", str(a), str(slow), "--where", "benchmark=Allreduce")
    assert run.returncode == 1, run.stdout[:3000]
    assert "over the figures 1.000;" in run.stdout and "verdict: **FAIL**" in run.stdout
    flagged = [line for line in run.stdout.splitlines() if line.endswith("| regression |")]
    # 1, 2 and 4 KiB, each 10x; a size where one of A's repeats was itself 10x slow (a busy VM)
    # is not separated and stays "same".
    assert 1 <= len(flagged) <= 3 and summary_counts(run.stdout)["regressions"] == len(flagged)
    assert all("I_MPI_ADJUST_ALLREDUCE=2" in line and re.search(r"bytes=(1024|2048|4096),", line)
               for line in flagged), flagged


def test_reference_values_with_tolerances(campaigns, tmp_path):
    _, a, b = campaigns
    ref = tmp_path / "local.yaml"
    written = commstack("compare", str(a), "--write-reference", str(ref), "--where",
                        "benchmark=PingPong", "--tolerance", "4.0")
    assert written.returncode == 0, written.stderr
    data = yaml.safe_load(ref.read_text())
    assert data["machine"] == "local" and len(data["references"]) == 2 * 14
    entry = data["references"][0]
    assert entry["match"]["benchmark"] == "PingPong" and entry["metric"] == "t_us"
    assert (entry["lower"], entry["upper"]) == (-4.0, 4.0)
    checked = commstack("compare", str(b), "--reference", str(ref))
    assert checked.returncode == 0 and "checked: 28, out of bounds: 0" in checked.stdout
    # Never overwritten.
    assert commstack("compare", str(a), "--write-reference", str(ref)).returncode == 2
    # A reference 10x below what B measures, +-10 %, is out of bounds.
    entry.update(value=entry["value"] / 10, lower=-0.1, upper=0.1)
    tight = tmp_path / "tight.yaml"
    tight.write_text(yaml.safe_dump(data))
    out = commstack("compare", str(b), "--reference", str(tight))
    assert out.returncode == 1 and "out of bounds: 1," in out.stdout
    assert out.stdout.splitlines()[7].endswith("| out of bounds |")


def test_committed_betzy_references_hold_for_the_imported_tables():
    from tests.conftest import REPO

    run = commstack("compare", str(REPO / "results" / "betzy" / "reference"), "--reference",
                    str(REPO / "references" / "betzy.yaml"))
    assert run.returncode == 0, run.stdout[:2000]
    assert "checked: 80, out of bounds: 0, not measured: 0" in run.stdout


def test_user_errors_exit_2(campaigns, tmp_path):
    _, a, _ = campaigns
    assert commstack("compare", str(tmp_path), str(a)).returncode == 2
    assert commstack("compare", str(a)).returncode == 2  # neither B nor --reference
    bad = tmp_path / "bad.yaml"
    bad.write_text("references: [{match: {}}]\n")
    run = commstack("compare", str(a), "--reference", str(bad))
    assert run.returncode == 2 and "needs match, metric and value" in run.stderr
    # Nothing in common: every figure's key differs.
    other = records(a)[0]["params"]["msglog"]
    run = commstack("compare", str(a), str(a), "--where", f"msglog={other}x")
    assert run.returncode == 2


def test_one_printed_digit_apart_is_not_a_regression():
    """IMB prints 0-byte times as 0.03 or 0.04 us: every B run worse than every A run, yet a
    single unit of the last digit (rounding) is not beyond the threshold; two units are."""
    from commstack.compare import Figure, Match, judge

    def match(a, b):
        return Match(Figure({}, {"bytes": 0}, "t_avg_us", True, a), Figure({}, {"bytes": 0},
                     "t_avg_us", True, b), 0.10)

    one_digit = match([0.03] * 7, [0.04] * 7)
    two_digits = match([0.03] * 7, [0.05] * 7)
    judge([one_digit, two_digits])
    assert one_digit.verdict == "same" and two_digits.verdict == "regression"


def test_a_single_value_is_never_a_regression():
    """An imported table has one value per figure: beyond the threshold it is "untested", and
    the comparison passes."""
    from commstack.compare import Comparison, Figure, Match, judge

    m = Match(Figure({}, {"bytes": 8}, "t_avg_us", True, [1.0]),
              Figure({}, {"bytes": 8}, "t_avg_us", True, [2.0]), 0.05)
    judge([m])
    assert m.verdict == "untested"
    assert not Comparison([m], [], [], 0, [], 0.05).failed


def test_a_campaign_of_several_stacks_is_matched_stack_by_stack():
    """A rerun of a campaign that sweeps stacks pairs each stack with itself (once every figure
    was ambiguous); campaigns of one stack each are matched whatever the stacks are named."""
    from commstack.compare import Figure, compare

    def fig(stack: str, value: float) -> Figure:
        return Figure({"stack": stack, "msglog": "0:4"}, {"bytes": 8}, "t_avg_us", True,
                      [value] * 6, list(range(1, 7)))

    both = compare([fig("impi", 1.0), fig("ompi", 3.0)], [fig("impi", 1.0), fig("ompi", 3.0)])
    assert (len(both.matches), both.ambiguous) == (2, 0) and "stack" in both.keys
    assert {m.a.params["stack"]: m.b.params["stack"] for m in both.matches} == \
        {"impi": "impi", "ompi": "ompi"}
    assert not both.failed
    renamed = compare([fig("ompi-4", 1.0)], [fig("ompi-5", 1.0)])
    assert len(renamed.matches) == 1 and "stack" not in renamed.keys
