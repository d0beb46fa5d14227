"""Baselines by date for ``commstack compare``: a named campaign, or the last N campaigns of the
same matrix that ran before a date, their repeats pooled point by point.

A campaign's date is the start of its last session (``sessions/<UTC stamp>-<host>-<pid>``, named
by ``commstack run`` when it starts); "the same matrix" is the same matrix text (the
``matrix_sha256`` the sweep writes into each session's provenance.json). Imported campaigns have
no session and are never chosen by date; name one with ``--baseline``.

A baseline is of its campaign's own kind (``commstack.simulated``): a simulated campaign is never
the baseline of a measured one, nor a measured one of a simulated one, nor one simulated on
another platform. ``last_before`` skips such campaigns (and lists them, so the caller says so);
``check_kind`` refuses a named one.
"""

from __future__ import annotations

import json
from calendar import timegm
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from commstack import simulated as sim
from commstack.errors import CampaignError
from commstack.figures import Figure, load_figures
from commstack.store.campaign_kind import kind_of_campaign
from commstack.store.results import campaigns

_STAMP = "%Y%m%dT%H%M%SZ"


def _sessions(root: Path) -> List[Path]:
    folder = Path(root) / "sessions"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def campaign_date(root: Path) -> Optional[float]:
    """The start of the campaign's last session (Unix time), None without one."""
    import time

    for session in reversed(_sessions(root)):
        try:
            return float(timegm(time.strptime(session.name.split("-", 1)[0], _STAMP)))
        except ValueError:
            continue
    return None


def matrix_digest(root: Path) -> Optional[str]:
    """The sha256 of the matrix the campaign's last session ran."""
    for session in reversed(_sessions(root)):
        try:
            info = json.loads((session / "provenance.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and info.get("matrix_sha256"):
            return str(info["matrix_sha256"])
    return None


def check_kind(chosen: Path, like: Path) -> None:
    """CampaignError unless ``chosen`` may be ``like``'s baseline: both measured, or both
    simulated on the same platforms."""
    a, b = kind_of_campaign(chosen), kind_of_campaign(like)
    if not sim.same_kind(a, b):
        raise CampaignError(f"{chosen} is {a.describe()} and {like} is {b.describe()}: a "
                            "campaign is never the baseline of one of another kind (simulated "
                            "against measured, or another platform); to check the simulation "
                            f"against the measurement say so: commstack compare {chosen} {like} "
                            "--simulated-vs-measured")


def last_before(search: Sequence[Path], like: Path, count: int,
                before: Optional[float] = None,
                skipped: Optional[List[str]] = None) -> List[Path]:
    """The last ``count`` campaigns under ``search`` that ran ``like``'s matrix, are of its
    kind (simulated on the same platforms, or measured) and whose date is before ``before``
    (default: ``like``'s own date), oldest first. Each campaign of the matrix and dates skipped
    for its kind is described in ``skipped`` (when given)."""
    if count < 1:
        raise CampaignError(f"--baseline-last {count}: expected 1 or more campaigns")
    digest = matrix_digest(like)
    if digest is None:
        raise CampaignError(f"{like}: no session with a recorded matrix (an imported campaign?); "
                            "name the baseline with --baseline CAMPAIGN")
    limit = before if before is not None else campaign_date(like)
    dated: List[Tuple[float, Path]] = []
    other: List[Tuple[float, Path, sim.Kind]] = []
    mine: Optional[sim.Kind] = None
    for root in campaigns(search):
        if root.resolve() == Path(like).resolve() or matrix_digest(root) != digest:
            continue
        when = campaign_date(root)
        if when is not None and limit is not None and when < limit:
            mine = mine or kind_of_campaign(like)
            found = kind_of_campaign(root)
            if sim.same_kind(found, mine):
                dated.append((when, root))
            else:
                other.append((when, root, found))
    if skipped is not None and other:
        skipped += [f"{root} ({shown(when)}) is {found.describe()}, {Path(like).name} is "
                    f"{mine.describe() if mine else '?'}: skipped (a baseline is of the "
                    "campaign's own kind)" for when, root, found in sorted(other)]
    if not dated:
        raise CampaignError(f"no campaign of {like}'s matrix ran before the date under "
                            + ", ".join(map(str, search))
                            + (f" but {len(other)} of another kind (simulated against measured"
                               ", or another platform), never a baseline: "
                               + ", ".join(str(r) for _, r, _ in sorted(other)) if other else ""))
    return [root for _, root in sorted(dated)[-count:]]


def shown(when: Optional[float]) -> str:
    from commstack.history import shown_date

    return shown_date(when)


def pooled_figures(roots: Sequence[Path], metric: Optional[str] = None) -> List[Figure]:
    """The figures of several campaigns of one matrix, each point's repeats pooled."""
    pooled: Dict[Tuple, Figure] = {}
    for root in roots:
        for fig in load_figures(root, metric):
            key = (json.dumps(fig.params, sort_keys=True, default=str),
                   json.dumps(fig.row, sort_keys=True, default=str), fig.metric)
            if key not in pooled:
                pooled[key] = Figure(dict(fig.params), dict(fig.row), fig.metric,
                                     fig.lower_is_better, simulation=fig.simulation)
            pooled[key].samples += fig.samples
            pooled[key].repeats += fig.repeats
    return list(pooled.values())


def describe(roots: Sequence[Path]) -> str:
    from commstack.history import shown_date

    return ", ".join(f"{r} ({shown_date(campaign_date(r))})" for r in roots)
