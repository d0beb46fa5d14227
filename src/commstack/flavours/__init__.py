"""One module per MPI flavour; this registry is how the rest of commstack finds them.

Adding a flavour: write ``<name>.py`` with a ``Flavour`` subclass and ``FLAVOUR = ...``, list it
in ``_MODULES`` below, and add its rows to tests/test_flavours.py.
"""

from __future__ import annotations

import importlib
from typing import Dict, List, Tuple

from commstack.flavours.base import (  # noqa: F401  (the package's interface)
    MAPPINGS,
    Flavour,
    FlavourError,
    Launch,
    Placement,
    Request,
    RunFile,
    VersionTool,
)

_MODULES = ("openmpi", "intelmpi", "mpich", "cray_mpich", "gasnet", "smpi")

FLAVOURS: Dict[str, Flavour] = {}
for _module in _MODULES:
    _flavour = importlib.import_module(f"commstack.flavours.{_module}").FLAVOUR
    FLAVOURS[_flavour.name] = _flavour


def names() -> List[str]:
    return list(FLAVOURS)


def get(name: str) -> Flavour:
    try:
        return FLAVOURS[name]
    except KeyError:
        raise FlavourError(f"unknown MPI flavour {name!r}; known: {', '.join(FLAVOURS)}") from None


def env_families() -> Dict[str, Tuple[str, ...]]:
    """Variable prefix -> the flavours whose libraries read it, in the flavours' order."""
    families: Dict[str, List[str]] = {}
    for flavour in FLAVOURS.values():
        for prefix in flavour.env_families:
            families.setdefault(prefix, []).append(flavour.name)
    return {prefix: tuple(names) for prefix, names in families.items()}


def option_prefixes() -> Dict[str, str]:
    """Parameter prefix (``smpi``) -> the flavour whose own settings it names."""
    return {f.option_prefix: f.name for f in FLAVOURS.values() if f.option_prefix}


def conduits() -> List[str]:
    return [c for f in FLAVOURS.values() for c in f.conduits]
