"""A step's incumbent carried from the step before (a plan's ``carry_incumbent: true``).

After a step, the settings held are its winner's; the next step's incumbent is that very setting,
and the step before measured it. Carried, it is not run again: the step launches its challengers
only, and decides on them against the incumbent's runs where they were made. A raced step before
may have left it fewer repeats (a race that ended with the incumbent alone): a raced step then
runs the incumbent's missing repeats itself, and a step without racing runs it in full. A step of k
candidates then costs k - 1 candidates' runs: 2 of 12 candidates in a mapping, threshold and
algorithm plan.

What it costs: the incumbent's runs are older than the challengers', no longer interleaved with
them, so a machine that drifts between two steps moves the comparison (a machine that got
faster makes challengers look better). Off by default; the decision says where its incumbent's
runs come from (``incumbent_from``).

Carried only when the runs are the same point: every record used has the parameters the step
would give its incumbent (base, case, settings held and the incumbent's values), else the
incumbent runs in the step as without carrying.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from commstack.store.campaign import Campaign


@dataclass(frozen=True)
class Carried:
    """Where the settings held so far were measured: a step's campaign and its points."""

    step: str
    directory: Path
    points: FrozenSet[str]
    runs: int  # ok records of those points
    repeats: int  # the repeats they cover (1 to this): a raced step's winner may have fewer

    def as_dict(self) -> Dict[str, Any]:
        return {"step": self.step, "runs": self.runs, "repeats": self.repeats}


def _same(value: Any, expected: Any) -> bool:
    return value == expected or str(value) == str(expected)


def measured(step: str, directory: Path, params: Dict[str, Any]) -> Optional[Carried]:
    """The points of a step's campaign whose every ok record has ``params`` (the full setting
    a later step would launch as its incumbent); None when there is none."""
    points: Dict[str, int] = {}
    repeats = set()
    for record in Campaign(directory).records():
        if record.ok and all(_same(record.params.get(k), v) for k, v in params.items()):
            points[record.point_id] = points.get(record.point_id, 0) + 1
            repeats.add(record.repeat)
    if not points:
        return None
    covered = next(k for k in range(len(repeats) + 1) if k + 1 not in repeats)
    return Carried(step, directory, frozenset(points), sum(points.values()), covered)


def challengers(candidates: List[Dict[str, Any]], incumbent: Dict[str, Any],
                carried: Optional[Carried], repeats: int) -> List[Dict[str, Any]]:
    """The candidates a step's campaign holds: all but a carried incumbent that covers the
    step's ``repeats`` (one that covers fewer is there for the repeats it lacks)."""
    if carried is None or carried.repeats < repeats:
        return list(candidates)
    return [c for c in candidates if c != incumbent]


def carried_incumbent(carry: bool, source: Optional[Tuple[str, Path]], incumbent: Dict[str, Any],
                      candidates: List[Dict[str, Any]], params: Dict[str, Any]
                      ) -> Optional[Carried]:
    """The incumbent's runs in the step before (``source``: its name and campaign), when the
    plan carries incumbents (``carry``), the step has a challenger and the incumbent was run
    there as this step would run it (``params``: its full setting)."""
    if not carry or source is None or incumbent not in candidates or len(candidates) < 2:
        return None
    return measured(source[0], source[1], params)
