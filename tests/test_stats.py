"""The statistics module: intervals that cover, tests that hold their error rates, corrections that
correct. Checked by simulation on skewed, heavy-tailed samples like benchmark timings (a
log-normal body with rare large outliers), not on hand-picked numbers."""

from __future__ import annotations

import random
from array import array

import pytest

from commstack import stats

pytest.importorskip("scipy", reason="skipped: scipy not installed (the stats extra)")


def timings(rng: random.Random, n: int, scale: float = 1.0) -> list:
    """Timing-like samples: log-normal with a 5 % chance of a 2-10x outlier (a preempted run)."""
    out = []
    for _ in range(n):
        x = rng.lognormvariate(0.0, 0.08) * scale
        if rng.random() < 0.05:
            x *= rng.uniform(2, 10)
        out.append(x)
    return out


def test_order_statistic_ranks_match_the_binomial_tables():
    # Conover, Practical Nonparametric Statistics, the 95 % interval of the median
    assert stats.order_statistic_ranks(5) is None
    assert stats.order_statistic_ranks(6) == (1, 6)
    assert stats.order_statistic_ranks(10) == (2, 9)
    assert stats.order_statistic_ranks(20) == (6, 15)
    assert stats.order_statistic_ranks(30) == (10, 21)


def test_the_median_interval_covers_the_true_median_at_least_95_percent():
    rng = random.Random(1)
    population = sorted(timings(rng, 200_001))
    true_median = population[len(population) // 2]
    for n in (6, 10, 25):
        covered = 0
        for _ in range(2000):
            c = stats.describe(rng.sample(population, n))
            covered += c.low <= true_median <= c.high
        assert covered / 2000 >= 0.94, n


def test_below_six_samples_there_is_no_interval_and_it_says_so():
    c = stats.describe([3.0, 1.0, 2.0, 9.0, 4.0])
    assert c.n == 5 and c.median == 3.0 and not c.has_interval
    assert c.relative_halfwidth == float("inf")
    assert not stats.precise_enough([1.0] * 5, 0.05)
    assert stats.precise_enough([1.0] * 6, 0.05)


def test_a_rate_median_is_the_rate_of_the_median_time():
    times = [1.0, 2.0, 4.0, 8.0]
    rates = [100 / t for t in times]
    assert stats.median(rates, rate=True) == pytest.approx(100 / stats.median(times))
    assert stats.median([1.0, 3.0]) == 2.0


def test_shift_orientation_ratio_above_one_means_b_is_worse():
    a, b = [1.0, 1.1, 0.9, 1.05, 0.95], [2.0, 2.1, 1.9, 2.05, 1.95]
    assert stats.shift(a, b).ratio == pytest.approx(2.0)
    assert stats.shift(a, b, lower_is_better=False).ratio == pytest.approx(0.5)
    s = stats.shift(a, b)
    assert s.low <= s.ratio <= s.high and s.p < 0.01


def test_no_false_calls_beyond_alpha_when_nothing_differs():
    """A/A: 120 families of 45 comparisons (15 sizes x 3 candidates, the tuner's case): the share
    of families with any call stays within alpha."""
    rng = random.Random(7)
    families_with_a_call = 0
    for _ in range(120):
        shifts = [stats.shift(timings(rng, 5), timings(rng, 5), interval=False) for _ in range(45)]
        families_with_a_call += any(v != stats.SAME for v in stats.verdicts(shifts))
    assert families_with_a_call / 120 <= stats.ALPHA


def test_a_real_shift_at_every_size_is_found_with_five_samples():
    rng = random.Random(3)
    found = 0
    for _ in range(50):
        shifts = [stats.shift(timings(rng, 5), timings(rng, 5, scale=1.3), interval=False) for _ in range(15)]
        found += stats.verdicts(shifts).count(stats.WORSE) >= 8
    assert found >= 45


def test_a_significant_shift_below_the_threshold_is_not_called():
    a = [1.00, 1.001, 1.002, 1.003, 1.004, 1.005, 1.006]
    b = [x * 1.03 for x in a]
    s = stats.shift(a, b)
    assert s.p < 0.01
    assert stats.verdicts([s]) == [stats.SAME]
    assert stats.verdicts([s], threshold=0.01) == [stats.WORSE]


def test_single_samples_are_untested_not_called():
    s = stats.shift([1.0], [2.0])
    assert not s.testable and stats.verdicts([s]) == [stats.UNTESTED]


def test_holm_and_benjamini_hochberg_against_their_definitions():
    p = [0.01, 0.04, 0.03, 0.5]
    assert stats.adjust(p, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert stats.adjust(p, "bh") == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    with pytest.raises(ValueError, match="unknown correction"):
        stats.adjust(p, "bonferroni")


def test_the_reports_columnwise_summary_agrees_with_the_module():
    """aggregate.summary_frame (vectorised, for 10,000-record reports) gives the same median and
    interval as stats.describe, times and rates, every count from 1 to 12."""
    import math

    pytest.importorskip("pandas", reason="skipped: pandas not installed (the report extra)")
    from commstack.aggregate import summary_frame

    rng = random.Random(1)
    pids, values, metrics = [], [], []
    for p in range(24):
        for _ in range(p % 12 + 1):
            pids.append(f"p{p}")
            values.append(rng.lognormvariate(0, 0.3))
            metrics.append("t_avg_us" if p % 2 else "mbytes_per_s")
    points = {pid: ({}, "imb-mpi1", 2) for pid in set(pids)}
    frame = summary_frame(pids, [("bytes",)] * len(pids), [(8,)] * len(pids), metrics, values,
                          [False] * len(pids), points)
    assert len(frame) == 24
    for _, row in frame.iterrows():
        mine = [v for pid, v in zip(pids, values) if pid == row["point_id"]]
        c = stats.describe(mine, rate=not row["lower_is_better"])
        assert row["median"] == pytest.approx(c.median)
        for got, want in ((row["ci_low"], c.low), (row["ci_high"], c.high)):
            assert (want is None and math.isnan(got)) or got == pytest.approx(want)


def test_the_exact_p_computed_once_per_u_is_scipys_for_every_sample():
    """``shift``'s exact Mann-Whitney p, kept per (sizes, U), equals SciPy's on each call,
    printed ties (one decimal) included."""
    st = pytest.importorskip("scipy.stats")
    rng = random.Random(28)
    compared = 0
    for _ in range(2000):
        a = [round(rng.uniform(0, 3), rng.choice([0, 1])) for _ in range(rng.randint(2, 10))]
        b = [round(rng.uniform(0, 3), rng.choice([0, 1])) for _ in range(rng.randint(2, 10))]
        if max(a + b) == min(a + b):
            continue
        expected = st.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
        assert stats.shift(a, b, interval=False).p == float(expected), (a, b)
        compared += 1
    assert compared > 1500 and len(stats._EXACT_P) < compared


def test_hodges_lehmann_is_the_median_of_walsh_averages_and_resists_an_outlier():
    assert stats.hodges_lehmann([1.0, 2.0, 3.0]) == 2.0          # 1, 1.5, 2, 2, 2.5, 3
    assert stats.hodges_lehmann([0.0, 0.0, 10.0]) == 2.5         # 0, 0, 0, 5, 5, 10
    assert stats.hodges_lehmann([float("nan"), 4.0]) == 4.0
    assert stats.hodges_lehmann([]) != stats.hodges_lehmann([])  # NaN: nothing to estimate
    # A shift of 0.1 under timing-like noise: the estimate lands near it, an outlier barely
    # moves it (the mean would move by 0.2).
    rng = random.Random(24)
    shifts = [0.1 + rng.gauss(0.0, 0.05) for _ in range(60)]
    clean = stats.hodges_lehmann(shifts)
    assert abs(clean - 0.1) < 0.03
    assert abs(stats.hodges_lehmann(shifts[:-1] + [12.0]) - clean) < 0.01
    # Past the bound of formed averages, the median (bounded memory).
    many = [float(i) for i in range(stats.HL_EXACT_UP_TO + 1)]
    assert stats.hodges_lehmann(many) == stats.median(many)


def test_the_batched_forms_give_exactly_the_single_forms_numbers():
    """describe_many / shift_many (the report's guideline checks) are describe / shift of each
    group: the same medians, intervals, U counts and p-values, ties and rates included."""
    rng = random.Random(7)
    groups = [[round(rng.lognormvariate(0, 0.3), rng.choice((1, 2, 4))) for _ in range(n)]
              for n in (1, 2, 3, 5, 6, 7, 10, 12, 20) for _ in range(4)]
    for rate in (False, True):
        assert stats.describe_many(groups, rate) == [stats.describe(g, rate) for g in groups]
    pairs = [(a, b) for a, b in zip(groups, groups[1:] + groups[:1])]
    for lower in (True, False):
        assert stats.shift_many(pairs, lower, interval=False) == [
            stats.shift(a, b, lower, interval=False) for a, b in pairs]


def test_the_column_forms_of_correction_and_verdict_give_the_single_forms_answers():
    """corrected_columns / calls (some 400,000 guideline checks of a report at once) are
    corrected / call of each shift: Holm and BH, untestable shifts, ratios at and beyond the
    threshold, zero medians."""
    rng = random.Random(11)
    groups = [[round(rng.lognormvariate(0, 0.4), rng.choice((1, 2, 4))) for _ in range(n)]
              for n in (1, 2, 3, 4, 5, 8, 10, 12) for _ in range(6)]
    groups += [[0.0, 0.0, 0.0], [1.0, 1.0], [0.0, 1.0, 2.0]]
    pairs = [(a, b) for a in groups[::3] for b in groups[1::5]]
    for lower in (True, False):
        columns = stats.shift_columns(pairs, lower, interval=False)
        shifts = [columns.shift(i) for i in range(len(pairs))]
        assert shifts == [stats.shift(a, b, lower, interval=False) for a, b in pairs]
        for method in stats.METHODS:
            adjusted = stats.corrected_columns(columns, method).tolist()
            assert adjusted == stats.corrected(shifts, method)
            assert stats.calls(columns.ratio, adjusted, columns.testable) == [
                stats.call(s.ratio, p, s.testable) for s, p in zip(shifts, adjusted)]
    # The guidelines hold their samples as array('d'): read as the lists are.
    as_arrays = [(array("d", a), array("d", b)) for a, b in pairs]
    from_arrays = stats.shift_columns(as_arrays, interval=False)
    centers = stats.describe_columns([a for a, _ in as_arrays])
    assert [from_arrays.shift(i) for i in range(len(pairs))] == [
        stats.shift(a, b, interval=False) for a, b in pairs]
    assert [centers.center(i) for i in range(len(pairs))] == [
        stats.describe(a) for a, _ in pairs]
    verdicts = stats.calls([1.2, 1.2, 1.2, 0.8, 1.04, 1.06], [0.01, 0.06, 0.01, 0.01, 0.0, 0.01],
                           [True, True, False, True, True, True])
    assert verdicts == [stats.WORSE, stats.SAME, stats.UNTESTED, stats.BETTER, stats.SAME,
                        stats.WORSE]
