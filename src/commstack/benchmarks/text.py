"""Text helpers the family parsers share: launcher prefixes and column headers."""

from __future__ import annotations

import re
from typing import Iterable, List, Mapping

# "Sun Nov 22 07:20:55 2026[1,0]<stdout>:" (Open MPI --tag-output [--timestamp-output])
_OMPI_TAG = re.compile(r"^.*?\[\d+,\d+\]<std(?:out|err)>:")
# "[0] " (hydra -l, MPICH -prepend-rank). Not UCX's "[1795329961.243038]" (has a dot).
# Intel MPI's hydra labels every write(), so a tag can also appear inside a line:
# "[0] #[0] -[0] -[0] ---..." or "[0] # Benchmarking Sendrecv [0] ".
_RANK_TAG = re.compile(r"\[\d+\] ?")


# What Intel MPI prints on stdout with I_MPI_DEBUG > 0 (version, tuning file, pin table), after
# strip_launcher_prefix has removed its "[0] " rank tag.
INTEL_MPI_STARTUP = re.compile(r"^MPI startup\(\)")


def strip_launcher_prefix(raw: str) -> str:
    """Remove an Open MPI ``--tag-output`` or hydra ``-l`` prefix and trailing blanks."""
    line = raw.rstrip()
    tagged = _OMPI_TAG.match(line)
    if tagged:
        return line[tagged.end():].rstrip()
    if _RANK_TAG.match(line):
        return _RANK_TAG.sub("", line).rstrip()
    return line


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


def printed_lines(text: str) -> List[str]:
    """The lines of ``text`` without launcher prefixes and indentation (what a family's raw-output
    signature and description read)."""
    return [strip_launcher_prefix(line).strip() for line in text.splitlines()]
