"""Which parameter values are a stack's own defaults (the settings a tuning must beat, and the
line a plot of many settings always keeps)."""

from __future__ import annotations

from typing import Any, Dict, Optional

KNOWN_DEFAULTS: Dict[str, Any] = {"UCX_TLS": "all", "UCX_RNDV_THRESH": "auto",
                                  "UCX_ZCOPY_THRESH": "auto", "mca.coll_hcoll_enable": 1,
                                  "mca.coll_ucc_enable": 0}
DEFAULT_WORDS = {"", "auto", "default"}
DEFAULT_BY_PREFIX = {"I_MPI_ADJUST_": "0"}  # algorithm 0: Intel MPI's own choice


def is_default(name: str, value: Any, defaults: Optional[Dict[str, str]] = None) -> bool:
    defaults = defaults or {}
    if name in defaults:
        return str(value) == str(defaults[name])
    if name in KNOWN_DEFAULTS:
        return str(value) == str(KNOWN_DEFAULTS[name])
    if any(name.startswith(p) and str(value) == v for p, v in DEFAULT_BY_PREFIX.items()):
        return True
    return str(value).strip().lower() in DEFAULT_WORDS


def has_default(name: str) -> bool:
    """Whether some value of ``name`` is known to be the default (``stack`` has none)."""
    return name in KNOWN_DEFAULTS or any(name.startswith(p) for p in DEFAULT_BY_PREFIX)
