"""One machine check's outcome, and what a set of them means for the exit status."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List

OK = "ok"
CONTRADICTION = "contradiction"
UNKNOWN = "unknown"  # could not be read here: never counted as agreement nor as contradiction
NOT_HERE = "not this machine"

SYMBOLS = {OK: "✔", CONTRADICTION: "✘", UNKNOWN: "?", NOT_HERE: "–"}

EXIT_OK = 0
EXIT_CONTRADICTION = 1
EXIT_NOT_THIS_MACHINE = 5


class Unreadable(Exception):
    """A fact that cannot be read here (tool absent, no permission, outside an allocation)."""


@dataclass
class Check:
    fact: str  # what is checked, e.g. "node.numa_per_socket" or "external openmpi: version"
    declared: Any  # what machine.yaml / packages.yaml says
    measured: Any  # what this machine says (None when not read)
    verdict: str  # OK, CONTRADICTION, UNKNOWN or NOT_HERE
    how: str  # the probe and its source, or why it could not be read / why it disagrees
    source: str = "machine.yaml"  # the file that declares the fact
    why: str = ""  # the prose of verify.checks[].why, when the fact has one
    cheap: bool = False  # run by `commstack run`/`submit` before anything is launched

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.verdict]

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "symbol": self.symbol}


@dataclass
class Outcome:
    machine: str
    this_machine: bool
    identity: str  # why this is (or is not) the machine
    checks: List[Check]

    @property
    def contradictions(self) -> List[Check]:
        return [c for c in self.checks if c.verdict == CONTRADICTION]

    @property
    def exit_code(self) -> int:
        if not self.this_machine:
            return EXIT_NOT_THIS_MACHINE
        return EXIT_CONTRADICTION if self.contradictions else EXIT_OK

    def to_dict(self) -> Dict[str, Any]:
        counts = {v: sum(c.verdict == v for c in self.checks) for v in SYMBOLS}
        return {"machine": self.machine, "this_machine": self.this_machine,
                "identity": self.identity, "exit_code": self.exit_code, "counts": counts,
                "checks": [c.to_dict() for c in self.checks]}
