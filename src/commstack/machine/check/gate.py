"""The cheap checks `commstack run` and `submit` run once per invocation, before launching."""

from __future__ import annotations

import sys
from typing import Optional

from commstack.machine import Machine, MachineError
from commstack.machine.check.checks import check_machine


def refuse_on_contradiction(machine: Optional[Machine], command: str) -> None:
    """Read the node layout and the srun plugins machine.yaml relies on; raise MachineError
    (exit 2, nothing launched) on a contradiction. Not on this machine: a warning only. A
    machine.yaml that names no particular machine (no verify.this_machine, like `local`: any
    workstation) gets a warning too: its node block describes a reference box, and every record
    carries the real topology (lstopo)."""
    if machine is None:
        return
    outcome = check_machine(machine, cheap_only=True)
    if not outcome.checks:
        return
    if not outcome.this_machine:
        print(f"commstack {command}: warning: this host does not look like {machine.name} "
              f"({outcome.identity}); its machine.yaml facts were not checked", file=sys.stderr)
        return
    bad = outcome.contradictions
    if bad and not (machine.facts.get("verify") or {}).get("this_machine"):
        # A generic machine (`local`: any workstation) describes a reference box; every record
        # carries the real topology (lstopo), and `machine check` shows the differences.
        return
    if bad:  # agreement (and facts this host cannot read) pass silently: see `machine check`
        raise MachineError(
            f"{machine.path}: contradicted by this machine, nothing launched:\n"
            + "\n".join(f"  ✘ {c.fact}: {c.how}" for c in bad)
            + f"\nfix machine.yaml (see `commstack machine check {machine.path}`) or pass "
              "--no-machine-check")
