"""Racing within a tuning step: candidates are measured in rounds, and one that is clearly worse
stops taking runs (F-race, Birattari et al. 2002; successive elimination), so the step's runs go
to the candidates still in the race.

A plan asks for it with ``racing: {first: 4, round: 2, most: 16}``: every candidate takes
``first`` repeats, then each round adds ``round`` repeats to those still racing, up to ``most``
(default: ``base.repeats``). After each round, at every message size, the candidates still
racing are compared with that size's best (the lowest median), all these comparisons one family
corrected together by the step's rule (:mod:`commstack.stats`, as
:func:`commstack.tune.decide.calls`); a candidate worse than the best by more than the practical
threshold, significantly, at *every* size is dropped: one that is best, or not told apart from
the best, at some size stays (a step's per-size bands may want it). The incumbent is never
dropped: the step's decision is taken as without racing (:func:`commstack.tune.decide.decide`, the same rank tests
and correction against the incumbent), on every run the race made, so the false-winner guarantee
is the rule's. A race stops when ``most`` is reached, when one candidate besides the incumbent is
left after the first round's repeats have been doubled, or at the step's budget of runs.

Mann-Whitney's smallest two-sided p is 2/70 at 4 against 4 repeats and 2/20 at 3: below 4 no
comparison can ever be significant at alpha 0.05, so ``first`` is at least 4.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

from commstack import stats
from commstack.matrix.model import MatrixError
from commstack.tune import decide as rule
from commstack.tune.decide import Size

MIN_FIRST = 4


@dataclass(frozen=True)
class Racing:
    first: int
    round: int
    most: int

    def text(self) -> str:
        return (f"racing: {self.first} repeats each, then {self.round} more per round to the "
                f"candidates still racing, up to {self.most}")


def load_racing(path: Path, raw: Any, repeats: int) -> Optional[Racing]:
    """A plan's ``racing:`` (None: every candidate takes ``base.repeats``)."""
    if raw is None or raw is False:
        return None
    if raw is True:
        raw = {}
    if not isinstance(raw, dict):
        raise MatrixError(f"{path}: racing: expected a mapping (first, round, most) or true")
    unknown = set(raw) - {"first", "round", "most"}
    if unknown:
        raise MatrixError(f"{path}: racing: unknown key(s) {', '.join(sorted(unknown))}; "
                          "expected first, round, most")
    try:
        racing = Racing(int(raw.get("first", MIN_FIRST)), int(raw.get("round", 2)),
                        int(raw.get("most", repeats)))
    except (TypeError, ValueError) as exc:
        raise MatrixError(f"{path}: racing: {exc}") from None
    if racing.first < MIN_FIRST:
        raise MatrixError(f"{path}: racing: first {racing.first}: below {MIN_FIRST} repeats a "
                          "rank test can never call a difference (Mann-Whitney's smallest p at "
                          "3 against 3 is 0.1)")
    if racing.round < 1 or racing.most < racing.first:
        raise MatrixError(f"{path}: racing: expected round >= 1 and most >= first")
    return racing


@dataclass
class Round:
    repeats: int                      # every candidate racing has this many repeats now
    racing: List[Hashable]            # before the round's drops
    dropped: List[Hashable] = field(default_factory=list)
    runs: int = 0                     # launched in this round


@dataclass
class Race:
    rounds: List[Round] = field(default_factory=list)
    stopped: str = ""                 # why the race ended

    @property
    def runs(self) -> int:
        return sum(r.runs for r in self.rounds)

    @property
    def left(self) -> List[Hashable]:
        last = self.rounds[-1]
        return [c for c in last.racing if c not in last.dropped] if self.rounds else []


def drops(data: rule.Measurements, incumbent: Hashable, decision: rule.Rule) -> List[Hashable]:
    """The candidates (never the incumbent) worse than the best at every size they were
    measured at: at each size the candidate with the lowest median is that size's best, every
    other is compared with it by the step's rule, and all these comparisons are one family,
    corrected together. A candidate best at some size is never dropped."""
    pairs: List[Tuple[Hashable, Size]] = []
    shifts: List[stats.Shift] = []
    sizes = sorted({s for by in data.values() for s in by}, key=lambda s: -1 if s is None else s)
    for size in sizes:
        present = {c: v[size] for c, v in data.items() if v.get(size)}
        present = {c: v for c, v in present.items() if stats.median(v) > 0}
        if len(present) < 2:
            continue
        best = min(present, key=lambda c: stats.median(present[c]))
        for cand, samples in present.items():
            if cand != best:
                pairs.append((cand, size))
                shifts.append(stats.shift(present[best], samples, lower_is_better=True,
                                          interval=False))
    measured: Dict[Hashable, int] = {c: sum(1 for s in sizes if by.get(s)) for c, by in data.items()}
    worse: Dict[Hashable, int] = {}
    for (cand, _), shift, p in zip(pairs, shifts, stats.corrected(shifts, decision.correction)):
        verdict = stats.call(shift.ratio, p, shift.testable, decision.threshold, decision.alpha)
        worse[cand] = worse.get(cand, 0) + (verdict == stats.WORSE)
    return [c for c in data if c != incumbent and measured[c] and worse.get(c) == measured[c]]


def race(candidates: List[Hashable], incumbent: Hashable, plan: Racing, decision: rule.Rule,
         run: Callable[[List[Hashable], int], int],
         data_at: Callable[[int], rule.Measurements],
         budget: Optional[int] = None, launched: Callable[[], int] = lambda: 0) -> Race:
    """Run the race: ``run(candidates, repeat)`` launches one repeat of those candidates (the
    runs it launched: 0 for ones done before, a resumed step), ``data_at(repeats)`` reads the
    measurements of repeats 1 to ``repeats``. ``budget``: the step's runs at most, counted by
    ``launched()`` (every run of the step so far, a resumed one's too). The rounds are decided
    on the repeats they cover alone, so a resumed race drops what the first one dropped."""
    found = Race()
    racing = list(candidates)
    repeats = 0
    target = plan.first
    while True:
        cost = len(racing) * (target - repeats)
        if budget is not None and found.rounds and launched() + cost > budget:
            found.stopped = f"budget of {budget} runs reached"
            break
        this = Round(target, list(racing))
        for repeat in range(repeats + 1, target + 1):
            this.runs += run(racing, repeat)
        repeats = target
        data = {c: v for c, v in data_at(repeats).items() if c in racing}
        if incumbent in data and len(data) > 1:
            this.dropped = drops(data, incumbent, decision)
            racing = [c for c in racing if c not in this.dropped]
        found.rounds.append(this)
        if repeats >= plan.most:
            found.stopped = f"{plan.most} repeats reached"
            break
        if len(racing) <= 2 and repeats >= 2 * plan.first:
            found.stopped = "one candidate left against the incumbent"
            break
        if len(racing) <= 1:
            found.stopped = "only the incumbent left"
            break
        target = min(plan.most, repeats + plan.round)
    return found


def race_dict(found: Race, named: Callable[[Hashable], Dict[str, Any]],
              plan: Racing, budget: Optional[int]) -> Dict[str, Any]:
    """What ``decision.json`` keeps of a race: each round's repeats, the candidates racing,
    those dropped (and against which best), the runs it launched, and why it stopped."""
    return {"plan": {"first": plan.first, "round": plan.round, "most": plan.most},
            "budget": budget, "stopped": found.stopped, "runs": found.runs,
            "rounds": [{"repeats": r.repeats, "racing": len(r.racing), "runs": r.runs,
                        "dropped": [named(c) for c in r.dropped]} for r in found.rounds],
            "left": [named(c) for c in found.left]}
