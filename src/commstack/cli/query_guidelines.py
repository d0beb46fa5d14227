"""``commstack query PATHS --guidelines``: the self-consistent performance guidelines a campaign
violates, with their evidence.

The same check as the report's section (:mod:`commstack.report.guidelines`): each campaign's
collective timings by setting, every guideline of ``guidelines.tsv`` wherever a setting measured
its collective and composition, every check of the query Holm-corrected together (with one
campaign: exactly the report's verdicts). A violation is printed with both medians and their
95 % intervals, the ratio with its bootstrap interval, the corrected p and the verdict of
:mod:`commstack.stats`; with none, the answer says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Sequence, Tuple

from commstack.report import guidelines as G
from commstack.store.campaign import Campaign

CSV_COLUMNS = ["setting", "guideline", "rule", "m", "composition", "collective_median",
               "collective_ci_low", "collective_ci_high", "collective_n", "composition_median",
               "composition_ci_low", "composition_ci_high", "composition_n", "ratio",
               "ratio_low", "ratio_high", "p_adjusted", "correction", "verdict"]


def checks(campaigns: Sequence[Path]) -> Tuple[List[G.Check], List[str], List[G.Guideline]]:
    """Every check the campaigns' records allow (corrected together), the guidelines nothing
    could check, and the guidelines read."""
    rules = G.read_guidelines()
    found: List[G.Setting] = []
    for root in campaigns:
        campaign = Campaign(root)
        source = f"{campaign.machine}/{campaign.name}" if len(campaigns) > 1 else ""
        found += G.campaign_settings(campaign, rules, source)
    done, unchecked = G.check(found, rules)
    return done, unchecked, rules


def violated(done: Sequence[G.Check]) -> bool:
    """Whether any check found a violation (after the correction for the number of checks)."""
    return bool(G.violations(done))


def markdown(done: Sequence[G.Check], unchecked: Sequence[str],
             rules: Sequence[G.Guideline]) -> List[str]:
    """The answer as text: the violations with their evidence, or that none was found."""
    if not done:
        return [G.NOTHING_CHECKED]
    found = G.violations(done)
    out = [G.summary(done), ""]
    out += G.evidence_table(found) if found else [f"no violation found ({len(done)} checks)"]
    return out + G.sources(done, unchecked, rules)


def csv_rows(done: Sequence[G.Check]) -> Tuple[List[str], List[List[Any]]]:
    """The violations, one row each with its numbers unformatted."""
    rows = []
    for c in G.violations(done):
        composition = " + ".join(f"{t.collective}({t.bytes(c.m, c.setting.processes)})"
                                 for t in c.guideline.composition)
        rows.append([c.setting.label, c.guideline.name, c.guideline.rule, c.m, composition,
                     c.collective.median, c.collective.low, c.collective.high, c.collective.n,
                     c.composition.median, c.composition.low, c.composition.high,
                     c.composition.n, c.shift.ratio, c.shift.low, c.shift.high, c.p_adjusted,
                     G.METHOD, c.verdict])
    return CSV_COLUMNS, rows
