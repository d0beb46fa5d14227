"""Which collective component served each collective of an Open MPI run, from the MPI's own words.

The only per-call evidence Open MPI 4.1 gives is coll/ucc's ``coll_ucc_verbose`` at level 3: each
call of a collective UCC was chosen for prints, on stderr,
``[host:pid] coll_ucc_allreduce.c:90 - mca_coll_ucc_allreduce() running ucc allreduce``, and
``... running fallback allreduce`` right after when UCC declined the call and handed it to the
component below it. ``coll_base_verbose`` (tried up to 100 on 4.1.4) lists the modules enabled
per communicator in priority order, never which one serves which function, and tuned, han,
basic and libnbc print nothing per call in a release build: every other component is "not
reported", never guessed from priorities.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Dict, Iterable, Optional, Set

MCA = "OMPI_MCA_"
VERBOSE_VAR = "OMPI_MCA_coll_ucc_verbose"
UNREPORTED = "not reported"
VERBOSE_LEVEL = "3"  # level 3: one line per call; 1-2 only context and team creation
SOURCE = "Open MPI coll/ucc: coll_ucc_verbose=3 lines on stderr ('running ucc|fallback <coll>')"
NOT_REPORTED = ("components other than ucc are not reported: Open MPI 4.1 does not say which "
                "module serves each collective (coll_base_verbose lists the enabled modules only)")

# [host:pid]; lines the ranks wrote over each other (one stderr file) do not match and are not counted.
_LINE = re.compile(r"^\[(?P<proc>[\w.-]+:\d+)\] coll_ucc_\w+\.c:\d+ - mca_coll_ucc_\w+\(\) "
                   r"running (?P<kind>ucc|fallback) (?P<coll>\w+)\s*$", re.MULTILINE)


def asks_for_coll(env: Dict[str, str]) -> bool:
    """The run sets a coll framework variable (``OMPI_MCA_coll`` or ``OMPI_MCA_coll_*``)."""
    return any(k == MCA + "coll" or k.startswith(MCA + "coll_") for k in env)


def asks_for_ucc(env: Dict[str, str]) -> bool:
    """The run enables coll/ucc (``coll_ucc_enable`` true, and ``coll`` not excluding ucc)."""
    enabled = env.get(MCA + "coll_ucc_enable", "").strip().lower() in ("1", "true", "yes")
    selection = env.get(MCA + "coll", "").replace(" ", "")
    excluded = selection.startswith("^") and "ucc" in selection[1:].split(",")
    not_listed = bool(selection) and not selection.startswith("^") and "ucc" not in selection.split(",")
    return enabled and not excluded and not not_listed


def evidence_env(env: Dict[str, str]) -> Dict[str, str]:
    """What to add so the run names the component of its collectives: coll_ucc_verbose=3 when
    the run touches the coll framework and does not set the level itself."""
    if asks_for_coll(env) and VERBOSE_VAR not in env:
        return {VERBOSE_VAR: VERBOSE_LEVEL}
    return {}


def components_used(env: Dict[str, str], stderr: str,
                    collectives: Optional[Iterable[str]] = None) -> Optional[Dict[str, object]]:
    """The record's ``components_used``, or None when the run did not touch the coll framework.

    ``collectives``: the benchmark's collectives (lower case, e.g. ``allreduce``); when the run
    asks for ucc and ucc served none of them (or, without a list, no call at all), they are
    listed in ``not_used``."""
    if not asks_for_coll(env):
        return None
    level = env.get(VERBOSE_VAR, "").strip()
    reporting = level.isdigit() and int(level) >= 3
    served: Counter = Counter()
    declined: Counter = Counter()
    processes: Set[str] = set()
    for match in _LINE.finditer(stderr):
        processes.add(match["proc"])
        (served if match["kind"] == "ucc" else declined)[match["coll"]] += 1
    # "running ucc X" is printed before the attempt, so a declined call printed both lines.
    by_ucc = {c: n - declined[c] for c, n in served.items() if n - declined[c] > 0}
    wanted = sorted({c.lower() for c in collectives or ()})
    names = sorted(set(wanted) | set(by_ucc) | set(declined))
    asked = ["ucc"] if asks_for_ucc(env) else []
    out: Dict[str, object] = {
        "source": SOURCE if reporting else None,
        "asked": asked,
        # ucc where it served calls; UNREPORTED for calls it did not serve (never a guess).
        "collectives": {c: (["ucc"] if c in by_ucc else [])
                        + ([UNREPORTED] if c not in by_ucc or declined[c] else []) for c in names},
        "calls": {c: {"ucc": n} for c, n in sorted(by_ucc.items())},
        "fallbacks": dict(sorted(declined.items())),
        "processes": len(processes),
        "not_used": [],
        "not_reported": NOT_REPORTED if reporting else
        f"{UNREPORTED}: {VERBOSE_VAR}={level or 'unset'} (level 3 names the calls ucc serves)",
    }
    if asked and reporting:
        if wanted:
            out["not_used"] = [c for c in wanted if c not in by_ucc]
        elif not by_ucc:
            out["not_used"] = ["any collective"]
    return out


def not_used_note(used: Optional[Dict[str, object]]) -> Optional[str]:
    """The record's note when a component asked for served none of the benchmark's collectives."""
    if not used or not used.get("not_used"):
        return None
    fallbacks = used.get("fallbacks") or {}
    parts = []
    for coll in used["not_used"]:  # type: ignore[union-attr]
        declined = fallbacks.get(coll) if isinstance(fallbacks, dict) else None
        parts.append(f"{coll} ({declined} calls fell back)" if declined else
                     f"{coll} (no ucc call)")
    return ("asked for coll/ucc (coll_ucc_enable=1) but ucc served none of: " + ", ".join(parts))
