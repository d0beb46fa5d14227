"""A step's per-size choice in the MPI's own per-size form, so one setting serves every size.

Where a tuning step sweeps one Intel MPI algorithm variable (``I_MPI_ADJUST_<OP>``) and its bands
(:func:`commstack.tune.decide.decide`: the best candidate per run of message sizes, only where a
corrected test finds it better than the incumbent) name more than one algorithm, the tuned value
is Intel MPI's own per-size syntax (Intel MPI Library Developer Reference, "I_MPI_ADJUST Family
Environment Variables": ``<presetid>[:<conditions>][;<presetid>:<conditions>...]``, a condition
``<l>-<m>`` being messages of ``l`` to ``m`` bytes inclusive), e.g.
``I_MPI_ADJUST_ALLREDUCE="0:0-1023;7:1024-2147483647"``. Each band covers its measured sizes and
the sizes up to the next band's first one; the incumbent's ranges keep its value (preset 0, Intel
MPI's own selection, when the incumbent is unset). The verify sweep then measures that one value
against the default like any other tuned setting.

Open MPI's coll/tuned dynamic rules file and UCC's ``UCC_TL_UCP_TUNE`` have per-size forms too;
they are not written yet (see README "Tuning").
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

INTEL_ALGORITHM = re.compile(r"^I_MPI_ADJUST_[A-Z_]+$")
LARGEST = 2147483647  # the upper end of the last range: Intel MPI reads sizes as int


def intel_ranges(bands: List[Dict[str, Any]], axis: str, incumbent: Any) -> Optional[str]:
    """The per-size value for ``axis`` from a step's ``bands`` (decision.json), or None when the
    bands name a single value (nothing per size to say)."""
    if not INTEL_ALGORITHM.match(axis) or not bands:
        return None
    values = [b["best"].get(axis) for b in bands]
    if len({str(v) for v in values}) < 2:
        return None
    default = incumbent if str(incumbent).strip() not in ("", "None") else 0
    parts = []
    for i, band in enumerate(bands):
        low = 0 if i == 0 else int(band["from_bytes"] or 0)
        high = LARGEST if i == len(bands) - 1 else int(bands[i + 1]["from_bytes"]) - 1
        value = band["best"].get(axis)
        value = default if str(value).strip() in ("", "None") else value
        if ":" in str(value):  # already a per-size value: not nested
            return None
        parts.append(f"{value}:{low}-{high}")
    return ";".join(parts)


def per_size_settings(steps: List[Dict[str, Any]], settings: Dict[str, Any]) -> Dict[str, Any]:
    """``settings`` with each single-axis Intel MPI algorithm step's bands as one per-size value
    (the last such step of an axis wins, as later steps do)."""
    out = dict(settings)
    for step in steps:
        axes = step.get("axes") or []
        if len(axes) != 1 or step.get("per"):
            continue
        value = intel_ranges(step.get("bands") or [], axes[0],
                             (step.get("incumbent") or {}).get(axes[0]))
        if value is not None:
            out[axes[0]] = value
    return out
