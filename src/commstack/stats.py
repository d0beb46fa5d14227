"""The statistics behind every number and verdict commstack prints: one module for ``report``,
``compare``, ``tune``, ``query`` and the sweep's adaptive repeats.

The rules are those of Hoefler & Belli, "Scientific benchmarking of parallel computing systems"
(SC15, rules 3-8) and of ReproMPI (Hunold & Carpen-Amarie, TPDS 2016):

* a point is summarised by its **median** with a **distribution-free 95 % confidence interval**
  from order statistics (no normality assumed); below :data:`MIN_CI_SAMPLES` samples no such
  interval exists and :func:`describe` says so (``low``/``high`` are None);
* costs (times) and rates (bandwidth, messages/s) are both summarised by the median; with an even
  count the middle pair of a *rate* is averaged harmonically, so the median rate is the rate of the
  median time (summarise times, then convert);
* A vs B is a **Mann-Whitney U** rank test with an effect size, the **ratio of medians** oriented so
  that > 1 means B is worse, with a bootstrap interval;
* many comparisons at once (sizes x candidates, points of a campaign) are corrected together
  (Benjamini-Hochberg by default, Holm on request) and a difference is *called* only when it is both
  significant after correction and beyond a practical threshold (default 5 %).

The interval (pure Python) is all the sweep needs on a compute node; the test and the corrections
need SciPy and NumPy (the ``stats`` extra), and say so in one sentence where they are missing.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from commstack.optional import require

LEVEL = 0.95          # confidence of every interval
ALPHA = 0.05          # family-wise significance of every verdict (after correction)
THRESHOLD = 0.05      # practical threshold: a difference below 5 % is never called
MIN_CI_SAMPLES = 6    # the fewest samples whose min..max covers the median with >= 95 %
BOOTSTRAP = 2000      # resamples of the ratio's interval
EXACT_UP_TO = 10      # samples a side up to which the rank test's p is exact
METHODS = ("bh", "holm")


_MODULES: list = []


def _scipy():
    """NumPy and scipy.stats, or one sentence naming the install (a user error, exit 2);
    imported once (a report asks some 100,000 times)."""
    if not _MODULES:
        purpose = "a statistical verdict (rank test, correction)"
        _MODULES.extend((require("numpy", "stats", purpose),
                         require("scipy.stats", "stats", purpose)))
    return _MODULES[0], _MODULES[1]


# --- one point ------------------------------------------------------------------------------


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return math.fsum(math.comb(n, i) for i in range(min(k, n) + 1)) / 2.0 ** n


@functools.lru_cache(maxsize=4096)
def order_statistic_ranks(n: int, level: float = LEVEL) -> Optional[Tuple[int, int]]:
    """1-based ranks (l, u) of the sorted samples bounding the median with coverage >= ``level``;
    None when ``n`` samples are too few for that level."""
    if n < 1 or n > 100_000:
        return None
    tail = (1 - level) / 2
    # the largest k with P(X <= k - 1) <= tail: the interval is [x_(k), x_(n-k+1)]
    lo, hi = 1, (n + 1) // 2
    if _binom_cdf(0, n) > tail:
        return None
    while lo < hi:  # P(X <= k - 1) grows with k: bisect for the largest admissible k
        mid = (lo + hi + 1) // 2
        if _binom_cdf(mid - 1, n) <= tail:
            lo = mid
        else:
            hi = mid - 1
    return lo, n - lo + 1


def median(samples: Sequence[float], rate: bool = False) -> float:
    """The median; for an even count of a rate, the harmonic mean of the middle pair (the rate
    of the median time)."""
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        return math.nan
    if n % 2:
        return float(ordered[n // 2])
    a, b = ordered[n // 2 - 1], ordered[n // 2]
    if rate and a > 0 and b > 0:
        return 2.0 / (1.0 / a + 1.0 / b)
    return (a + b) / 2.0


@dataclass(frozen=True)
class Center:
    """A point's median with its distribution-free interval (None below MIN_CI_SAMPLES)."""

    n: int
    median: float
    low: Optional[float]
    high: Optional[float]

    @property
    def has_interval(self) -> bool:
        return self.low is not None

    @property
    def relative_halfwidth(self) -> float:
        """The larger distance from the median to a bound, relative to the median (inf without
        an interval or with a zero median)."""
        if self.low is None or self.high is None or not self.median:
            return math.inf
        return max(self.median - self.low, self.high - self.median) / abs(self.median)


def describe(samples: Sequence[float], rate: bool = False, level: float = LEVEL) -> Center:
    """Median and its ``level`` confidence interval from order statistics."""
    ordered = sorted(float(x) for x in samples)
    n = len(ordered)
    ranks = order_statistic_ranks(n, level)
    m = median(ordered, rate)
    if ranks is None:
        return Center(n, m, None, None)
    return Center(n, m, ordered[ranks[0] - 1], ordered[ranks[1] - 1])


def describe_many(groups: Sequence[Sequence[float]], rate: bool = False,
                  level: float = LEVEL) -> List[Center]:
    """:func:`describe` of each group, the same numbers, computed with NumPy for the groups of
    each size at once (a report describes some 100,000 groups of a few samples)."""
    columns = describe_columns(groups, rate, level)
    return [columns.center(i) for i in range(len(groups))]


@dataclass(frozen=True)
class Centers:
    """:class:`Center` of many groups as columns (NumPy arrays; ``low``/``high`` NaN where a
    group has no interval): what :func:`describe_many` computes, before any object is made."""

    n: Any
    median: Any
    low: Any
    high: Any
    has_interval: Any

    def center(self, i: int) -> Center:
        if not self.has_interval[i]:
            return Center(int(self.n[i]), float(self.median[i]), None, None)
        return Center(int(self.n[i]), float(self.median[i]), float(self.low[i]),
                      float(self.high[i]))


def describe_columns(groups: Sequence[Sequence[float]], rate: bool = False,
                     level: float = LEVEL) -> Centers:
    """:func:`describe` of each group as :class:`Centers`, for the groups of each size at once."""
    np, _ = _scipy()
    size = len(groups)
    n = np.zeros(size, dtype=np.int64)
    median = np.full(size, np.nan)
    low, high = np.full(size, np.nan), np.full(size, np.nan)
    has = np.zeros(size, dtype=bool)
    for k, (where, ordered) in _sorted_by_size(groups).items():
        at = np.asarray(where, dtype=np.int64)
        n[at] = k
        median[at] = _medians(ordered, k, rate)
        ranks = order_statistic_ranks(k, level)
        if ranks is not None:
            low[at], high[at] = ordered[:, ranks[0] - 1], ordered[:, ranks[1] - 1]
            has[at] = True
    return Centers(n, median, low, high, has)


def _sorted_by_size(groups: Sequence[Sequence[float]]) -> Dict[int, Tuple[List[int], object]]:
    """Per group size: the groups' positions and their samples sorted, one row each (NumPy)."""
    np, _ = _scipy()
    where: Dict[int, List[int]] = {}
    for i, g in enumerate(groups):
        where.setdefault(len(g), []).append(i)
    out = {}
    for n, positions in where.items():
        values = _rows(np, [groups[i] for i in positions], n)
        out[n] = (positions, np.sort(values, axis=1))
    return out


def _rows(np, groups: Sequence[Sequence[float]], n: int):
    """``groups`` (each of ``n`` samples: lists or array('d')) as the rows of one array, read
    sample by sample (np.array would inspect each group as an object first: slower, and at
    400,000 groups some 150 MB more)."""
    return np.fromiter(itertools.chain.from_iterable(groups), dtype=float,
                       count=len(groups) * n).reshape(len(groups), n)


def _medians(ordered, n: int, rate: bool) -> List[float]:
    """:func:`median` of each row of ``ordered`` (rows sorted, ``n`` samples each)."""
    np, _ = _scipy()
    if n == 0:
        return [math.nan] * len(ordered)
    if n % 2:
        return ordered[:, n // 2].tolist()
    a, b = ordered[:, n // 2 - 1], ordered[:, n // 2]
    plain = (a + b) / 2.0
    if not rate:
        return plain.tolist()
    with np.errstate(divide="ignore"):
        harmonic = 2.0 / (1.0 / a + 1.0 / b)
    return np.where((a > 0) & (b > 0), harmonic, plain).tolist()


def precise_enough(samples: Sequence[float], within: float, level: float = LEVEL) -> bool:
    """True when the median's interval lies within +-``within`` (relative) of the median."""
    return describe(samples, level=level).relative_halfwidth <= within


# --- A vs B -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shift:
    """B against A: ``ratio`` > 1 means B is worse (a longer time or a lower rate)."""

    ratio: float
    low: float        # bootstrap interval of the ratio
    high: float
    p: float          # two-sided Mann-Whitney U; 1.0 when untestable
    n_a: int
    n_b: int

    @property
    def testable(self) -> bool:
        return self.n_a >= 2 and self.n_b >= 2


def _ratio(a: float, b: float, lower_is_better: bool) -> float:
    worse, better = (b, a) if lower_is_better else (a, b)
    if better == 0:
        return 1.0 if worse == 0 else math.inf
    return worse / better


def shift(a: Sequence[float], b: Sequence[float], lower_is_better: bool = True,
          seed: int = 0, interval: bool = True) -> Shift:
    """Mann-Whitney U of B against A with the ratio of medians and its bootstrap interval
    (``interval=False``: the ratio alone stands for its bounds, for decisions that need no
    interval)."""
    rate = not lower_is_better
    ratio = _ratio(median(a, rate), median(b, rate), lower_is_better)
    if len(a) < 2 or len(b) < 2:
        return Shift(ratio, ratio, ratio, 1.0, len(a), len(b))
    np, st = _scipy()
    if min(a) == max(a) == min(b) == max(b):
        p = 1.0
    elif len(a) <= EXACT_UP_TO and len(b) <= EXACT_UP_TO:
        # Small samples: the exact distribution (SciPy's default switches to the normal
        # approximation at the first tie, and benchmarks print ties: 0.04 us, 0.04 us, ...).
        # Ties within a side leave a complete separation's p exact; between sides the exact
        # no-ties distribution is the usual small-sample choice (Hollander & Wolfe).
        p = _exact_p(a, b)
    else:
        p = float(st.mannwhitneyu(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                  alternative="two-sided", method="auto").pvalue)
    if not interval:
        return Shift(ratio, ratio, ratio, p, len(a), len(b))
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(xa, (BOOTSTRAP, len(xa))), axis=1)
    mb = np.median(rng.choice(xb, (BOOTSTRAP, len(xb))), axis=1)
    worse, better = (mb, ma) if lower_is_better else (ma, mb)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(better > 0, worse / np.where(better > 0, better, 1.0),
                          np.where(worse > 0, np.inf, 1.0))
    low, high = (float(v) for v in np.quantile(ratios, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]))
    return Shift(ratio, low, high, p, len(a), len(b))


def shift_many(pairs: Sequence[Tuple[Sequence[float], Sequence[float]]],
               lower_is_better: bool = True, interval: bool = True) -> List[Shift]:
    """:func:`shift` of each (A, B) pair, the same numbers (see :func:`shift_columns`)."""
    columns = shift_columns(pairs, lower_is_better, interval)
    return [columns.shift(i) for i in range(len(pairs))]


@dataclass(frozen=True)
class Shifts:
    """:class:`Shift` of many pairs as columns (NumPy arrays), before any object is made."""

    ratio: Any
    low: Any
    high: Any
    p: Any
    n_a: Any
    n_b: Any

    @property
    def testable(self) -> Any:
        return (self.n_a >= 2) & (self.n_b >= 2)

    def shift(self, i: int) -> Shift:
        return Shift(float(self.ratio[i]), float(self.low[i]), float(self.high[i]),
                     float(self.p[i]), int(self.n_a[i]), int(self.n_b[i]))


def shift_columns(pairs: Sequence[Tuple[Sequence[float], Sequence[float]]],
                  lower_is_better: bool = True, interval: bool = True) -> Shifts:
    """:func:`shift` of each (A, B) pair as :class:`Shifts`, the same numbers: without
    ``interval``, the medians and the exact rank test's U of pairs of up to
    :data:`EXACT_UP_TO` samples a side are computed with NumPy for the pairs of each pair of
    sizes at once, the exact p once per (sizes, U); every other pair (an interval asked for,
    larger samples, NaN) by :func:`shift` itself."""
    np, st = _scipy()
    size = len(pairs)
    ratio, low, high, p = (np.ones(size) for _ in range(4))
    n_a, n_b = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
    rate = not lower_is_better
    by_size: Dict[Tuple[int, int], List[int]] = {}
    alone: List[int] = []
    for i, (a, b) in enumerate(pairs):
        na, nb = len(a), len(b)
        if interval or na < 2 or nb < 2 or na > EXACT_UP_TO or nb > EXACT_UP_TO:
            alone.append(i)
        else:
            by_size.setdefault((na, nb), []).append(i)
    for (na, nb), where in by_size.items():
        a = _rows(np, [pairs[i][0] for i in where], na)
        b = _rows(np, [pairs[i][1] for i in where], nb)
        nan = np.isnan(a).any(axis=1) | np.isnan(b).any(axis=1)
        alone += [i for i, bad in zip(where, nan.tolist()) if bad]
        keep = ~nan
        at = np.asarray(where, dtype=np.int64)[keep]
        a, b = a[keep], b[keep]
        sa, sb = np.sort(a, axis=1), np.sort(b, axis=1)
        ma = np.asarray(_medians(sa, na, rate), dtype=float)
        mb = np.asarray(_medians(sb, nb, rate), dtype=float)
        r = _ratios(np, ma, mb, lower_is_better)
        ratio[at], low[at], high[at] = r, r, r
        n_a[at], n_b[at] = na, nb
        same = (sa[:, 0] == sa[:, -1]) & (sb[:, 0] == sb[:, -1]) & (sa[:, 0] == sb[:, 0])
        x, y = a[:, :, None], b[:, None, :]
        u1 = (x > y).sum(axis=(1, 2)) + 0.5 * (x == y).sum(axis=(1, 2))
        distinct, first, inverse = np.unique(u1, return_index=True, return_inverse=True)
        exact = np.empty(len(distinct))
        for j, (u, k) in enumerate(zip(distinct.tolist(), first.tolist())):
            key = (na, nb, float(u))
            if key not in _EXACT_P:
                _EXACT_P[key] = float(st.mannwhitneyu(a[k], b[k], alternative="two-sided",
                                                      method="exact").pvalue)
            exact[j] = _EXACT_P[key]
        p[at] = np.where(same, 1.0, exact[inverse.reshape(-1)])
    for i in alone:
        one = shift(pairs[i][0], pairs[i][1], lower_is_better, interval=interval)
        ratio[i], low[i], high[i], p[i], n_a[i], n_b[i] = (one.ratio, one.low, one.high, one.p,
                                                           one.n_a, one.n_b)
    return Shifts(ratio, low, high, p, n_a, n_b)


def _ratios(np, a, b, lower_is_better: bool):
    """:func:`_ratio` of arrays of medians."""
    worse, better = (b, a) if lower_is_better else (a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        plain = worse / np.where(better == 0, 1.0, better)
    return np.where(better == 0, np.where(worse == 0, 1.0, np.inf), plain)


_EXACT_P: Dict[Tuple[int, int, float], float] = {}


def _exact_p(a: Sequence[float], b: Sequence[float]) -> float:
    """SciPy's exact two-sided Mann-Whitney p of A against B, computed once per (sizes, U):
    the exact p depends on nothing else, and a report's guideline checks ask it some 40,000
    times of a few hundred distinct U (each SciPy call costs milliseconds). At most 10 a side,
    so the cache holds at most some 20,000 entries."""
    _, st = _scipy()
    if any(math.isnan(x) for x in a) or any(math.isnan(y) for y in b):
        return float(st.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
    # U of A by counting pairs (at most 10 x 10), a tie counting half: A's rank sum in the
    # pooled sample (mid-ranks) less len(a) (len(a) + 1) / 2, without ranking.
    u1 = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    key = (len(a), len(b), float(u1))
    if key not in _EXACT_P:
        _EXACT_P[key] = float(st.mannwhitneyu(a, b, alternative="two-sided",
                                              method="exact").pvalue)
    return _EXACT_P[key]


def signed_rank(differences: Sequence[float], alternative: str = "greater") -> float:
    """p of the Wilcoxon signed-rank test that the differences are centred above zero
    (``alternative``: greater, less or two-sided); 1.0 with fewer than two non-zero ones."""
    nonzero = [d for d in differences if d != 0 and math.isfinite(d)]
    if len(nonzero) < 2:
        return 1.0
    _, st = _scipy()
    return float(st.wilcoxon(nonzero, alternative=alternative).pvalue)


HL_EXACT_UP_TO = 2000  # values whose Walsh averages (n (n + 1) / 2) are all formed


def hodges_lehmann(values: Sequence[float]) -> float:
    """The Hodges-Lehmann estimate of the centre of ``values``: the median of their Walsh
    averages (x_i + x_j) / 2, i <= j, the estimate that goes with the signed-rank test (nearly the
    mean's efficiency under normal noise, the median's robustness to an outlier). Above
    :data:`HL_EXACT_UP_TO` values, the median (memory stays bounded). NaN when empty."""
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        return math.nan
    if len(finite) > HL_EXACT_UP_TO:
        return median(finite)
    np, _ = _scipy()
    x = np.asarray(finite)
    i, j = np.triu_indices(len(x))
    return float(np.median((x[i] + x[j]) / 2.0))


def adjust(pvalues: Sequence[float], method: str = "bh") -> List[float]:
    """p-values corrected for being tested together: Benjamini-Hochberg (``bh``, the false
    discovery rate) or Holm (``holm``, the family-wise error)."""
    if method not in METHODS:
        raise ValueError(f"unknown correction {method!r}; expected one of {', '.join(METHODS)}")
    if not pvalues:
        return []
    if method == "bh":
        _, st = _scipy()
        return [float(p) for p in st.false_discovery_control(list(pvalues), method="bh")]
    # Holm: the i-th smallest p times (m - i), made non-decreasing, at most 1 (NumPy: a report
    # corrects some 400,000 checks together).
    np, _ = _scipy()
    tested = np.asarray(pvalues, dtype=float)
    order = np.argsort(tested, kind="stable")
    m = len(tested)
    held = np.fmin(1.0, (m - np.arange(m)) * tested[order])
    out = np.empty(m)
    out[order] = np.fmax.accumulate(held)
    return out.tolist()


WORSE, BETTER, SAME, UNTESTED = "worse", "better", "same", "untested"


def call(ratio: float, p_adjusted: float, testable: bool = True, threshold: float = THRESHOLD,
         alpha: float = ALPHA) -> str:
    """``worse``/``better`` only when significant after correction AND beyond the threshold;
    ``untested`` when beyond the threshold but a side has fewer than two samples."""
    beyond_worse = ratio > 1 + threshold
    beyond_better = ratio < 1 / (1 + threshold)
    if not (beyond_worse or beyond_better):
        return SAME
    if not testable:
        return UNTESTED
    if p_adjusted >= alpha:
        return SAME
    return WORSE if beyond_worse else BETTER


def corrected(shifts: Sequence[Shift], method: str = "bh") -> List[float]:
    """Each shift's p-value corrected together with the others' (1.0 for an untestable one,
    which takes no part in the correction)."""
    tested = [i for i, s in enumerate(shifts) if s.testable]
    adjusted = dict(zip(tested, adjust([shifts[i].p for i in tested], method)))
    return [adjusted.get(i, 1.0) for i in range(len(shifts))]


def corrected_columns(shifts: Shifts, method: str = "bh") -> Any:
    """:func:`corrected` of :class:`Shifts`, the same numbers, as a NumPy array."""
    np, _ = _scipy()
    testable = shifts.testable
    out = np.ones(len(shifts.p))
    tested = np.asarray(shifts.p, dtype=float)[testable]
    if not len(tested):
        return out
    out[testable] = adjust(tested.tolist(), method)
    return out


def calls(ratio: Any, p_adjusted: Any, testable: Any, threshold: float = THRESHOLD,
          alpha: float = ALPHA) -> List[str]:
    """:func:`call` of arrays of ratios, corrected p-values and testability."""
    np, _ = _scipy()
    ratio, p_adjusted = np.asarray(ratio, dtype=float), np.asarray(p_adjusted, dtype=float)
    beyond_worse = ratio > 1 + threshold
    beyond_better = ratio < 1 / (1 + threshold)
    verdict = np.where(beyond_worse, 0, 1)  # WORSE, BETTER, SAME, UNTESTED by position
    verdict = np.where(p_adjusted >= alpha, 2, verdict)
    verdict = np.where(np.asarray(testable, dtype=bool), verdict, 3)
    verdict = np.where(beyond_worse | beyond_better, verdict, 2)
    names = (WORSE, BETTER, SAME, UNTESTED)
    return [names[v] for v in verdict.tolist()]


def verdicts(shifts: Sequence[Shift], threshold: float = THRESHOLD, alpha: float = ALPHA,
             method: str = "bh") -> List[str]:
    """One call per shift, the p-values corrected together (untestable ones take no part)."""
    return [call(s.ratio, p, s.testable, threshold, alpha)
            for s, p in zip(shifts, corrected(shifts, method))]


def rule_text(threshold: float = THRESHOLD, alpha: float = ALPHA, method: str = "bh") -> str:
    """One sentence saying how a difference is called, for reports."""
    name = {"bh": "Benjamini-Hochberg", "holm": "Holm"}[method]
    return (f"a difference is called only when a two-sided Mann-Whitney U test is significant at "
            f"{alpha:g} after {name} correction over all comparisons made together AND the ratio "
            f"of medians is beyond {threshold:.0%}")
