"""The schedulers: every module of this package that defines ``SCHEDULER`` (a ``Scheduler``) is
one, found by itself in name order (as flavours are), and which one a launch is under."""

from __future__ import annotations

from typing import Dict, List, Optional

from commstack import discovery
from commstack.machine import Machine
from commstack.schedulers.allocation import Allocation
from commstack.schedulers.base import Scheduler

_FOUND: Dict[str, Scheduler] = {}


def schedulers() -> Dict[str, Scheduler]:
    """Name -> scheduler (found on first use: the modules import the launch floor)."""
    if not _FOUND:
        import commstack.schedulers as package

        for module in discovery.modules(package.__name__, package.__path__):
            scheduler = getattr(module, "SCHEDULER", None)
            if scheduler is not None:  # else a shared or helper module (base, slurm_step, ...)
                discovery.add_once(_FOUND, scheduler.name, scheduler, "scheduler", module)
    return _FOUND


def names() -> List[str]:
    return list(schedulers())


def step_launchers() -> List[str]:
    """The commands that mean "a step of the allocation" in machine.yaml's launchers (srun,
    flux): never a launcher outside one."""
    return [s.step_launcher for s in schedulers().values() if s.step_launcher]


def default() -> Scheduler:
    return next(s for s in schedulers().values() if s.default)


def for_machine(machine: Optional[Machine]) -> Scheduler:
    """The machine's ``scheduler.kind`` where it is a scheduler, else the default one."""
    kind = (machine.scheduler.get("kind") if machine else None) or ""
    return schedulers().get(kind) or default()


def of(allocation: Optional[Allocation], machine: Optional[Machine] = None) -> Scheduler:
    """The scheduler of a step of ``allocation``: the allocation's own, else the machine's."""
    found = schedulers().get(allocation.scheduler or "") if allocation is not None else None
    return found or for_machine(machine)


def current_allocation() -> Optional[Allocation]:
    """The allocation this process runs in, under whichever scheduler, or None."""
    for scheduler in schedulers().values():
        allocation = scheduler.allocation()
        if allocation is not None:
            return allocation
    return None
