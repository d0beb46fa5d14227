"""A step's per-size choice in the MPI's own per-size form, so one setting serves every size.

Where a tuning step sweeps one collective-algorithm parameter and its bands
(:func:`commstack.tune.decide.decide`: the best candidate per run of message sizes, only where a
corrected test finds it better than the incumbent) name more than one algorithm, the tuned value
says which algorithm serves which sizes. Each band covers its measured sizes and the sizes up to
the next band's first one (UCC's ranges end at that size itself, see below); the incumbent's
ranges keep its value (the MPI's own selection when the incumbent is unset). The verify sweep
then measures that one value against the default like any other tuned setting, and the tuning
exports it.

* Intel MPI, ``I_MPI_ADJUST_<OP>``: Intel MPI's own per-size syntax (Intel MPI Library Developer
  Reference, "I_MPI_ADJUST Family Environment Variables":
  ``<presetid>[:<conditions>][;<presetid>:<conditions>...]``, a condition ``<l>-<m>`` being
  messages of ``l`` to ``m`` bytes inclusive), e.g.
  ``I_MPI_ADJUST_ALLREDUCE="0:0-1023;7:1024-2147483647"`` (preset 0: Intel MPI's selection).
* Open MPI, ``mca.coll_tuned_<op>_algorithm`` with algorithm numbers: the same form with an
  open last range, ``"3:0-1023;4:1024-"`` (algorithm 0: coll/tuned's fixed decision), launched
  as coll/tuned's dynamic rules file (:mod:`commstack.flavours.ompi_coll_rules`, which says for
  which collectives and how sizes are counted; a collective it refuses keeps the step's single
  winner, as do algorithms given by name).
* UCC, ``env.UCC_TL_UCP_TUNE`` with one single-algorithm token per candidate
  (``allreduce:@knomial``, ``allreduce:@1``): UCC's own per-size form (openucx/ucc
  ``docs/user_guide.md``), one token per band with its message range inserted after the
  collective, ``allreduce:0-1024:@0#allreduce:1024-inf:@1``. A range ends at the next band's
  first size: UCC gives a size two ranges share to the upper one
  (:mod:`commstack.flavours.ucc_tune`, which says why and for which collectives; alltoall and
  allgather, whose size UCC counts over the whole receive buffer, get ranges times the step's
  process count behind a team-size qualifier, ``alltoall:[2]:0-2048:@0#...``). Where the
  incumbent is unset its ranges get no token (UCC's own selection there).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional

from commstack.flavours import ompi_coll_rules, ucc_tune

INTEL_ALGORITHM = re.compile(r"^I_MPI_ADJUST_[A-Z_]+$")
LARGEST = 2147483647  # the upper end of the last range: Intel MPI reads sizes as int


def _unset(value: Any) -> bool:
    return str(value).strip() in ("", "None")


def _ranges(bands: List[Dict[str, Any]], axis: str, default: Any, last: Callable[[int], str]
            ) -> Optional[str]:
    """``<value>:<first>-<last>`` per band, joined by ``;``; ``last(first)`` writes the final
    range. None when the bands name a single value, or one is already a per-size value."""
    values = [b["best"].get(axis) for b in bands]
    if len({str(v) for v in values}) < 2:
        return None
    parts = []
    for i, band in enumerate(bands):
        low = 0 if i == 0 else int(band["from_bytes"] or 0)
        value = default if _unset(band["best"].get(axis)) else band["best"].get(axis)
        if ":" in str(value):  # already a per-size value: not nested
            return None
        if i == len(bands) - 1:
            parts.append(f"{value}:{last(low)}")
        else:
            parts.append(f"{value}:{low}-{int(bands[i + 1]['from_bytes']) - 1}")
    return ";".join(parts)


def intel_ranges(bands: List[Dict[str, Any]], axis: str, incumbent: Any) -> Optional[str]:
    """The per-size value for ``axis`` from a step's ``bands`` (decision.json), or None when the
    bands name a single value (nothing per size to say)."""
    if not INTEL_ALGORITHM.match(axis) or not bands:
        return None
    return _ranges(bands, axis, 0 if _unset(incumbent) else incumbent,
                   lambda low: f"{low}-{LARGEST}")


def ompi_ranges(bands: List[Dict[str, Any]], axis: str, incumbent: Any) -> Optional[str]:
    """The per-size value of an Open MPI ``mca.coll_tuned_<op>_algorithm`` axis, or None: the
    bands name a single value, an algorithm by name, or a collective whose rules file size
    ompi_coll_rules does not handle."""
    op = ompi_coll_rules.operation(axis[4:]) if axis.startswith("mca.") else None
    if op not in ompi_coll_rules.COLLECTIVES or not bands:
        return None
    default = 0 if _unset(incumbent) else incumbent
    values = [default if _unset(b["best"].get(axis)) else b["best"].get(axis) for b in bands]
    if not all(str(v).strip().isdigit() for v in values):
        return None
    return _ranges(bands, axis, default, lambda low: f"{low}-")


def ucc_ranges(bands: List[Dict[str, Any]], axis: str, incumbent: Any,
               processes: Optional[int] = None) -> Optional[str]:
    """The per-size ``env.UCC_TL_UCP_TUNE`` of a step's bands, or None: the bands name a single
    value, or a value that is not one algorithm of one collective UCC can be told sizes of
    (alltoall and allgather: only with the ``processes`` the step measured at)."""
    if axis != "env." + ucc_tune.VARIABLE or not bands:
        return None

    def value(v: Any) -> Optional[str]:
        return None if _unset(v) else str(v)

    pieces = []
    for i, band in enumerate(bands):
        first = 0 if i == 0 else int(band["from_bytes"] or 0)
        end = int(bands[i + 1]["from_bytes"]) if i + 1 < len(bands) else None
        chosen = band["best"].get(axis)
        pieces.append((value(incumbent) if _unset(chosen) else value(chosen), first, end))
    return ucc_tune.per_size(pieces, processes)


def per_size_settings(steps: List[Dict[str, Any]], settings: Dict[str, Any]) -> Dict[str, Any]:
    """``settings`` with each single-axis algorithm step's bands (Intel MPI, Open MPI
    coll/tuned, UCC TL/UCP) as one per-size value (the last such step of an axis wins, as later steps do)."""
    out = dict(settings)
    for step in steps:
        axes = step.get("axes") or []
        if len(axes) != 1 or step.get("per"):
            continue
        bands, incumbent = step.get("bands") or [], (step.get("incumbent") or {}).get(axes[0])
        value = (intel_ranges(bands, axes[0], incumbent)
                 or ompi_ranges(bands, axes[0], incumbent)
                 or ucc_ranges(bands, axes[0], incumbent, step.get("processes")))
        if value is not None:
            out[axes[0]] = value
    return out
