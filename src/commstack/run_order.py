"""The order in which a sweep runs the points of each repeat.

``order: shuffled`` (the default): every repeat runs the points in an order shuffled anew from
the campaign's seed and the repeat number, so slow drift of the machine and effects of the
previous run (caches, network state, thermal) fall on every point alike instead of biasing the
same neighbours each time (ReproMPI's ``--shuffle-jobs``; the order is recorded, as Hoefler &
Belli's rule 9 asks of every varying factor). Repeat
k starts at the k-th point of a shuffled list (wrapping around), so no point is always the first
of a repeat, also when each repeat is a Slurm job of its own (``--repeat K``).

The order depends only on the seed, the repeat number and the point ids: a resumed campaign, a
shard or a node-count group runs its points in the same relative order, and `commstack plan`
shows it. The seed is ``seed:`` of the matrix, else derived from the campaign name; each record
holds it (``order``).

``order: fixed``: the matrix's order in every repeat (a ``--repeat K`` job starts at the k-th
point), as commstack did before.
"""

from __future__ import annotations

import hashlib
from typing import Dict, List, Optional, Sequence, TypeVar

from commstack.matrix.model import Matrix, Point

T = TypeVar("T")


def seed_of(matrix: Matrix, campaign: str) -> Optional[int]:
    """The seed of the shuffled order (None for a fixed order): the matrix's ``seed``, else one
    derived from the campaign name, the same on every machine and every Python."""
    if matrix.order == "fixed":
        return None
    if matrix.seed is not None:
        return matrix.seed
    return int(hashlib.sha256(f"commstack order {campaign}".encode()).hexdigest()[:8], 16)


def _key(seed: int, repeat: "int | str", point_id: str) -> str:
    return hashlib.sha256(f"{seed}:{repeat}:{point_id}".encode()).hexdigest()


def ordered(items: Sequence[T], repeat: int, seed: Optional[int], rotate: bool = True,
            point_of=lambda item: item) -> List[T]:
    """``items`` (points, or anything ``point_of`` maps to a Point) in the order repeat
    ``repeat`` runs them. ``seed`` None: the given order, started at the ``repeat``-th item
    when ``rotate`` (a fixed order rotates only for ``--repeat K``; a shuffled one always)."""
    items = list(items)
    if not items:
        return []
    if seed is None:
        return rotated(items, repeat - 1 if rotate else 0)
    ids = [point_of(item).id for item in items]
    starts = sorted(range(len(items)), key=lambda i: _key(seed, "first", ids[i]))
    first = starts[(repeat - 1) % len(items)]
    rest = sorted((i for i in range(len(items)) if i != first),
                  key=lambda i: _key(seed, repeat, ids[i]))
    return [items[first]] + [items[i] for i in rest]


def rotated(items: Sequence[T], shift: int) -> List[T]:
    """``items`` starting at position ``shift`` (modulo their number), wrapping around."""
    if not items:
        return []
    k = shift % len(items)
    return list(items[k:]) + list(items[:k])


def positions(points: Sequence[Point], repeat: int, seed: Optional[int], rotate: bool = True
              ) -> Dict[str, int]:
    """Point id -> its 1-based place in repeat ``repeat``'s order."""
    return {p.id: i for i, p in enumerate(ordered(points, repeat, seed, rotate), 1)}


def describe(seed: Optional[int], matrix: Matrix) -> str:
    """One line for logs and plans: which order, from which seed."""
    if seed is None:
        return "fixed (the matrix's order in every repeat)"
    source = "seed: of the matrix" if matrix.seed is not None else "derived from the campaign name"
    return f"shuffled anew every repeat, seed {seed} ({source})"
