"""A step's per-size choice in the MPI's own per-size form, so one setting serves every size.

Where a tuning step sweeps one collective-algorithm parameter and its bands
(:func:`commstack.tune.decide.decide`: the best candidate per run of message sizes, only where a
corrected test finds it better than the incumbent) name more than one algorithm, the tuned value
says which algorithm serves which sizes. Each band covers its measured sizes and the sizes up to
the next band's first one; the incumbent's ranges keep its value (the MPI's own selection when
the incumbent is unset). The verify sweep then measures that one value against the default like
any other tuned setting, and the tuning exports it.

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

UCC's ``UCC_TL_UCP_TUNE`` has a per-size form too (openucx/ucc ``docs/user_guide.md``:
``allreduce:0-4k:@0#allreduce:4k-inf:@1``); no plan sweeps a UCC algorithm, so it is not written
(see README "Tuning").
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional

from commstack.flavours import ompi_coll_rules

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


def per_size_settings(steps: List[Dict[str, Any]], settings: Dict[str, Any]) -> Dict[str, Any]:
    """``settings`` with each single-axis algorithm step's bands (Intel MPI, Open MPI
    coll/tuned) as one per-size value (the last such step of an axis wins, as later steps do)."""
    out = dict(settings)
    for step in steps:
        axes = step.get("axes") or []
        if len(axes) != 1 or step.get("per"):
            continue
        bands, incumbent = step.get("bands") or [], (step.get("incumbent") or {}).get(axes[0])
        value = (intel_ranges(bands, axes[0], incumbent)
                 or ompi_ranges(bands, axes[0], incumbent))
        if value is not None:
            out[axes[0]] = value
    return out
