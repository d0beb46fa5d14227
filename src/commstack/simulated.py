"""Simulated, not measured (issue 36, "Honesty"): what every reader of records says about a
simulated run (a flavour such as SimGrid SMPI, whose ranks and nodes are a simulated machine's
and whose every time is the simulation's).

A record's ``simulation`` (``commstack.store.record``) names the simulator, its version, the
platform (the machine and node type simulated) and the platform's model in one line, with the
facts that are placeholders (``VERIFY``). This module turns those into the words the readers
use: the mark of a simulated column or curve (:data:`MARK`), a side's kind (:class:`Kind`:
simulated on which platforms, measured, or both), the sentence a comparison starts with, and the
report's banner. A campaign's kind is that of its records (commstack.store.campaign_kind); an
imported record (a published table, a raw output made elsewhere) counts as measured.

This module imports no other reader: reports, history, compare, baselines and tuning import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

WORD = "simulated"
MARK = f"({WORD})"  # after a column's, a legend entry's or a setting's name
PLACEHOLDERS = "; placeholders (VERIFY): "


def platform(simulation: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The platform a record's ``simulation`` names (None: measured)."""
    if not simulation:
        return None
    return str(simulation.get("platform") or "an unnamed platform")


def simulator(simulation: Mapping[str, Any]) -> str:
    """``SimGrid SMPI 3.32``: the simulator and its version (as the run's tool printed it)."""
    name = str(simulation.get("simulator") or "a simulator")
    version = simulation.get("version")
    return f"{name} {version}" if version else name


def label(simulation: Mapping[str, Any]) -> str:
    """``simulated by SimGrid SMPI 3.32 on bm-optimized3-36 (node type nps1)``."""
    return f"{WORD} by {simulator(simulation)} on {platform(simulation)}"


def marked(text: str, simulated: Any) -> str:
    """``text (simulated)`` when ``simulated`` (a platform, a record's simulation, True) and
    ``text`` does not say so already."""
    return f"{text} {MARK}" if simulated and not text.endswith(" " + MARK) else text


def unmarked(text: str) -> str:
    """``text`` without a trailing :data:`MARK` (a label's parameters read back)."""
    suffix = " " + MARK
    return text[:-len(suffix)] if text.endswith(suffix) else text


def model_parts(simulation: Mapping[str, Any]) -> Tuple[str, Optional[str]]:
    """(the model line without its placeholders, the placeholders or None)."""
    model = str(simulation.get("model") or "")
    line, sep, placeholders = model.partition(PLACEHOLDERS)
    return line, (placeholders if sep else None)


@dataclass(frozen=True)
class Kind:
    """What a side (a campaign, pooled campaigns, a set of figures) is: simulated on which
    platforms (with the simulators that simulated them), and whether any of it was measured."""

    platforms: Tuple[str, ...] = ()  # sorted platform labels of its simulated records
    measured: bool = False           # some record ran on real nodes (or was imported)
    simulators: Tuple[str, ...] = ()  # ``SimGrid SMPI 3.32``, sorted

    @property
    def simulated(self) -> bool:
        return bool(self.platforms)

    @property
    def mixed(self) -> bool:
        return self.simulated and self.measured

    def describe(self) -> str:
        """``measured``, ``simulated (SimGrid SMPI 3.32, platform P)``, or both."""
        if not self.simulated:
            return "measured"
        text = (f"{WORD} ({', '.join(self.simulators) or 'a simulator'}, platform "
                f"{' and '.join(self.platforms)})")
        return f"partly {text}, partly measured" if self.measured else text

    def short(self) -> str:
        """``measured``, ``simulated on P``, ``simulated on P and measured``."""
        if not self.simulated:
            return "measured"
        text = f"{WORD} on {' and '.join(self.platforms)}"
        return f"{text} and measured" if self.measured else text


MEASURED = Kind(measured=True)


def kind_of(simulations: Iterable[Optional[Mapping[str, Any]]]) -> Kind:
    """The kind of the runs whose ``simulation`` fields (None: measured) are given."""
    platforms, simulators, measured = set(), set(), False
    for simulation in simulations:
        if simulation:
            platforms.add(platform(simulation))
            simulators.add(simulator(simulation))
        else:
            measured = True
    return Kind(tuple(sorted(platforms)), measured, tuple(sorted(simulators)))


def kind_of_records(records: Iterable[Any]) -> Kind:
    return kind_of(getattr(r, "simulation", None) for r in records)


def same_kind(a: Kind, b: Kind) -> bool:
    """Whether one side may stand for the other (a baseline): both measured, or both simulated
    on the same platforms (and, if mixed, both mixed)."""
    return a.platforms == b.platforms and a.measured == b.measured


def comparison_sentence(a: Kind, b: Kind, name_a: str, name_b: str) -> Optional[str]:
    """The one sentence a comparison of A and B starts with when either is simulated (None when
    both are measured): which side is simulated, on which platform, and which measured."""
    if not a.simulated and not b.simulated:
        return None
    if same_kind(a, b) and not a.measured:
        return (f"Both sides are {a.describe()}: A ({name_a}) and B ({name_b}) are simulations, "
                "not measurements; their verdicts are about the simulation, not about a machine.")
    if same_kind(a, b):
        return (f"Both sides are {a.describe()} (A: {name_a}; B: {name_b}): each figure is "
                "compared with one of its own kind, a simulated one only with a simulated one.")
    return (f"Simulated against measured: A ({name_a}) is {a.describe()}; B ({name_b}) is "
            f"{b.describe()}. A difference between them is the simulation's error as much as "
            "any change: no verdict below is a regression or an improvement of a machine.")


def banner(records: Sequence[Any], host: Optional[str] = None) -> List[str]:
    """The lines over a report whose records include simulated ones (none otherwise): the
    simulator and its version, the platform, the model and its placeholders; in a campaign that
    mixes simulated and measured stacks, which stacks are which."""
    runs = [r for r in records if getattr(r, "simulation", None)]
    if not runs:
        return []
    kind = kind_of_records(records)
    simulations: Dict[Tuple[str, str], List[Mapping[str, Any]]] = {}
    for r in runs:
        simulations.setdefault((simulator(r.simulation), platform(r.simulation)), []).append(
            r.simulation)
    what = "; ".join(f"{name} on the platform {where}" for name, where in simulations)
    here = f", nor of this host ({host}), where the simulation ran" if host else ""
    if kind.measured:
        stacks = _stacks(records)
        lines = [f"> **Partly simulated, not all measured.** {_are(stacks[True], 'simulated')} "
                 f"({what}): those numbers were computed by the simulator, not a measurement of "
                 f"that machine{here}. {_are(stacks[False], 'measured')}. Every column, plot "
                 f"line and setting whose numbers are simulated says {MARK}.", ">"]
    else:
        lines = [f"> **Simulated, not measured.** Every number of this report was computed by "
                 f"{what}: a simulation of that machine, not a measurement of it{here}. The "
                 "times are the simulation's model's, as good as its platform's facts; every "
                 f"column, plot line and setting says {MARK}.", ">"]
    models: Dict[str, Optional[str]] = {}
    for group in simulations.values():
        for simulation in group:
            line, placeholders = model_parts(simulation)
            models.setdefault(line, placeholders)
    for line, placeholders in models.items():
        lines.append(f"> - model: {line}")
        if placeholders:
            lines.append(f"> - placeholders (VERIFY: no source states these; the simulation ran "
                         f"with stand-in values): {placeholders}")
    notes = sorted({n for r in runs for n in r.simulation.get("notes") or []})
    lines += [f"> - note: {n}" for n in notes]
    return lines + [""]


def _stacks(records: Sequence[Any]) -> Dict[bool, List[str]]:
    """The stacks whose records are simulated (True) and measured (False)."""
    found: Dict[bool, List[str]] = {True: [], False: []}
    for r in records:
        stack = str(getattr(r, "stack", None) or "(no stack)")
        simulated = bool(getattr(r, "simulation", None))
        if stack not in found[simulated]:
            found[simulated].append(stack)
    return {k: sorted(v) for k, v in found.items()}


def _are(stacks: List[str], what: str) -> str:
    """``The stack `sim` is simulated`` / ``The stacks `a`, `b` were measured``."""
    names = ", ".join(f"`{s}`" for s in stacks)
    if what == "simulated":
        return f"The stack {names} is {what}" if len(stacks) == 1 else \
            f"The stacks {names} are {what}"
    return f"The stack {names} was {what}" if len(stacks) == 1 else \
        f"The stacks {names} were {what}"
