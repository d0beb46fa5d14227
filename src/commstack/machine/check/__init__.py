"""`commstack machine check`: read the machine itself and compare it with machine.yaml and
packages.yaml, fact by fact (✔ agrees, ✘ contradicts, ? could not be read here)."""

from commstack.machine.check.checks import all_specs, check_machine
from commstack.machine.check.gate import refuse_on_contradiction
from commstack.machine.check.result import (
                                            CONTRADICTION,
                                            EXIT_CONTRADICTION,
                                            EXIT_NOT_THIS_MACHINE,
                                            EXIT_OK,
                                            NOT_HERE,
                                            OK,
                                            UNKNOWN,
                                            Check,
                                            Outcome,
)

__all__ = ["all_specs", "check_machine", "refuse_on_contradiction", "Check", "Outcome", "OK",
           "CONTRADICTION", "UNKNOWN", "NOT_HERE", "EXIT_OK", "EXIT_CONTRADICTION",
           "EXIT_NOT_THIS_MACHINE"]
