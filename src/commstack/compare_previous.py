"""Each campaign of a results store against the one that ran the same matrix before it: the
"before and after" of every rerun, as ``commstack compare`` judges it (the dashboard's compare
results).

Campaigns are chained by the matrix they ran (``baseline.matrix_digest``) and ordered by their
date (``baseline.campaign_date``); imported campaigns have neither and take no part. Every
comparison is :func:`commstack.compare.compare` with its defaults (5 % threshold, alpha 0.05):
the same verdicts as ``commstack compare BEFORE AFTER``.

A chain holds campaigns of one kind (``commstack.simulated``): a simulated campaign is compared
only with the simulated one before it (same platform), a measured one only with a measured one;
each row says which (``simulated``: the platforms, empty when measured).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from commstack import baseline, compare
from commstack.figures import load_figures, varying
from commstack.store.campaign_kind import kind_of_campaign
from commstack.store.results import campaigns

MAX_COMPARISONS = 200  # the newest ones; a store of more reruns lists these
SHOWN_REGRESSIONS = 5  # per comparison, the strongest


def chains(search: Sequence[Path]) -> List[List[Tuple[float, Path]]]:
    """The dated campaigns under ``search`` as (date, campaign), grouped by matrix and kind
    (simulated on which platforms, or measured: never one kind after another), oldest first,
    groups of two or more only."""
    by_matrix: Dict[str, List[Tuple[float, str, Path]]] = {}
    for root in campaigns(search):
        digest, when = baseline.matrix_digest(root), baseline.campaign_date(root)
        if digest is not None and when is not None:
            by_matrix.setdefault(digest, []).append((when, str(root), root))
    groups: Dict[Tuple[str, Tuple[str, ...], bool], List[Tuple[float, str, Path]]] = {}
    for digest, runs in by_matrix.items():
        if len(runs) < 2:
            continue
        for run in runs:
            kind = kind_of_campaign(run[2])
            groups.setdefault((digest, kind.platforms, kind.measured), []).append(run)
    return [[(when, root) for when, _, root in sorted(runs)]
            for runs in groups.values() if len(runs) > 1]


def _name(root: Path) -> str:
    return f"{root.parent.name}/{root.name}"


def _row(before: Path, after: Path, date: float) -> Dict[str, Any]:
    cmp = compare.compare(load_figures(before), load_figures(after))
    broad = cmp.broad
    kind = cmp.kind_b
    worst = sorted(cmp.regressions, key=lambda m: -m.slowdown)[:SHOWN_REGRESSIONS]
    labels = varying([m.a for m in cmp.matches]) or cmp.keys
    return {"machine": after.parent.name, "campaign": _name(after), "baseline": _name(before),
            "date": date, "figures": len(cmp.matches),
            "regressions": len(cmp.regressions),
            "improvements": cmp.count(compare.IMPROVEMENT),
            "slowdown": round(broad.ratio, 4) if broad.testable else None,
            "broad_p": broad.p if broad.testable else None,
            "broad_slowdown": cmp.broad_slowdown,
            "verdict": "FAIL" if cmp.failed else "PASS",
            "simulated": kind.short() if kind.simulated else None,
            "worst": "; ".join(f"{m.a.describe(labels)} {m.a.metric} "
                               f"x{m.slowdown:.3f}" for m in worst)}


def comparisons(search: Sequence[Path]) -> List[Dict[str, Any]]:
    """One row per campaign with an earlier one of its matrix: its verdict against that one
    (at most :data:`MAX_COMPARISONS`, the newest)."""
    pairs = [(when, before, after) for chain in chains(search)
             for (_, before), (when, after) in zip(chain, chain[1:])]
    pairs.sort(key=lambda pair: pair[0], reverse=True)  # each campaign's date read once
    return [_row(before, after, when) for when, before, after in pairs[:MAX_COMPARISONS]]
