"""Column headers of benchmark tables as row keys, shared by the table parsers."""

from __future__ import annotations

import re
from typing import Iterable, List, Mapping


def column_keys(labels: Iterable[str], known: Mapping[str, str], number: int,
                notes: List[str]) -> List[str]:
    """Each label's row key; an unknown label gets a snake_case key and a note naming the line."""
    keys = []
    for label in labels:
        key = known.get(label)
        if key is None:
            key = re.sub(r"[^0-9a-z]+", "_", label.lower()).strip("_")
            notes.append(f"line {number}: unknown column {label!r} stored as {key!r}")
        keys.append(key)
    return keys
