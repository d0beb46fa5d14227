"""What every benchmark family module defines: options, figures of merit, one output shape.

A family module (``imb.py``, ``osu.py``, ...) holds its parser and registers ``Benchmark``
instances in ``BENCHMARKS``; ``commstack.benchmarks.registry`` finds the modules by itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from commstack.benchmarks.facts import Collectives, RawOutputs
from commstack.parse_error import ParseError  # noqa: F401 (the family modules' interface)


@dataclass
class Output:
    """What a parser read from one run, the same shape for every family.

    ``rows``: one dict per result row (cartex: one row). ``notes``: what the parser noticed
    but could still read past (unknown columns, launcher chatter, IMB's "Invalid benchmark
    name"). ``build_config``: the build the program printed (GASNet-EX's config string), if any.
    ``meta``: facts of the whole run that are not rows (IMB suite and version, OSU columns, ...).
    """

    rows: List[dict] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    build_config: Optional[str] = None
    meta: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FigureOfMerit:
    """A row key that can be "the" result of a row, e.g. ``t_avg_us``."""

    key: str
    unit: str
    label: str  # as a table or axis shows it, e.g. "t_avg [usec]"
    lower_is_better: bool = True


@dataclass(frozen=True)
class Option:
    """A benchmark argument that a matrix parameter maps to.

    kind:
      ``value``  -> ``flag VALUE``
      ``equals`` -> ``flag=VALUE`` (a list joined by commas; ReproMPI's options); an empty
                    value leaves the option out (a zip axis on which it does not apply)
      ``flag``   -> ``flag`` when the value is true, nothing when false
      ``triple`` -> ``flag X Y Z`` (value given as "X Y Z", "XxYxZ" or a list of 3)
      ``names``  -> positional words (IMB benchmark list: "PingPong Allreduce" or a list)
      ``trailing`` -> a positional word after every option (GASNet tests: iters maxsz sections)
      ``file``   -> ``flag PATH``: the value (a list, or words split at commas and spaces) is
                    written one word per line to ``file`` in the run's folder (IMB's
                    ``-msglen``; :meth:`Benchmark.files`)
    """

    flag: str
    kind: str = "value"
    help: str = ""
    # Every whole number in the value at most this (a count, a process number, a size exponent:
    # what no machine has is refused before anything is launched); None: not checked.
    most: Optional[int] = None
    file: str = ""  # kind ``file``: the file's name in the run's folder

    @property
    def variable(self) -> str:
        """Kind ``file``: the variable that names the written file (``${...}`` in argv)."""
        return "COMMSTACK_FILE_" + re.sub(r"\W", "_", self.file).upper()

    def render(self, value: Any) -> List[str]:
        if self.most is not None:
            self._check_most(value)
        if self.kind == "file":
            if not _words(value):
                raise ValueError(f"{self.flag}: expected a list of values, got {value!r}")
            return [self.flag, "${%s}" % self.variable]
        if self.kind == "flag":
            return [self.flag] if _truthy(value) else []
        if self.kind == "equals":
            if value == "":
                return []
            joined = ",".join(_words(value)) if isinstance(value, (list, tuple)) else _scalar(value)
            return [f"{self.flag}={joined}"]
        if self.kind in ("names", "trailing"):
            return _words(value)
        if self.kind == "triple":
            parts = _words(str(value).replace("x", " ")) if not isinstance(value, list) else [
                str(v) for v in value
            ]
            if len(parts) != 3 or not all(p.lstrip("-").isdigit() for p in parts):
                raise ValueError(f"expected three integers like '2 2 1', got {value!r}")
            return [self.flag, *parts]
        return [self.flag, _scalar(value)]


    def _check_most(self, value: Any) -> None:
        text = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        for token in re.findall(r"\d+", text):
            if len(token) > 20 or int(token) > self.most:  # type: ignore[operator]
                raise ValueError(f"expected whole numbers of at most {self.most} (read {token[:24]}"
                                 f"{'...' if len(token) > 24 else ''})")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark a matrix can name: how to run it and how to read what it printed."""

    name: str
    executable: str
    format: str  # output format name, as `commstack parse --benchmark` takes it
    parse: Callable[[str], Output]
    options: Mapping[str, Option] = field(default_factory=dict)
    # Parser notes that mean the run did not measure what was asked (the run is a failure).
    fatal_notes: Tuple[str, ...] = ()
    # "The" result of a row: the first of these present in it.
    figures: Tuple[FigureOfMerit, ...] = ()
    # Row keys that tell the result rows of one run apart (besides the point).
    row_keys: Tuple[str, ...] = ()
    # A rehearsal's version of a point's options (`commstack rehearse`): the same options, with
    # sizes, iterations and decompositions cut down for `ranks` processes on the test cluster.
    scale_down: Optional[Callable[[Dict[str, Any], int], Dict[str, Any]]] = None
    # A simulated rehearsal's version (`commstack rehearse --simulate`): the same sizes at the
    # machine's own scale, repetitions cut (a simulation repeats a call exactly).
    simulate_down: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None
    collectives: Optional[Collectives] = None  # rows time collectives (the guidelines read them)
    raw_outputs: Optional[RawOutputs] = None  # `commstack import --benchmark <format>` reads them
    # A record's parameters plus dimensions derived so that swept and imported records line up
    # (cartex's toolchain, decomposition, order); None: the parameters alone.
    dimensions: Optional[Callable[[Dict[str, Any], Any], Dict[str, Any]]] = None

    def argv(self, params: Mapping[str, Any]) -> List[str]:
        """Benchmark argv (executable first) for the option parameters in ``params``."""
        exe = str(params.get("executable", self.executable))
        args: List[str] = []
        # Positional names first (IMB reads the benchmark list before options).
        for name, option in self.options.items():
            if option.kind == "names" and name in params:
                args += option.render(params[name])
        for name, option in self.options.items():
            if option.kind not in ("names", "trailing") and name in params:
                args += option.render(params[name])
        for name, option in self.options.items():
            if option.kind == "trailing" and name in params:
                args += option.render(params[name])
        return [exe, *args]

    def files(self, params: Mapping[str, Any]) -> List[Tuple[str, str, str]]:
        """The files the options of kind ``file`` in ``params`` write into the run's folder:
        (name, text, variable)."""
        return [(option.file, "".join(f"{word}\n" for word in _words(params[name])),
                 option.variable)
                for name, option in self.options.items()
                if option.kind == "file" and name in params]

    def fatal(self, output: Output) -> List[str]:
        """The notes of ``output`` that mean the run did not run what was asked."""
        return [n for n in output.notes if n.startswith(self.fatal_notes)] if self.fatal_notes else []

    def metric_of(self, row: Mapping[str, object]) -> Optional[FigureOfMerit]:
        """The first figure of merit with a number in ``row``."""
        return next((f for f in self.figures if isinstance(row.get(f.key), (int, float))), None)


def at_most(params: Dict[str, Any], name: str, most: float) -> None:
    """``params[name]`` set to ``most`` when absent, lowered to it when a larger number (a
    value still naming a plan's template, ``{x}``, stays)."""
    if name not in params:
        params[name] = most
    elif "{" not in str(params[name]):
        capped(params, name, most)


def capped(params: Dict[str, Any], name: str, most: float) -> None:
    """``params[name]`` lowered to ``most`` (a number option, possibly with a unit letter as
    in IMB's ``-mem 2.3G``, which stays; absent or smaller: unchanged)."""
    if name not in params:
        return
    text = str(params[name])
    unit = text[-1] if text[-1:].isalpha() else ""
    number = float(text[:-1] if unit else text)
    if number > most:
        params[name] = f"{_plain(most)}{unit}" if unit else _plain(most)


def _plain(number: float) -> "int | float":
    return int(number) if float(number).is_integer() else number


def triple(value: Any) -> List[int]:
    """'4 1 1' or [4, 1, 1] -> [4, 1, 1]."""
    parts = value.split() if isinstance(value, str) else list(value)
    return [int(x) for x in parts]


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y")
    return bool(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _words(value: Any) -> List[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return str(value).replace(",", " ").split()
