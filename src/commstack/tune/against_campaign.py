"""A tuning's tuned settings measured against another campaign's numbers.

`commstack tune PLAN --compare-reference CAMPAIGN`: the other campaign is any campaign, typically
one imported from raw outputs made before (last year's HPC-X IMB logs). Each case's verify runs
of the tuned setting are compared with it by `commstack compare`'s rules, matched on the result
rows alone (benchmark, np, bytes): the two campaigns need not share parameter names. Asked for
by name, a simulated side is compared with a measured one, each case's section then starting
with the sentence that says which side is simulated (commstack.simulated).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from commstack import compare
from commstack.errors import CampaignError
from commstack.figures import Figure, load_figures
from commstack.tune.staged import CaseResult


def check_reference_campaign(path: Path) -> List[Figure]:
    """The reference campaign's figures, or a one-sentence error before anything is run."""
    if not (path / "campaign.json").is_file():
        raise CampaignError(f"--compare-reference {path}: neither a decisions CSV nor a campaign "
                            "directory (no campaign.json)")
    return load_figures(path)


def _is_tuned(figure: Figure, result: CaseResult) -> bool:
    chosen = {**result.launched, **result.settings}  # named settings as chosen and as launched
    return all(str(figure.params[n]) == str(v) for n, v in chosen.items() if n in figure.params)


def tuned_figures(result: CaseResult) -> List[Figure]:
    """The case's verify runs of its tuned setting (not the default's)."""
    return [f for f in load_figures(result.directory / "verify") if _is_tuned(f, result)]


def comparison(results: List[CaseResult], reference: Path, reference_figures: List[Figure]) -> str:
    """Markdown: per case, the tuned setting (B) against the reference campaign (A)."""
    ignore: List[str] = sorted(set().union(*(f.params for f in reference_figures)))
    sections = [f"# Tuned settings against {reference}", "",
                "Each case's tuned setting (B, its verify runs) against the campaign given with "
                "`--compare-reference` (A), matched on the result rows (benchmark, np, bytes); "
                "verdicts as `commstack compare`.", ""]
    for result in results:
        tuned = tuned_figures(result)
        case = ", ".join(f"{k}={v}" for k, v in result.case.items()) or "(one case)"
        # Asked for by name (--compare-reference): said, not refused, when one side is simulated.
        cmp = compare.compare(reference_figures, tuned, ignore=ignore + _params(tuned),
                              simulated_vs_measured=True)
        if not cmp.matches:
            sections += [f"## {case}", "", "No result row of the tuned runs is in the reference "
                         f"campaign ({len(tuned)} tuned figures, {len(reference_figures)} "
                         f"reference figures, {cmp.ambiguous} ambiguous: several reference "
                         "points per row; narrow it with `commstack compare --where`).", ""]
            continue
        text = compare.comparison_markdown(cmp, str(reference), f"{case} tuned",
                                           with_sentence=False)
        first = compare.sentence(cmp, str(reference), f"{case} tuned")
        sections += [f"## {case}", ""] + ([f"**{first}**", ""] if first else []) + [
            text.split("\n", 2)[2]]
    return "\n".join(sections)


def _params(figs: List[Figure]) -> List[str]:
    names: Dict[str, Any] = {}
    for f in figs:
        names.update(dict.fromkeys(f.params))
    return list(names)
