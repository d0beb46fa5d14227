"""One case of a plan being tuned: what each of its campaigns is made with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from commstack.machine import Machine
from commstack.schedulers.allocation import Allocation
from commstack.tune.plan import TunePlan
from commstack.tune.state import TuneState


@dataclass(frozen=True)
class CaseRun:
    plan: TunePlan
    case: Dict[str, Any]
    directory: Path  # the case's folder: a campaign per step, verify/, tuned/
    machine: Optional[Machine]
    allocation: Optional[Allocation]
    log: Callable[[str], None]
    retry_failed: bool = False  # steps not decided yet run their failed runs again
    budget: Optional[int] = None  # the runs each raced step launches at most

    def state(self, step: str, index: int, incumbent: Dict[str, Any]) -> TuneState:
        """What the campaign of step ``step``, the ``index``-th, says of the tuning: its
        candidates must beat ``incumbent``."""
        return TuneState(str(self.plan.path), self.case, step, index,
                         [s.name for s in self.plan.steps_for(self.case)], list(incumbent),
                         incumbent, self.plan.decision)
