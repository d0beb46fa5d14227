"""Samples as integer codes: each sample's point, row key (with the keys' names) and metric as
its position among the distinct ones, in order of first appearance (as pandas' ``factorize``
numbers them). The summary and the report's sections group millions of samples by these codes
with NumPy instead of hashing a Python object per sample and column each time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

# 4 bytes a code (a report of 100,000 records keeps four per sample, 2.4 million samples):
# widen to int64 before combining codes into one.
CODE = np.int32


@dataclass
class Coded:
    """Every sample's codes, value and whether its run was oversubscribed (``value`` reads the
    samples' own buffer when it is one: an ``array('d')`` then takes no more samples)."""

    point: np.ndarray    # into point_names (CODE)
    point_names: List[str]
    names: np.ndarray    # into names_seen: the row keys' names
    names_seen: List[Tuple[str, ...]]
    key: np.ndarray      # into keys: the row keys' values
    keys: List[tuple]
    metric: np.ndarray   # into metric_names
    metric_names: List[str]
    value: np.ndarray
    over: np.ndarray

    @classmethod
    def of(cls, point_ids: Sequence[str], key_names: Sequence[Tuple[str, ...]],
           keys: Sequence[tuple], metrics: Sequence[str], values: Sequence[float],
           oversubscribed: Sequence[bool]) -> "Coded":
        return cls(*codes(point_ids), *codes(key_names), *codes(keys), *codes(metrics),
                   np.asarray(values, dtype=float), np.asarray(oversubscribed, dtype=bool))

    def take(self, pick: np.ndarray) -> "Coded":
        """The samples at positions ``pick`` (the distinct lists stay whole)."""
        return Coded(self.point[pick], self.point_names, self.names[pick], self.names_seen,
                     self.key[pick], self.keys, self.metric[pick], self.metric_names,
                     self.value[pick], self.over[pick])


def codes(column: Sequence) -> Tuple[np.ndarray, list]:
    """Each entry's position among the distinct entries (in order of first appearance), and
    those entries."""
    seen: Dict[object, int] = {}
    found = np.fromiter((seen.setdefault(x, len(seen)) for x in column), dtype=CODE,
                        count=len(column))
    return found, list(seen)


def renumber(found: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Codes numbered again by first appearance in ``found`` (a part of the samples); and per
    new code, the code it was."""
    was, first, inverse = np.unique(found, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    number = np.empty(len(was), dtype=np.int64)
    number[order] = np.arange(len(was))
    return number[inverse.ravel()], was[order]


def objects(items: Sequence) -> np.ndarray:
    """``items`` as a NumPy object array (tuples kept whole), to index by codes."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out
