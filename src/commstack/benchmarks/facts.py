"""What the rest of commstack asks a benchmark family beyond running and parsing it: the
collectives its rows time (report/guidelines) and how its raw outputs made elsewhere are
recognised and described (importers/raw). A family sets them on its ``Benchmark``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Pattern, Set


@dataclass(frozen=True)
class Collectives:
    """How a family's rows time MPI collectives, for the guidelines' checks (report/guidelines):
    rows of families without one are not collective timings."""

    label: str  # the family for people: "IMB"
    # Parameters that only choose what is measured (which collective, sizes, repetitions): two
    # points that differ in them alone are one setting.
    selecting: FrozenSet[str]
    # A row's ``benchmark`` -> the collective it times, one spelling for all families ("Bcast");
    # None: not a blocking collective.
    name_of: Callable[[str], Optional[str]]
    # The collectives a run's parameters ask for; None: the benchmark's default list (any).
    asked: Callable[[Mapping[str, Any]], Optional[Set[str]]]
    # A run's stdout -> its per-call samples {(call, bytes): [seconds, ...]}, where the family
    # prints them (ReproMPI); None: the rows' own figures.
    per_call: Optional[Callable[[str], Any]] = None


@dataclass
class RawRun:
    """What one raw output (made outside commstack) says of its run, for ``commstack import``."""

    benchmark: str
    params: Dict[str, Any] = field(default_factory=dict)
    ranks: Optional[int] = None
    notes: List[str] = field(default_factory=list)
    # Why the file is a point of its own (its options are not printed); None: it printed them.
    own_point: Optional[str] = None


@dataclass(frozen=True)
class RawOutputs:
    """How a family's raw outputs are recognised and described (importers/raw)."""

    # A line only the family prints (banner, title, header, a failure it reports), matched at
    # the start of a line once launcher prefixes and indentation are removed.
    signature: Pattern
    signature_help: str  # what is missing when no line matches, for the skip message
    # (stdout, its parsed output or None, the parser's notes) -> the run's description.
    describe: Callable[[str, Optional[Any], List[str]], RawRun]
