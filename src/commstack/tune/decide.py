"""The decision rule of a tuning step, as pure functions over measurements.

Every candidate is compared with the incumbent (the default, or an earlier step's choice) at every
message size both measured, by :mod:`commstack.stats`: a two-sided Mann-Whitney U test of the
repeats with the ratio of medians as the effect. All comparisons of a step (candidates x sizes) are
one family, corrected together (Benjamini-Hochberg by default), so that one lucky size among many
is not a win. At a size a candidate is

* ``better``: significant after correction AND faster by more than the practical threshold
  (default 5 %);
* ``worse``: the same, slower;
* ``same``: otherwise (including too few repeats to tell).

A candidate that is worse at any size is out (unless ``allow_losses``), so a tuned setting is
never slower than the default where the tests can tell. Among the others not typically slower
(their median speed-up over the sizes at least 1 / (1 + threshold): a median ratio within the
practical threshold is the rule's "same", so launch noise at the sizes where a candidate equals
the incumbent does not decide whether its wins count), the winner is the one better at the most
sizes (with ``allow_losses``: better minus worse), ties broken by that median speed-up (a median,
not a sum or mean of ratios: Hoefler & Belli, rule 4); a candidate better nowhere never wins, and
the incumbent stays. One better at some sizes but typically slower is left to the bands, which
name the best candidate per run of message sizes, only where one is better.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Dict, Hashable, List, Optional, Tuple

from commstack import stats

Size = Optional[int]
Measurements = Dict[Hashable, Dict[Size, List[float]]]  # candidate -> size -> samples (lower is better)
BETTER, WORSE, SAME = stats.BETTER, stats.WORSE, stats.SAME


@dataclass(frozen=True)
class Rule:
    """How a step decides: the tests' significance, their correction, the practical threshold."""

    threshold: float = stats.THRESHOLD
    alpha: float = stats.ALPHA
    correction: str = "bh"
    allow_losses: bool = False

    def text(self) -> str:
        return (stats.rule_text(self.threshold, self.alpha, self.correction)
                + ("; a loss at some sizes may be paid for by wins elsewhere" if self.allow_losses
                   else "; a candidate slower at any size is out"))

    def as_dict(self) -> Dict[str, object]:
        """The rule as a step's decision.json and campaign.json keep it."""
        return {"threshold": self.threshold, "alpha": self.alpha, "correction": self.correction,
                "allow_losses": self.allow_losses}


@dataclass(frozen=True)
class Call:
    """A candidate against the incumbent at one size."""

    call: str           # better, worse, same
    ratio: float        # median(candidate) / median(incumbent): < 1 is faster
    p_adjusted: float


@dataclass
class Score:
    wins: int = 0
    losses: int = 0
    median_speedup: float = 1.0  # median over the sizes of incumbent / candidate (medians)

    @property
    def eligible(self) -> bool:
        return self.losses == 0

    def key(self, allow_losses: bool) -> Tuple[int, float]:
        return (self.wins - self.losses if allow_losses else self.wins, self.median_speedup)


@dataclass
class Band:
    first: Size
    last: Size
    best: Hashable
    gain: float  # relative gain of `best` over the incumbent (0 when the incumbent stays)


@dataclass
class Outcome:
    winner: Hashable
    incumbent: Hashable
    scores: Dict[Hashable, Score] = field(default_factory=dict)
    bands: List[Band] = field(default_factory=list)
    calls: Dict[Hashable, Dict[Size, Call]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.winner != self.incumbent


def _size_order(size: Size) -> int:
    return -1 if size is None else size


def calls(measurements: Measurements, incumbent: Hashable, rule: Rule = Rule()
          ) -> Dict[Hashable, Dict[Size, Call]]:
    """Every other candidate against the incumbent at every size both measured, the tests
    corrected together as one family."""
    base = measurements[incumbent]
    pairs: List[Tuple[Hashable, Size]] = []
    shifts: List[stats.Shift] = []
    for cand, sizes in measurements.items():
        if cand == incumbent:
            continue
        for size, samples in sizes.items():
            ref = base.get(size)
            if not ref or not samples or stats.median(ref) <= 0 or stats.median(samples) <= 0:
                continue
            pairs.append((cand, size))
            shifts.append(stats.shift(ref, samples, lower_is_better=True, interval=False))
    out: Dict[Hashable, Dict[Size, Call]] = {c: {} for c in measurements if c != incumbent}
    for i, ((cand, size), p) in enumerate(zip(pairs, stats.corrected(shifts, rule.correction))):
        verdict = stats.call(shifts[i].ratio, p, shifts[i].testable, rule.threshold, rule.alpha)
        call = {stats.WORSE: WORSE, stats.BETTER: BETTER}.get(verdict, SAME)
        out[cand][size] = Call(call, shifts[i].ratio, p)
    return out


def _typically_slower(score: Score, rule: Rule) -> bool:
    """Slower than the incumbent over the sizes by more than the practical threshold (the
    median of the per-size ratios): a difference within it is the rule's "same", so the noise
    of a candidate equal at most sizes does not decide whether its wins count."""
    return score.median_speedup * (1 + rule.threshold) < 1


def decide(measurements: Measurements, incumbent: Hashable, rule: Rule = Rule()) -> Outcome:
    if incumbent not in measurements:
        raise ValueError(f"the incumbent {incumbent!r} was not measured")
    found = calls(measurements, incumbent, rule)
    outcome = Outcome(incumbent, incumbent, calls=found)
    outcome.scores[incumbent] = Score()
    for cand, by_size in found.items():
        ratios = [c.ratio for c in by_size.values() if c.ratio > 0]
        outcome.scores[cand] = Score(
            wins=sum(c.call == BETTER for c in by_size.values()),
            losses=sum(c.call == WORSE for c in by_size.values()),
            median_speedup=1 / statistics.median(ratios) if ratios else 1.0)
    # A win at some sizes does not make a setting better where it is typically slower: such a
    # candidate stays in the bands (a per-size choice), not the step's winner.
    contenders = [c for c, s in outcome.scores.items()
                  if c != incumbent and s.wins and (rule.allow_losses or s.eligible)
                  and s.key(rule.allow_losses)[0] > 0 and not _typically_slower(s, rule)]
    if contenders:
        outcome.winner = max(contenders, key=lambda c: outcome.scores[c].key(rule.allow_losses))
    outcome.bands = _bands(measurements, found, incumbent)
    return outcome


def _bands(measurements: Measurements, found: Dict[Hashable, Dict[Size, Call]],
           incumbent: Hashable) -> List[Band]:
    bands: List[Band] = []
    for size in sorted(measurements[incumbent], key=_size_order):
        winners = [(c[size].ratio, cand) for cand, c in found.items()
                   if size in c and c[size].call == BETTER]
        best, gain = incumbent, 0.0
        if winners:
            ratio, best = min(winners, key=lambda w: w[0])
            gain = 1 - ratio
        if bands and bands[-1].best == best:
            bands[-1].last = size
            bands[-1].gain = max(bands[-1].gain, gain)
        else:
            bands.append(Band(size, size, best, gain))
    return bands


def decide_per_group(measurements: Measurements, incumbent: Tuple, axes: List[str], per: str,
                     rule: Rule = Rule()) -> Tuple[Outcome, Dict[Hashable, Outcome]]:
    """Decide the other axes separately for each value of `per`, then among the group winners.

    Candidates are tuples of values in `axes` order."""
    index = axes.index(per)
    groups: Dict[Hashable, Measurements] = {}
    for cand, sizes in measurements.items():
        groups.setdefault(cand[index], {})[cand] = sizes
    per_group: Dict[Hashable, Outcome] = {}
    for value, members in groups.items():
        local = tuple(value if i == index else incumbent[i] for i in range(len(axes)))
        if local not in members:  # the incumbent's other values were not swept with this one
            local = next(iter(members))
        per_group[value] = decide(members, local, rule)
    finalists = {o.winner: measurements[o.winner] for o in per_group.values()}
    finalists.setdefault(incumbent, measurements[incumbent])
    return decide(finalists, incumbent, rule), per_group


def compare_sizes(default: Dict[Size, List[float]], chosen: Dict[Size, List[float]],
                  rule: Rule = Rule()) -> Dict[str, List[Size]]:
    """Chosen against default at every size both measured (one family): the sizes where it is
    faster, slower, or neither by the rule."""
    found = calls({"default": default, "chosen": chosen}, "default", rule)["chosen"]
    out: Dict[str, List[Size]] = {BETTER: [], WORSE: [], SAME: []}
    for size in sorted(found, key=_size_order):
        out[found[size].call].append(size)
    return out
