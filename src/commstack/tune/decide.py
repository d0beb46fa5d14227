"""The decision rule of a tuning step, as pure functions over measurements.

Per message size, every candidate's repeats are reduced to a trimmed mean (one min and one max
dropped). A candidate *beats* the incumbent at a size when it is faster by more than the noise:
by default half the larger spread (max - min) of the two candidates' repeats there, or a fixed
relative amount. A candidate that is slower than the incumbent beyond noise at any size is out
(so a tuned setting is never slower than the default beyond noise). Among the others, the score
is the sum of log speed-ups over the sizes where it wins beyond noise; the best-scoring candidate
wins the step if its score is positive, otherwise the incumbent (default or previous choice) stays.
Bands say which candidate is best per run of message sizes, for settings that differ by size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Hashable, List, Optional, Sequence, Tuple

from commstack.aggregate import trimmed_mean

Size = Optional[int]
Measurements = Dict[Hashable, Dict[Size, List[float]]]  # candidate -> size -> samples


@dataclass
class Stats:
    value: float  # trimmed mean
    low: float
    high: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> "Stats":
        return cls(trimmed_mean(samples), min(samples), max(samples))


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
    scores: Dict[Hashable, float] = field(default_factory=dict)
    bands: List[Band] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.winner != self.incumbent


def noise(a: Stats, b: Stats, rule: "str | float") -> float:
    if rule == "range":
        return max(a.high - a.low, b.high - b.low) / 2
    return float(rule) * a.value


def beats(candidate: Stats, incumbent: Stats, rule: "str | float", min_gain: float = 0.0) -> bool:
    """True when the candidate is faster than the incumbent beyond noise (lower is better)."""
    margin = max(noise(incumbent, candidate, rule), min_gain * incumbent.value)
    return incumbent.value - candidate.value > margin


def decide(measurements: Measurements, incumbent: Hashable, rule: "str | float" = "range",
           min_gain: float = 0.0, allow_losses: bool = False) -> Outcome:
    if incumbent not in measurements:
        raise ValueError(f"the incumbent {incumbent!r} was not measured")
    stats = {c: {s: Stats.of(v) for s, v in sizes.items() if v}
             for c, sizes in measurements.items()}
    base = stats[incumbent]
    outcome = Outcome(incumbent, incumbent)
    for cand, sizes in stats.items():
        score = 0.0
        for size, st in sizes.items():
            ref = base.get(size)
            if ref is None or st.value <= 0 or ref.value <= 0:
                continue
            if beats(st, ref, rule, min_gain):
                score += math.log(ref.value / st.value)
            elif beats(ref, st, rule, 0.0):
                if not allow_losses:
                    score = -math.inf
                    break
                score += math.log(ref.value / st.value)
        outcome.scores[cand] = score
    best = max(outcome.scores, key=lambda c: (outcome.scores[c], c == incumbent))
    if outcome.scores[best] > 0:
        outcome.winner = best
    outcome.bands = _bands(stats, incumbent, rule, min_gain)
    return outcome


def _bands(stats: Dict[Hashable, Dict[Size, Stats]], incumbent: Hashable, rule: "str | float",
           min_gain: float) -> List[Band]:
    sizes = sorted(stats[incumbent], key=lambda s: -1 if s is None else s)
    bands: List[Band] = []
    for size in sizes:
        ref = stats[incumbent][size]
        winners = [(st.value, c) for c, by_size in stats.items()
                   if (st := by_size.get(size)) is not None and beats(st, ref, rule, min_gain)]
        best, gain = incumbent, 0.0
        if winners:
            value, best = min(winners, key=lambda w: w[0])
            gain = 1 - value / ref.value
        if bands and bands[-1].best == best:
            bands[-1].last = size
            bands[-1].gain = max(bands[-1].gain, gain)
        else:
            bands.append(Band(size, size, best, gain))
    return bands


def decide_per_group(measurements: Measurements, incumbent: Tuple, axes: List[str], per: str,
                     rule: "str | float", min_gain: float, allow_losses: bool = False
                     ) -> Tuple[Outcome, Dict[Hashable, Outcome]]:
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
        per_group[value] = decide(members, local, rule, min_gain, allow_losses)
    finalists = {o.winner: measurements[o.winner] for o in per_group.values()}
    finalists.setdefault(incumbent, measurements[incumbent])
    return decide(finalists, incumbent, rule, min_gain, allow_losses), per_group
