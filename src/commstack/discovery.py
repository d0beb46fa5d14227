"""Finding the modules of a family package (benchmarks, flavours): a new file is picked up by
itself, in name order, and a name registered twice is refused."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Dict, Iterable, Iterator, TypeVar

T = TypeVar("T")


def modules(package: str, path: Iterable[str]) -> Iterator[ModuleType]:
    """Every module of ``package`` (found on its ``__path__``), imported, in name order."""
    for info in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        yield importlib.import_module(f"{package}.{info.name}")


def add_once(found: Dict[str, T], name: str, item: T, what: str, module: ModuleType) -> None:
    if name in found:
        raise RuntimeError(f"{what} {name!r} registered twice (again in {module.__name__})")
    found[name] = item
