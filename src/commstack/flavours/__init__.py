"""One module per MPI flavour; this registry is how the rest of commstack finds them.

Every module of this package that defines ``FLAVOUR`` (a :class:`Flavour`) is a flavour, found by
itself in name order (as benchmark families are): adding one is ``<name>.py`` with a ``Flavour``
subclass and ``FLAVOUR = ...``, plus its rows in tests/test_flavours.py.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

from commstack import discovery
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


def _discover() -> Dict[str, Flavour]:
    found: Dict[str, Flavour] = {}
    for module in discovery.modules(__name__, __path__):
        flavour = getattr(module, "FLAVOUR", None)
        if flavour is not None:  # else a helper module (base, ompi_coll_rules, smpi_platform, ...)
            discovery.add_once(found, flavour.name, flavour, "flavour", module)
    return found


FLAVOURS: Dict[str, Flavour] = _discover()


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


def toolchain_of(name: Optional[str]) -> Optional[str]:
    """The short name published tables give runs of flavour ``name`` (Betzy's ``ompi``), if any."""
    flavour = FLAVOURS.get(name or "")
    return flavour.toolchain if flavour is not None else None


def by_toolchain(short: str) -> Optional[str]:
    """The flavour a published table's toolchain name (``impi``) stands for, if any."""
    return next((f.name for f in FLAVOURS.values() if f.toolchain and f.toolchain == short), None)


def simulator() -> Flavour:
    """The flavour that simulates a machine (SimGrid SMPI)."""
    return next(f for f in FLAVOURS.values() if f.simulated)


def spack_externals() -> List[str]:
    """Spack's package of each flavour's MPI that `spack external find` can find on a machine."""
    return [f.spack_packages[0] for f in FLAVOURS.values() if f.spack_packages and not f.simulated]


def external_probes() -> Dict[str, Tuple[str, ...]]:
    """Spack package -> the command whose output names an external installation's version."""
    return {package: f.external_probe for f in FLAVOURS.values() if f.external_probe
            for package in f.spack_packages}


def found_variables() -> Dict[str, Tuple[Callable[[], Optional[str]], str]]:
    """Variable -> (how its value is found on this machine when unset, how to get it when not
    found), over every flavour."""
    return {name: found for f in FLAVOURS.values() for name, found in f.found_variables().items()}
