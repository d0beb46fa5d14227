"""Compare two campaigns point by point, or one campaign with reference values (ReFrame-like).

Campaign vs campaign: points are matched on the parameters both campaigns have (``--ignore``
drops some, ``--where`` keeps a subset) and on the result row (benchmark, np, mode, bytes, ...).
For each match: the ratio B/A of the trimmed means, its spread (B's extremes over A's), and a
verdict. Slowdown means B is worse: a longer time, or a lower bandwidth.

* ``slower`` / ``faster``: beyond ``threshold``;
* ``regression`` / ``improvement``: also beyond the noise, a change of this point: every repeat
  of B is worse than every repeat of A by more than ``threshold`` (best B vs worst A; with a
  single sample on a side, an imported table, the trimmed means; each sample widened by half
  a unit of its last printed digit), and the point stands out from
  the other points' ratios (more than ``OUTLIER`` robust sd from their median);
* ``same``: within the threshold.

A regression fails the comparison.

The comparison also fails on a broad slowdown: the median slowdown over all matched points
beyond ``1 + threshold`` (the median, unlike a mean, is not moved by the odd preempted run) AND
beyond the noise. The noise is judged on repeats paired by number (repeat k of A with repeat k of
B: the repeats of a sweep are its outer loop, so both are a pass over all points): each pair
gives the median shift over all points, and the mean shift must exceed its standard error times
Student's t (99 %, one-sided). On a busy machine a whole run is lucky or unlucky, so the points
of one run move together; only this paired view tells a slower B from a few unlucky runs. With
fewer than two pairs (an imported table), the threshold alone decides.

Reference values (``references/<machine>.yaml``)::

    machine: betzy
    references:
      - match: {executable: benchmark_mpi_comm, toolchain: ompi, halo: 1, nfields: 1}
        metric: time_10000_calls_s     # a parsed field
        value: 2.5159
        lower: -0.10                   # relative bounds: value*(1+lower) .. value*(1+upper);
        upper: 0.10                    # null: unbounded on that side
        unit: s

``match`` keys are parameters or result-row fields (``benchmark``, ``np``, ``bytes``, ...). A
measured value outside its bounds fails; a reference nothing in the campaign matches is listed as
not measured.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from commstack.aggregate import print_quantum
from commstack.errors import CampaignError
from commstack.figures import Figure, figures, varying
from commstack.markdown_table import table
from commstack.store.record import Record

DEFAULT_THRESHOLD = 0.10
OUTLIER = 4.0  # robust standard deviations from the median ratio that make a point stand out
# Record parameters never used to match points (they name the run, not the configuration).
NOT_MATCHED = {"stack"}


# --- campaign vs campaign ----------------------------------------------------------------------


@dataclass
class Match:
    a: Figure
    b: Figure
    threshold: float
    verdict: str = "same"  # set by compare(): regression, slower, same, faster, improvement

    @property
    def ratio(self) -> float:
        """B / A of the trimmed means (1 when both are 0, as IMB prints for 0 bytes)."""
        if not self.a.center:
            return 1.0 if not self.b.center else math.inf
        return self.b.center / self.a.center

    @property
    def slowdown(self) -> float:
        """> 1: B is worse (slower, or less bandwidth)."""
        return self.ratio if self.a.lower_is_better else 1 / self.ratio if self.ratio else math.inf

    @property
    def spread(self) -> Tuple[float, float]:
        """The extreme ratios of B's repeats over A's: (min B / max A, max B / min A)."""
        def div(x: float, y: float) -> float:
            return x / y if y else (1.0 if not x else math.inf)

        return (div(min(self.b.samples), max(self.a.samples)),
                div(max(self.b.samples), min(self.a.samples)))

    @property
    def bounds(self) -> Tuple[float, float]:
        """Slowdown of B's best repeat over A's worst, and of B's worst over A's best; with a
        single sample on a side (an imported table) both are the slowdown itself.

        Each sample may be off by half a unit of the last digit the benchmark printed (IMB: 0.03
        us can be 0.025..0.035), so the bounds are widened by that much: two runs one printed
        digit apart are not beyond the noise."""
        if len(self.a.samples) < 2 or len(self.b.samples) < 2:
            return self.slowdown, self.slowdown
        half = print_quantum(self.a.samples + self.b.samples) / 2

        def div(x: float, y: float) -> float:
            return x / y if y > 0 else (1.0 if x <= 0 else math.inf)

        lo = div(max(0.0, min(self.b.samples) - half), max(self.a.samples) + half)
        hi = div(max(self.b.samples) + half, max(0.0, min(self.a.samples) - half))
        if self.a.lower_is_better:
            return lo, hi
        return (1 / hi if hi else math.inf), (1 / lo if lo else math.inf)


# Student's t, one-sided 99 %, by degrees of freedom (the largest tabulated <= df is used).
_T99 = {1: 31.82, 2: 6.965, 3: 4.541, 4: 3.747, 5: 3.365, 6: 3.143, 7: 2.998, 8: 2.896,
        9: 2.821, 10: 2.764, 12: 2.681, 15: 2.602, 20: 2.528, 30: 2.457, 60: 2.390, 120: 2.358}


def t_critical(df: int) -> float:
    return _T99[max(k for k in _T99 if k <= max(df, 1))]


def _log(x: float) -> float:
    return math.log(x) if 0 < x < math.inf else (math.inf if x > 0 else -math.inf)


def judge(matches: List[Match], outlier: float = OUTLIER) -> Tuple[float, float]:
    """Set every match's verdict; returns the median log-slowdown and its robust spread.

    ``slower``/``faster``: beyond the threshold. ``regression``/``improvement``: also beyond the
    noise, i.e. even B's best repeat is worse than A's worst by more than the threshold, AND the
    point stands out from the campaign-wide ratios (more than ``outlier`` robust standard
    deviations from their median). A broad shift is caught by the median, not point by point.
    """
    logs = sorted(_log(m.slowdown) for m in matches)
    finite = [x for x in logs if math.isfinite(x)]
    center = statistics.median(finite) if finite else 0.0
    sigma = 1.4826 * statistics.median(abs(x - center) for x in finite) if finite else 0.0
    for m in matches:
        limit = math.log(1 + m.threshold)
        least, most = (_log(x) for x in m.bounds)
        r = _log(m.slowdown)
        if r > limit:
            m.verdict = "regression" if least > limit and r - center > outlier * sigma else "slower"
        elif r < -limit:
            m.verdict = ("improvement" if most < -limit and center - r > outlier * sigma
                         else "faster")
        else:
            m.verdict = "same"
    return center, sigma


@dataclass
class Comparison:
    matches: List[Match]
    only_a: List[Figure]
    only_b: List[Figure]
    ambiguous: int
    keys: List[str]
    threshold: float
    noise: float = 0.0  # robust standard deviation of the log slowdowns

    @property
    def geomean_slowdown(self) -> float:
        values = [m.slowdown for m in self.matches if 0 < m.slowdown < math.inf]
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 1.0

    @property
    def median_slowdown(self) -> float:
        values = [m.slowdown for m in self.matches]
        return statistics.median(values) if values else 1.0

    @property
    def regressions(self) -> List[Match]:
        return [m for m in self.matches if m.verdict == "regression"]

    def paired_shifts(self) -> List[float]:
        """Per repeat number both sides have: median over the points of the log slowdown of
        that repeat of B over that repeat of A."""
        shifts: Dict[int, List[float]] = {}
        for m in self.matches:
            a = dict(zip(m.a.repeats, m.a.samples))
            b = dict(zip(m.b.repeats, m.b.samples))
            for r in set(a) & set(b):
                ratio = _log(b[r] / a[r]) if a[r] and b[r] else None
                if ratio is not None and math.isfinite(ratio):
                    shifts.setdefault(r, []).append(ratio if m.a.lower_is_better else -ratio)
        full = [v for v in shifts.values() if len(v) * 2 >= len(self.matches)]
        return [statistics.median(v) for v in full]

    @property
    def significance(self) -> Tuple[float, float]:
        """(t statistic of the paired shifts, the critical value); (inf, 0) without pairs."""
        shifts = self.paired_shifts()
        if len(shifts) < 2:
            return math.inf, 0.0
        se = statistics.stdev(shifts) / math.sqrt(len(shifts))
        mean = statistics.fmean(shifts)
        t = math.inf if se == 0 and mean > 0 else (mean / se if se else 0.0)
        return t, t_critical(len(shifts) - 1)

    @property
    def broad_slowdown(self) -> bool:
        t, critical = self.significance
        return self.median_slowdown > 1 + self.threshold and t > critical

    @property
    def failed(self) -> bool:
        return bool(self.regressions) or self.broad_slowdown

    def count(self, verdict: str) -> int:
        return sum(m.verdict == verdict for m in self.matches)


def select_figures(figs: List[Figure], where: Dict[str, str]) -> List[Figure]:
    def keep(f: Figure) -> bool:
        items = {**f.params, **f.row}
        return all(k not in items or str(items[k]) == v for k, v in where.items())

    return [f for f in figs if keep(f)]


def compare(a: List[Figure], b: List[Figure], threshold: float = DEFAULT_THRESHOLD,
            ignore: Sequence[str] = (), where: Optional[Dict[str, str]] = None) -> Comparison:
    a, b = select_figures(a, where or {}), select_figures(b, where or {})
    names_a = set().union(*(f.params for f in a)) if a else set()
    names_b = set().union(*(f.params for f in b)) if b else set()
    keys = sorted((names_a & names_b) - set(ignore) - NOT_MATCHED)

    def key(f: Figure) -> Tuple:
        return (f.metric, tuple(sorted(f.row.items())),
                tuple((k, str(f.params.get(k))) for k in keys))

    index_a: Dict[Tuple, List[Figure]] = {}
    for f in a:
        index_a.setdefault(key(f), []).append(f)
    index_b: Dict[Tuple, List[Figure]] = {}
    for f in b:
        index_b.setdefault(key(f), []).append(f)
    matches, ambiguous = [], 0
    for k, fa in index_a.items():
        fb = index_b.get(k, [])
        if len(fa) == 1 and len(fb) == 1:
            matches.append(Match(fa[0], fb[0], threshold))
        elif fb:
            ambiguous += len(fa) + len(fb)
    only_a = [f for k, fs in index_a.items() if k not in index_b for f in fs]
    only_b = [f for k, fs in index_b.items() if k not in index_a for f in fs]
    _, noise = judge(matches)
    return Comparison(matches, only_a, only_b, ambiguous, keys, threshold, noise)


def _paired(cmp: Comparison) -> str:
    shifts = cmp.paired_shifts()
    if len(shifts) < 2:
        return "fewer than 2 (the threshold alone decides)"
    t, critical = cmp.significance
    return (f"median slowdown per repeat {', '.join(f'{math.exp(x):.3f}' for x in shifts)}; "
            f"t = {t:.2f} vs {critical:.2f} (99 %): "
            f"{'beyond' if t > critical else 'within'} the noise")


def comparison_markdown(cmp: Comparison, name_a: str, name_b: str, limit: int = 200) -> str:
    figs = [m.a for m in cmp.matches]
    label_keys = varying(figs) or cmp.keys
    lines = [f"# {name_b} vs {name_a}", "",
             f"- matched on: {', '.join(cmp.keys) or '(result rows only)'}",
             f"- matched figures: {len(cmp.matches)}; only in A: {len(cmp.only_a)}; only in B: "
             f"{len(cmp.only_b)}; ambiguous (several points per key; use --where/--ignore): "
             f"{cmp.ambiguous}",
             f"- threshold: {cmp.threshold:.0%}; slowdown B/A: median "
             f"{cmp.median_slowdown:.3f}{' (broad slowdown)' if cmp.broad_slowdown else ''}, "
             f"geometric mean {cmp.geomean_slowdown:.3f}; noise (robust sd of log ratios) "
             f"{cmp.noise:.3f}",
             f"- paired repeats: {_paired(cmp)}",
             f"- regressions: {len(cmp.regressions)}; slower: {cmp.count('slower')}; faster: "
             f"{cmp.count('faster')}; improvements: {cmp.count('improvement')}",
             f"- verdict: **{'FAIL' if cmp.failed else 'PASS'}**", "",
             "Slowdown > 1: B is worse (longer time or lower bandwidth); spread: B's extreme "
             "repeats over A's. slower/faster: beyond the threshold. regression/improvement: "
             "also beyond the noise (even B's best repeat is worse than A's worst by more than "
             f"the threshold, and the point stands out from the other points by more than "
             f"{OUTLIER:g} robust sd). Fails on a regression, or on a median slowdown beyond the "
             "threshold and beyond the noise of the paired repeats.", ""]
    rank = {"regression": 0, "slower": 1, "improvement": 2, "faster": 3, "same": 4}
    ordered = sorted(cmp.matches, key=lambda m: (rank[m.verdict], -abs(math.log(
        m.slowdown)) if 0 < m.slowdown < math.inf else 0, m.a.describe(label_keys)))
    rows = [[m.a.describe(label_keys), m.a.metric, f"{m.a.center:.5g}", f"{m.b.center:.5g}",
             f"{m.ratio:.3f}", f"{m.spread[0]:.3f}..{m.spread[1]:.3f}", f"{m.slowdown:.3f}",
             f"{len(m.a.samples)}/{len(m.b.samples)}", m.verdict] for m in ordered[:limit]]
    if len(ordered) > limit:
        rows.append([f"... {len(ordered) - limit} more (all within the shown verdicts' order)"])
    lines += table(["point", "metric", "A", "B", "B/A", "spread", "slowdown", "n A/B", "verdict"],
                   rows, align="llrrrlrll")
    return "\n".join(lines) + "\n"


# --- reference values --------------------------------------------------------------------------


@dataclass
class Reference:
    match: Dict[str, Any]
    metric: str
    value: float
    lower: Optional[float] = None
    upper: Optional[float] = None
    unit: str = ""

    def bounds(self) -> Tuple[float, float]:
        lo = self.value * (1 + self.lower) if self.lower is not None else -math.inf
        hi = self.value * (1 + self.upper) if self.upper is not None else math.inf
        return lo, hi

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.match.items())


@dataclass
class Check:
    reference: Reference
    measured: Optional[float]       # trimmed mean; None: not measured
    n: int = 0

    @property
    def status(self) -> str:
        if self.measured is None:
            return "not measured"
        lo, hi = self.reference.bounds()
        return "ok" if lo <= self.measured <= hi else "out of bounds"


def load_references(path: Path) -> Tuple[str, List[Reference]]:
    import yaml

    data = yaml.safe_load(Path(path).read_text()) or {}
    entries = data.get("references")
    if not isinstance(entries, list):
        raise CampaignError(f"{path}: expected a 'references:' list")
    refs = []
    for index, entry in enumerate(entries):
        try:
            refs.append(Reference(match=dict(entry["match"]), metric=str(entry["metric"]),
                                  value=float(entry["value"]), lower=entry.get("lower"),
                                  upper=entry.get("upper"), unit=str(entry.get("unit", ""))))
        except (KeyError, TypeError, ValueError) as exc:
            raise CampaignError(f"{path}: references[{index}]: needs match, metric and value "
                                f"({exc})") from None
    return str(data.get("machine", "")), refs


def check_references(records: List[Record], refs: List[Reference]) -> List[Check]:
    by_metric: Dict[str, List[Figure]] = {}
    checks = []
    for ref in refs:
        figs = by_metric.setdefault(ref.metric, figures(records, ref.metric))
        hits = [f for f in figs if all(
            str({**f.params, **f.row}.get(k)) == str(v) for k, v in ref.match.items())]
        if not hits:
            checks.append(Check(ref, None))
        for f in hits:
            checks.append(Check(ref, f.center, len(f.samples)))
    return checks


def references_markdown(checks: List[Check], source: str) -> str:
    bad = [c for c in checks if c.status == "out of bounds"]
    lines = [f"# Reference check against {source}", "",
             f"- checked: {sum(c.measured is not None for c in checks)}, out of bounds: "
             f"{len(bad)}, not measured: {sum(c.measured is None for c in checks)}",
             f"- verdict: **{'FAIL' if bad else 'PASS'}**", ""]
    rows = []
    for c in sorted(checks, key=lambda c: c.status != "out of bounds"):
        lo, hi = c.reference.bounds()
        rows.append([c.reference.describe(), c.reference.metric, f"{c.reference.value:.5g}",
                     f"{lo:.5g}..{hi:.5g}", "" if c.measured is None else f"{c.measured:.5g}",
                     c.n, c.status])
    lines += table(["reference", "metric", "value", "bounds", "measured", "n", "status"], rows,
                   align="llrlrrl")
    return "\n".join(lines) + "\n"


def write_references(figs: List[Figure], machine: str, tolerance: float,
                     keys: Sequence[str] = (), ignore: Sequence[str] = (),
                     source: str = "") -> str:
    """A references YAML from a campaign's figures: each matches on all of its parameters and
    result-row fields except ``ignore``, ``keys`` (say, those of a ``--where``) first."""
    import yaml

    entries = []
    for f in figs:
        items = {**f.row, **f.params}
        names = list(keys) + sorted(k for k in items if k not in keys)
        entries.append({"match": {k: items[k] for k in names if k in items and k not in ignore},
                        "metric": f.metric, "value": float(f"{f.center:.5g}"),
                        "lower": -tolerance, "upper": tolerance})
    header = ("# Reference values (commstack compare --reference): a measured trimmed mean must "
              "lie in\n# value*(1+lower) .. value*(1+upper); null bounds are open.\n"
              + (f"# Written by `commstack compare --write-reference` from {source}.\n"
                 if source else ""))
    return header + yaml.safe_dump({"machine": machine, "references": entries}, sort_keys=False)
