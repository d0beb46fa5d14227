"""Finds the benchmark family modules of this package; the rest of commstack asks it about them.

A matrix names a benchmark (``benchmark: imb-mpi1``); this registry says how to launch it, how to
read what it printed, which row key is its result and which keys tell its rows apart. Every
module of ``commstack.benchmarks`` that defines ``BENCHMARKS`` (a list of
:class:`~commstack.benchmarks.base.Benchmark`) is a family: a new file is picked up by itself.
"""

from __future__ import annotations

import functools
from typing import Callable, Dict, List, Mapping, Optional, Tuple

import commstack.benchmarks as _package
from commstack import discovery
from commstack.benchmarks.base import (  # noqa: F401  (the package's interface)
    Benchmark,
    FigureOfMerit,
    Option,
    Output,
    ParseError,
)
from commstack.benchmarks.facts import Collectives


def _discover() -> Dict[str, Benchmark]:
    found: Dict[str, Benchmark] = {}
    for module in discovery.modules(_package.__name__, _package.__path__):
        for bench in getattr(module, "BENCHMARKS", ()):
            discovery.add_once(found, bench.name, bench, "benchmark", module)
    return found


BENCHMARKS: Dict[str, Benchmark] = _discover()


def _figures_by_key() -> Dict[str, FigureOfMerit]:
    by_key: Dict[str, FigureOfMerit] = {}
    for bench in BENCHMARKS.values():
        for figure in bench.figures:
            if by_key.setdefault(figure.key, figure) != figure:
                raise RuntimeError(f"figure of merit {figure.key!r} defined twice, differently: "
                                   f"{by_key[figure.key]} and {figure} ({bench.name})")
    return by_key


_FIGURES = _figures_by_key()


# Output format -> its family's first benchmark: asked per record by the guidelines and imports.
_BY_FORMAT: Dict[str, Benchmark] = {}
for _bench in BENCHMARKS.values():
    _BY_FORMAT.setdefault(_bench.format, _bench)


def names() -> List[str]:
    return list(BENCHMARKS)


def get(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None


def formats() -> List[str]:
    """Output format names (``commstack parse --benchmark``), one per family parser."""
    return list(_BY_FORMAT)


def family(format: str) -> Optional[Benchmark]:
    """The first benchmark of output format ``format`` (what a family says of itself is the same
    on each of its benchmarks), or None."""
    return _BY_FORMAT.get(format)


def import_formats() -> List[str]:
    """The formats whose raw outputs `commstack import --benchmark` reads."""
    return [f for f in formats() if family(f).raw_outputs is not None]  # type: ignore[union-attr]


def collectives(benchmark: Optional[str]) -> Optional[Tuple[str, Collectives]]:
    """(format, how its rows time collectives) of a benchmark whose rows are collective timings,
    else None."""
    spec = BENCHMARKS.get(benchmark or "")
    if spec is None or spec.collectives is None:
        return None
    return spec.format, spec.collectives


def parser_for(name: str) -> Callable[[str], Output]:
    """The parse function for a benchmark name ('imb-mpi1') or an output format ('imb')."""
    found = BENCHMARKS.get(name) or _BY_FORMAT.get(name)
    if found is not None:
        return found.parse
    raise KeyError(f"unknown benchmark or output format {name!r}; known formats: "
                   f"{', '.join(formats())}; benchmarks: {', '.join(BENCHMARKS)}")


def metric_of(row: Mapping[str, object], benchmark: Optional[str]) -> Optional[FigureOfMerit]:
    """The figure of merit of a result row of ``benchmark``: the first of the benchmark's figures
    present in the row. A record of a benchmark no module defines any more is read with every
    family's figures, families in name order."""
    if benchmark in BENCHMARKS:
        return BENCHMARKS[benchmark].metric_of(row)
    return next((f for b in BENCHMARKS.values() if (f := b.metric_of(row))), None)


def row_keys(benchmark: Optional[str]) -> Tuple[str, ...]:
    """Row keys that tell the result rows of one run of ``benchmark`` apart (all families'
    keys for an unknown benchmark)."""
    if benchmark in BENCHMARKS:
        return BENCHMARKS[benchmark].row_keys
    return all_row_keys()


def row_reading(benchmark: Optional[str]) -> Tuple[Tuple[str, ...],
                                                   Callable[[Mapping[str, object]],
                                                            Optional[FigureOfMerit]]]:
    """What a reader of ``benchmark``'s rows asks, at once: the keys that tell them apart and the
    figure of merit of a row."""
    return row_keys(benchmark), functools.partial(metric_of, benchmark=benchmark)


def all_row_keys() -> Tuple[str, ...]:
    """Every family's row keys: columns that identify a row, not a parameter of the point."""
    return tuple(dict.fromkeys(k for b in BENCHMARKS.values() for k in b.row_keys))


def figure(metric: str) -> Optional[FigureOfMerit]:
    """The figure of merit named ``metric`` (a row key), if a family defines one."""
    return _FIGURES.get(metric)


def label(metric: str) -> str:
    """How tables and axes name ``metric``: its figure's label, else the key itself."""
    found = _FIGURES.get(metric)
    return found.label if found else metric


def lower_is_better(metric: str, default: bool = True) -> bool:
    found = _FIGURES.get(metric)
    return found.lower_is_better if found else default
