"""Compare two campaigns point by point, or one campaign with reference values (ReFrame-like).

Campaign vs campaign: points are matched on the parameters both campaigns have (``--ignore``
drops some, ``--where`` keeps a subset) and on the result row (benchmark, np, mode, bytes, ...).
For each match: both medians with their 95 % intervals, the slowdown (ratio of medians, > 1 when
B is worse: a longer time or a lower bandwidth) with its interval, and a verdict from
:mod:`commstack.stats`:

* ``regression`` / ``improvement``: a two-sided Mann-Whitney U test of the repeats is significant
  after Benjamini-Hochberg correction over every matched figure, AND the slowdown is beyond the
  threshold (default 5 %) even with both medians moved half a unit of the last printed digit
  towards each other (IMB prints 0.03 or 0.04 us for the same 0-byte time);
* ``untested``: beyond the threshold, but a side has a single value (an imported table): no test
  can tell it from noise, so it never fails a comparison;
* ``same``: neither.

The comparison also tests the campaign as a whole: on a busy machine a whole pass over the points
(a repeat) is lucky or unlucky, so the points of one pass move together, and a slowdown of every
point by 10 % hides inside each point's spread. Passes are paired by repeat number (with the repeats
interleaved in time, as ``tests/test_compare.py`` and ``bench/verdicts.py`` run them, a pair shares
the machine's moment; otherwise any pairing of exchangeable passes is still a valid test): each
pair gives the median over the figures of log(B / A), and a one-sided Wilcoxon signed-rank test asks
whether B's passes are slower. A **broad slowdown** is that test significant AND the slowdown
it estimates (the Hodges-Lehmann estimate of the paired passes' shifts, the estimator of the
signed-rank test) beyond the threshold. It needs six passes a side (1 / 2^6 < 0.025).

The comparison fails on a regression or a broad slowdown. The two tests share alpha (each at
alpha / 2), so an identical rerun fails with probability at most alpha (5 %); docs/measured.md
("Verdicts: false alarms and power") gives the false-alarm rate and the power measured by
``bench/verdicts.py``.

Simulated campaigns (``commstack.simulated``): a figure whose runs were simulated (SimGrid SMPI)
is never set against a measured one, nor against one simulated on another platform, unless the
caller asks for it (``simulated_vs_measured``; ``commstack compare --simulated-vs-measured``):
otherwise :class:`SimulationMismatch` says which side is which. A comparison with a simulated
side starts with one sentence saying which side is simulated (simulator, platform) and which
measured (:func:`commstack.simulated.comparison_sentence`), and each verdict of a simulated
figure against a measured one reads ``B slower``/``B faster`` with the sides' kinds, never
``regression``/``improvement``: a simulation's difference from a machine is the model's error as
much as any change.

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
measured median outside its bounds fails; a reference nothing in the campaign matches is listed as
not measured.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from commstack import simulated as sim
from commstack import stats
from commstack.aggregate import print_quantum
from commstack.errors import CampaignError
from commstack.figures import Figure, figures, varying
from commstack.markdown_table import table
from commstack.store.record import Record

DEFAULT_THRESHOLD = stats.THRESHOLD
# Record parameters not used to match points while each campaign has one value (they name the
# run, not the configuration: ompi-4 against ompi-5); matched when a campaign has several.
NOT_MATCHED = {"stack"}
REGRESSION, IMPROVEMENT, SAME, UNTESTED = "regression", "improvement", "same", "untested"
PASSES_SHOWN = 20  # paired passes listed one by one in the comparison's header


# --- campaign vs campaign ----------------------------------------------------------------------


@dataclass
class Match:
    a: Figure
    b: Figure
    threshold: float
    verdict: str = SAME  # set by judge(): regression, improvement, same, untested
    shift: Optional[stats.Shift] = None
    p_adjusted: float = 1.0

    @property
    def crossed(self) -> bool:
        """A and B are of different kinds: one simulated and one measured, or simulated on two
        platforms."""
        return self.a.simulated != self.b.simulated

    def measure(self) -> stats.Shift:
        if self.shift is None:
            self.shift = stats.shift(self.a.samples, self.b.samples, self.a.lower_is_better)
        return self.shift

    @property
    def slowdown(self) -> float:
        """> 1: B is worse (slower, or less bandwidth); the ratio of the medians."""
        return self.measure().ratio

    @property
    def printed_slowdown(self) -> float:
        """The slowdown with both medians moved half a unit of the last printed digit towards
        each other: two runs one printed digit apart differ by rounding, not by a measurement."""
        half = print_quantum(self.a.samples + self.b.samples) / 2
        a, b = self.a.center, self.b.center
        worse, better = (b, a) if self.a.lower_is_better else (a, b)
        if worse > better:
            worse, better = worse - half, better + half
        elif worse < better:
            worse, better = worse + half, better - half
        if better <= 0:
            return 1.0 if worse <= 0 else math.inf
        return max(worse, 0.0) / better


def judge(matches: List[Match], alpha: float = stats.ALPHA, method: str = "bh") -> None:
    """Set every match's verdict: the figures' tests corrected together (see the module)."""
    shifts = [m.measure() for m in matches]
    for m, shift, p in zip(matches, shifts, stats.corrected(shifts, method)):
        m.p_adjusted = p
        call = stats.call(m.printed_slowdown, p, shift.testable, m.threshold, alpha)
        m.verdict = {stats.WORSE: REGRESSION, stats.BETTER: IMPROVEMENT,
                     stats.UNTESTED: UNTESTED}.get(call, SAME)


@dataclass
class Comparison:
    matches: List[Match]
    only_a: List[Figure]
    only_b: List[Figure]
    ambiguous: int
    keys: List[str]
    threshold: float
    alpha: float = stats.ALPHA
    method: str = "bh"
    notes: List[str] = field(default_factory=list)
    _broad: Optional[stats.Shift] = field(default=None, repr=False, compare=False)
    kind_a: sim.Kind = sim.MEASURED  # simulated (on which platforms) or measured
    kind_b: sim.Kind = sim.MEASURED

    @property
    def crossed(self) -> bool:
        """Some figure is set against one of another kind (simulated against measured)."""
        return any(m.crossed for m in self.matches)

    @property
    def median_slowdown(self) -> float:
        values = [m.slowdown for m in self.matches if math.isfinite(m.slowdown)]
        return statistics.median(values) if values else 1.0

    @property
    def regressions(self) -> List[Match]:
        return [m for m in self.matches if m.verdict == REGRESSION]

    def paired_shifts(self) -> List[float]:
        """Per repeat number both campaigns have (a pass over all points each): the median over
        the figures of log(B's sample / A's sample), > 0 when B's pass was worse."""
        shifts: Dict[int, List[float]] = {}
        for m in self.matches:
            a = dict(zip(m.a.repeats, m.a.samples))
            b = dict(zip(m.b.repeats, m.b.samples))
            sign = 1.0 if m.a.lower_is_better else -1.0
            for r in set(a) & set(b):
                if a[r] > 0 and b[r] > 0:
                    shifts.setdefault(r, []).append(sign * math.log(b[r] / a[r]))
        full = [v for v in shifts.values() if len(v) * 2 >= len(self.matches)]
        return [statistics.median(v) for v in full]

    @property
    def broad(self) -> stats.Shift:
        """One-sided Wilcoxon signed-rank test that B's passes are slower than A's, paired by
        repeat number; ratio: exp of the Hodges-Lehmann estimate of the paired shifts (the
        median slowdown over the figures while fewer than two passes pair)."""
        if self._broad is None:
            shifts = self.paired_shifts()
            if len(shifts) >= 2:
                p = stats.signed_rank(shifts, "greater")
                ratio = math.exp(stats.hodges_lehmann(shifts))
            else:
                p, ratio = 1.0, self.median_slowdown
            self._broad = stats.Shift(ratio, ratio, ratio, p, len(shifts), len(shifts))
        return self._broad

    @property
    def broad_slowdown(self) -> bool:
        broad = self.broad
        return broad.testable and broad.p < self.alpha / 2 and broad.ratio > 1 + self.threshold

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


class SimulationMismatch(CampaignError):
    """A simulated figure would be set against a measured one (or one simulated on another
    platform) without the caller asking for it."""

    def __init__(self, kind_a: sim.Kind, kind_b: sim.Kind, name_a: str = "A", name_b: str = "B"):
        super().__init__(mismatch_text(kind_a, kind_b, name_a, name_b))
        self.kind_a, self.kind_b = kind_a, kind_b

    def named(self, name_a: str, name_b: str) -> "SimulationMismatch":
        """The same error with the sides named."""
        return SimulationMismatch(self.kind_a, self.kind_b, name_a, name_b)


def kind(figs: Sequence[Figure]) -> sim.Kind:
    """Whether the figures are simulated (on which platforms) or measured."""
    return sim.kind_of(f.simulation for f in figs)


def mismatch_text(kind_a: sim.Kind, kind_b: sim.Kind, name_a: str = "A", name_b: str = "B") -> str:
    return (f"{name_a} is {kind_a.describe()} and {name_b} is {kind_b.describe()}: a simulated "
            "campaign is compared with a measured one (or one simulated on another platform) "
            "only when asked, as a check of the simulation, never as a baseline; give "
            "--simulated-vs-measured to compare them")


def compare(a: List[Figure], b: List[Figure], threshold: float = DEFAULT_THRESHOLD,
            ignore: Sequence[str] = (), where: Optional[Dict[str, str]] = None,
            alpha: float = stats.ALPHA, method: str = "bh",
            simulated_vs_measured: bool = False) -> Comparison:
    """``simulated_vs_measured``: match simulated figures with measured ones (or with ones
    simulated on another platform); without it such a match raises :class:`SimulationMismatch`."""
    a, b = select_figures(a, where or {}), select_figures(b, where or {})
    names_a = set().union(*(f.params for f in a)) if a else set()
    names_b = set().union(*(f.params for f in b)) if b else set()
    swept = {k for k in NOT_MATCHED if any(len({str(f.params.get(k)) for f in side}) > 1
                                            for side in (a, b))}
    keys = sorted((names_a & names_b) - set(ignore) - (NOT_MATCHED - swept))

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
    if not simulated_vs_measured and any(m.crossed for m in matches):
        raise SimulationMismatch(kind(a), kind(b))
    judge(matches, alpha / 2, method)
    return Comparison(matches, only_a, only_b, ambiguous, keys, threshold, alpha, method,
                      kind_a=kind(a), kind_b=kind(b))


def _broad(cmp: Comparison) -> str:
    broad = cmp.broad
    if not broad.testable:
        return (f"{broad.n_a} pass(es) paired by repeat number, too few for the test of the "
                "whole campaign")
    values = cmp.paired_shifts()
    shifts = ", ".join(f"{math.exp(x):.3f}" for x in values[:PASSES_SHOWN])
    if len(values) > PASSES_SHOWN:
        shifts += f", ... ({len(values)} passes)"
    return (f"median slowdown per paired pass {shifts}; their Hodges-Lehmann estimate "
            f"{broad.ratio:.3f}; signed-rank p = {broad.p:.2g} "
            f"({'significant' if broad.p < cmp.alpha / 2 else 'not significant'} at "
            f"{cmp.alpha / 2:g}, one-sided)")


def _value(samples: List[float], lower_is_better: bool) -> str:
    c = stats.describe(samples, rate=not lower_is_better)
    if not c.has_interval:
        return f"{c.median:.5g} (n={c.n})"
    return f"{c.median:.5g} [{c.low:.5g}, {c.high:.5g}] (n={c.n})"


def _few(cmp: Comparison) -> str:
    """A note when the repeats are too few for one figure alone to be called among many: the
    smallest two-sided p of a rank test of n vs m samples is 2 / C(n + m, n)."""
    tested = [m for m in cmp.matches if m.measure().testable]
    if not tested:
        return ""
    n = min(min(len(m.a.samples), len(m.b.samples)) for m in tested)
    floor = 2 / math.comb(2 * n, n)
    if floor <= cmp.alpha / len(tested):
        return ""
    return (f"- with {n} repeats a side, a rank test cannot reach p < {floor:.2g}: among "
            f"{len(tested)} figures a change at a single one cannot be called, only a shift "
            "across many figures (repeat more, or compare fewer figures with --where)")


def sentence(cmp: Comparison, name_a: str, name_b: str) -> Optional[str]:
    """The comparison's first sentence when a side is simulated (None: both measured)."""
    return sim.comparison_sentence(cmp.kind_a, cmp.kind_b, name_a, name_b)


def _side(m: Match, side: str) -> str:
    mine, other = (m.a, m.b) if side == "A" else (m.b, m.a)
    if mine.simulated is None:
        return f"{side} measured"
    if other.simulated is None:
        return f"{side} {sim.WORD}"
    return f"{side} {sim.WORD} on {mine.simulated}"


def verdict_label(m: Match) -> str:
    """The verdict as a table shows it: a simulated figure against a measured one is never a
    regression or an improvement, only B slower or faster than A, the sides named."""
    if not m.crossed:
        return m.verdict
    word = {REGRESSION: "B slower", IMPROVEMENT: "B faster"}.get(m.verdict, m.verdict)
    return f"{word} ({_side(m, 'B')} vs {_side(m, 'A')})"


def _point(m: Match, label_keys: Sequence[str], marked: bool) -> str:
    """The point's name; with a simulated side anywhere, its kind after it when both sides
    are of one kind (the verdict of a simulated against a measured one names both)."""
    text = m.a.describe(label_keys)
    if not marked:
        return text
    kinds = {f.simulated for f in (m.a, m.b)}
    if kinds == {None}:
        return f"{text} (measured)"
    if len(kinds) == 1:
        return sim.marked(text, True)
    return text  # its verdict names each side's kind


def comparison_markdown(cmp: Comparison, name_a: str, name_b: str, limit: int = 200,
                        with_sentence: bool = True) -> str:
    """The comparison as Markdown; with a simulated side, its sentence (:func:`sentence`) is
    the first line unless ``with_sentence`` is False (the caller prints it first itself)."""
    figs = [m.a for m in cmp.matches]
    label_keys = varying(figs) or cmp.keys
    first = sentence(cmp, name_a, name_b)
    marked = first is not None
    crossed = cmp.crossed
    lines = ([f"**{first}**", ""] if first and with_sentence else [])
    lines += [f"# {name_b} vs {name_a}", "",
              f"- matched on: {', '.join(cmp.keys) or '(result rows only)'}",
              f"- matched figures: {len(cmp.matches)}; only in A: {len(cmp.only_a)}; only in B: "
              f"{len(cmp.only_b)}; ambiguous (several points per key; use --where/--ignore): "
              f"{cmp.ambiguous}",
              f"- threshold: {cmp.threshold:.0%}; alpha: {cmp.alpha:g} (half for the figures, "
              f"{'Benjamini-Hochberg' if cmp.method == 'bh' else 'Holm'} over "
              f"{sum(m.measure().testable for m in cmp.matches)} tested figures; half for the "
              "campaign as a whole)",
              f"- campaign as a whole: median slowdown B vs A over the figures "
              f"{cmp.median_slowdown:.3f}{' (broad slowdown)' if cmp.broad_slowdown else ''}; "
              f"{_broad(cmp)}",
              (f"- B slower: {len(cmp.regressions)}; B faster: {cmp.count(IMPROVEMENT)}; "
               f"same: {cmp.count(SAME)}; untested: {cmp.count(UNTESTED)} (simulated against "
               "measured: no regression or improvement of a machine)" if crossed else
               f"- regressions: {len(cmp.regressions)}; improvements: {cmp.count(IMPROVEMENT)}; "
               f"same: {cmp.count(SAME)}; untested: {cmp.count(UNTESTED)}"),
              f"- verdict: **{'FAIL' if cmp.failed else 'PASS'}**"
              + (f" (A: {cmp.kind_a.short()}; B: {cmp.kind_b.short()})" if marked else "")]
    few = _few(cmp)
    lines += ([few] if few else []) + [""]
    lines += ["How to read: A and B are medians over the repeats with their distribution-free 95 % "
              "interval (none below 6 repeats) and n; slowdown > 1 means B is worse (longer time "
              "or lower bandwidth), with its bootstrap 95 % interval; p is the Mann-Whitney U "
              f"p-value after correction. Verdicts: {stats.rule_text(cmp.threshold, cmp.alpha / 2, cmp.method)}"
              " (regression/improvement); untested: beyond the threshold with a single value on a "
              "side; same: otherwise. The comparison fails on any regression, or on a broad "
              "slowdown (the campaign's passes slower as a whole, see above)."
              + (" A simulated figure against a measured one (or one simulated on another "
                 "platform) reads B slower or B faster instead of regression or improvement, "
                 "with each side's kind: the difference is the simulation's error as much as "
                 "any change." if crossed else ""), ""]
    rank = {REGRESSION: 0, UNTESTED: 1, IMPROVEMENT: 2, SAME: 3}
    ordered = sorted(cmp.matches, key=lambda m: (rank[m.verdict], m.p_adjusted, -abs(math.log(
        m.slowdown)) if 0 < m.slowdown < math.inf else 0, m.a.describe(label_keys)))
    rows = []
    for m in ordered[:limit]:
        s = m.measure()
        rows.append([_point(m, label_keys, marked), m.a.metric,
                     _value(m.a.samples, m.a.lower_is_better),
                     _value(m.b.samples, m.b.lower_is_better),
                     f"{s.ratio:.3f} [{s.low:.3f}, {s.high:.3f}]" if s.testable else f"{s.ratio:.3f}",
                     f"{m.p_adjusted:.2g}" if s.testable else "–", verdict_label(m)])
    if len(ordered) > limit:
        rows.append([f"... {len(ordered) - limit} more (all within the shown verdicts' order)"])
    heads = ["point", "metric", "A", "B", "slowdown", "p (corrected)", "verdict"]
    if marked:
        heads[2:4] = [f"A ({cmp.kind_a.short()})", f"B ({cmp.kind_b.short()})"]
    lines += table(heads, rows, align="llrrrrl")
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
    measured: Optional[float]       # the median over the repeats; None: not measured
    n: int = 0

    @property
    def status(self) -> str:
        if self.measured is None:
            return "not measured"
        lo, hi = self.reference.bounds()
        return "ok" if lo <= self.measured <= hi else "out of bounds"


def references_simulated(path: Path) -> Optional[str]:
    """The platform a references YAML's values were simulated on (its ``simulated`` key,
    written by :func:`write_references` from a simulated campaign); None: measured values."""
    import yaml

    data = yaml.safe_load(Path(path).read_text()) or {}
    value = data.get("simulated") if isinstance(data, dict) else None
    return str(value) if value else None


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


def references_markdown(checks: List[Check], source: str, first: Optional[str] = None,
                        checked: sim.Kind = sim.MEASURED) -> str:
    """``first``: the sentence saying which side is simulated (first line); ``checked``: the
    kind of the campaign checked (its column says ``simulated`` when it is)."""
    bad = [c for c in checks if c.status == "out of bounds"]
    lines = [f"**{first}**", ""] if first else []
    lines += [f"# Reference check against {source}", "",
             f"- checked: {sum(c.measured is not None for c in checks)}, out of bounds: "
             f"{len(bad)}, not measured: {sum(c.measured is None for c in checks)}",
             f"- verdict: **{'FAIL' if bad else 'PASS'}**", ""]
    rows = []
    for c in sorted(checks, key=lambda c: c.status != "out of bounds"):
        lo, hi = c.reference.bounds()
        rows.append([c.reference.describe(), c.reference.metric, f"{c.reference.value:.5g}",
                     f"{lo:.5g}..{hi:.5g}", "" if c.measured is None else f"{c.measured:.5g}",
                     c.n, c.status])
    what = f"{sim.WORD} ({', '.join(checked.platforms)})" if checked.simulated else "measured"
    lines += table(["reference", "metric", "value", "bounds", what, "n", "status"], rows,
                   align="llrlrrl")
    return "\n".join(lines) + "\n"


def write_references(figs: List[Figure], machine: str, tolerance: float,
                     keys: Sequence[str] = (), ignore: Sequence[str] = (),
                     source: str = "") -> str:
    """A references YAML from a campaign's figures: each matches on all of its parameters and
    result-row fields except ``ignore``, ``keys`` (say, those of a ``--where``) first. Values
    of simulated figures say so (``simulated: <platform>``, and in the header): checking a
    measured campaign against them needs ``--simulated-vs-measured``."""
    import yaml

    entries = []
    for f in figs:
        items = {**f.row, **f.params}
        names = list(keys) + sorted(k for k in items if k not in keys)
        entries.append({"match": {k: items[k] for k in names if k in items and k not in ignore},
                        "metric": f.metric, "value": float(f"{f.center:.5g}"),
                        "lower": -tolerance, "upper": tolerance})
    header = ("# Reference values (commstack compare --reference): a measured median must "
              "lie in\n# value*(1+lower) .. value*(1+upper); null bounds are open.\n"
              + (f"# Written by `commstack compare --write-reference` from {source}.\n"
                 if source else ""))
    found = kind(figs)
    data: Dict[str, Any] = {"machine": machine}
    if found.simulated:
        header += (f"# SIMULATED, NOT MEASURED: these values are {found.describe()}; they are "
                   "no reference for a measured\n# campaign (checking one needs "
                   "--simulated-vs-measured).\n")
        data["simulated"] = " and ".join(found.platforms)
    data["references"] = entries
    return header + yaml.safe_dump(data, sort_keys=False)
