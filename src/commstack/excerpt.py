"""Short excerpts of values for error messages: an error names a bad value, never prints it whole
(a YAML file can alias a list into millions of items)."""

from __future__ import annotations

import reprlib
from typing import Any

LIMIT = 200

_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlong = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 4


def excerpt(value: Any, limit: int = LIMIT) -> str:
    """repr(value), cut to about ``limit`` characters; a cut list or mapping says its size."""
    text = _REPR.repr(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    cut_short = "..." in text or "…" in text
    if isinstance(value, (list, tuple, dict, set, frozenset)) and cut_short:
        text += f" ({len(value)} item{'s' * (len(value) != 1)})"
    elif isinstance(value, str) and cut_short and len(value) > _REPR.maxstring:
        text += f" ({len(value)} characters)"
    return text


def cut(text: str, limit: int = LIMIT) -> str:
    """``text`` itself, or its start and how long it is."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
