"""Compare campaign B with campaign A, or a campaign with reference values; exit 1 on regression.

  commstack compare A B [--threshold 0.05] [--alpha 0.05] [--correction bh|holm] [--ignore P]
                        [--where K=V] [--out cmp.md]
  commstack compare B --reference references/<machine>.yaml
  commstack compare A --write-reference references/<machine>.yaml [--tolerance 0.1]
  commstack compare B --baseline A                      (the same as: compare A B)
  commstack compare B --baseline-last N [--before DATE] [--results DIR]
      the last N campaigns of B's matrix that ran before DATE (default: B's own date), searched
      under DIR (default: B's results folder), their repeats pooled (commstack.baseline)

A simulated campaign (SimGrid SMPI: commstack.simulated) is compared with a measured one, or
with one simulated on another platform, only with --simulated-vs-measured: the output then starts
with the sentence saying which side is simulated (and on which platform) and which measured, and
its verdicts read "B slower"/"B faster", never "regression"/"improvement". A baseline is always of
B's own kind: --baseline-last skips campaigns of the other kind (and says which), --baseline
refuses one.

Exit status: 0 pass, 1 a regression (or a reference value out of bounds), 2 a user error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List

from commstack.cli.common import existing_campaign
from commstack.errors import CampaignError


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", type=Path, help="campaign A (the baseline), results/<machine>/<campaign>")
    p.add_argument("b", type=Path, nargs="?", help="campaign B (compared with A)")
    p.add_argument("--reference", type=Path, help="check A against a references YAML instead")
    p.add_argument("--write-reference", type=Path, metavar="FILE",
                   help="write A's values as a references YAML (never overwrites)")
    p.add_argument("--tolerance", type=float, default=0.10,
                   help="relative bounds for --write-reference (default 0.10)")
    p.add_argument("--threshold", type=float, default=None,
                   help="practical threshold: the least relative slowdown that can count as a "
                        "regression (default 0.05)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance of the corrected rank tests (default 0.05)")
    p.add_argument("--correction", choices=("bh", "holm"), default="bh",
                   help="multiple-comparison correction over the matched figures: "
                        "Benjamini-Hochberg (default) or Holm")
    p.add_argument("--ignore", action="append", default=[], metavar="PARAM",
                   help="parameter not used to match points (repeatable)")
    p.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                   help="only figures with this parameter/row value (repeatable)")
    p.add_argument("--metric", default=None,
                   help="parsed field to compare (default: the figure of merit per row)")
    p.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    p.add_argument("--baseline", type=Path, default=None, metavar="CAMPAIGN",
                   help="compare the campaign given (as B) with this one")
    p.add_argument("--baseline-last", type=int, default=None, metavar="N",
                   help="compare the campaign given with the last N campaigns of its matrix")
    p.add_argument("--before", default=None, metavar="DATE",
                   help="with --baseline-last: campaigns that ran before DATE (UTC)")
    p.add_argument("--results", type=Path, action="append", default=None, metavar="DIR",
                   help="with --baseline-last: where to look (default: B's results folder)")
    p.add_argument("--simulated-vs-measured", action="store_true",
                   help="compare a simulated campaign with a measured one (or one simulated on "
                        "another platform), or check one against reference values of the other "
                        "kind: a check of the simulation, said so in the output (never a baseline)")


def _pairs(items: List[str]) -> Dict[str, str]:
    from commstack.history import parse_where

    return parse_where(items)


def _describe(args: argparse.Namespace) -> str:
    options = [f"--where {w}" for w in args.where] + [f"--ignore {i}" for i in args.ignore]
    options += [f"--metric {args.metric}"] if args.metric else []
    return " ".join([args.a.as_posix(), *options, f"--tolerance {args.tolerance:g}"])


def execute(args: argparse.Namespace) -> int:
    from commstack import compare as cmp
    from commstack.figures import load_figures
    from commstack.store.campaign import Campaign
    from commstack.store.files import replace, write_new

    where = _pairs(args.where)
    if args.baseline is not None or args.baseline_last is not None:
        return _against_baseline(args, where)
    if sum(x is not None for x in (args.b, args.reference, args.write_reference)) != 1:
        raise CampaignError("give exactly one of: campaign B, --reference FILE, "
                            "--write-reference FILE")
    if args.write_reference:
        figs = cmp.select_figures(load_figures(args.a, args.metric), where)
        text = cmp.write_references(figs, Campaign(args.a).machine, args.tolerance, list(where),
                                    args.ignore, _describe(args))
        write_new(args.write_reference, text.encode())
        print(f"{args.write_reference}: {len(figs)} reference values")
        return 0
    if args.reference:
        _, refs = cmp.load_references(args.reference)
        records = list(Campaign(existing_campaign(args.a)).records())
        records = [r for r in records if all(
            k not in r.params or str(r.params[k]) == v for k, v in where.items())]
        checks = cmp.check_references(records, refs)
        text = cmp.references_markdown(checks, str(args.reference),
                                       *_reference_kinds(args, records))
        failed = any(c.status == "out of bounds" for c in checks)
    else:
        threshold = cmp.DEFAULT_THRESHOLD if args.threshold is None else args.threshold
        try:
            result = cmp.compare(load_figures(args.a, args.metric),
                                 load_figures(args.b, args.metric), threshold,
                                 args.ignore, where, args.alpha, args.correction,
                                 args.simulated_vs_measured)
        except cmp.SimulationMismatch as exc:
            raise exc.named(f"A ({args.a})", f"B ({args.b})") from None
        if not result.matches:
            raise CampaignError(
                f"no figure of {args.b} matches one of {args.a} on {', '.join(result.keys)} "
                f"({result.ambiguous} ambiguous); use --ignore PARAM / --where KEY=VALUE")
        text = cmp.comparison_markdown(result, str(args.a), str(args.b))
        text += _deviations([existing_campaign(args.a), existing_campaign(args.b)])
        failed = result.failed
    sys.stdout.write(text)
    if args.out:
        replace(args.out, text.encode())
    return 1 if failed else 0


def _against_baseline(args: argparse.Namespace, where: Dict[str, str]) -> int:
    """``compare B --baseline A`` or ``--baseline-last N``: the campaign given is B."""
    from commstack import baseline
    from commstack import compare as cmp
    from commstack.figures import load_figures
    from commstack.history import parse_date
    from commstack.store.files import replace

    if args.b is not None or args.reference or args.write_reference or (
            args.baseline is not None) == (args.baseline_last is not None):
        raise CampaignError("with a baseline give one campaign (B) and one of --baseline "
                            "CAMPAIGN, --baseline-last N")
    b = existing_campaign(args.a)
    skipped: List[str] = []
    if args.baseline is not None:
        roots = [existing_campaign(args.baseline)]
        baseline.check_kind(roots[0], b)  # a baseline is of B's own kind, flag or not
    else:
        search = args.results or [b.parent.parent]
        before = parse_date(args.before) if args.before else None
        roots = baseline.last_before(search, b, args.baseline_last, before, skipped=skipped)
    threshold = cmp.DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    result = cmp.compare(baseline.pooled_figures(roots, args.metric), load_figures(b, args.metric),
                         threshold, args.ignore, where, args.alpha, args.correction)
    if not result.matches:
        raise CampaignError(f"no figure of {b} matches the baseline on {', '.join(result.keys)}")
    name_a = " + ".join(r.name for r in roots)
    first = cmp.sentence(result, name_a, str(b))
    text = ((f"**{first}**\n\n" if first else "")
            + f"Baseline: {baseline.describe(roots)}\n\n"
            + "".join(f"Not a baseline of {b.name}: {line}\n\n" for line in skipped)
            + cmp.comparison_markdown(result, name_a, str(b), with_sentence=False)
            + _deviations([*roots, b]))
    sys.stdout.write(text)
    if args.out:
        replace(args.out, text.encode())
    return 1 if result.failed else 0


def _reference_kinds(args: argparse.Namespace, records: list):
    """(the sentence a reference check starts with, or None; the kind of the campaign checked):
    simulated values against measured references (or the other way) only when asked."""
    from commstack import compare as cmp
    from commstack import simulated as sim

    checked = sim.kind_of_records(r for r in records if r.ok)
    platform = cmp.references_simulated(args.reference)
    values = sim.Kind((platform,), False) if platform else sim.MEASURED
    if not checked.simulated and not values.simulated:
        return None, checked
    if not sim.same_kind(checked, values) and not args.simulated_vs_measured:
        raise cmp.SimulationMismatch(values, checked, f"the reference values ({args.reference})",
                                     f"the campaign ({args.a})")
    return sim.comparison_sentence(values, checked, str(args.reference), str(args.a)), checked


def _deviations(roots: List[Path]) -> str:
    """Under the comparison: each campaign's deviations from the published setup it reproduces,
    as its records list them (a difference may come from these as much as from the machine)."""
    from commstack.report.studies.deviations import deviation_lines
    from commstack.store.campaign import Campaign

    out: List[str] = []
    for root in dict.fromkeys(roots):
        lines = deviation_lines(list(Campaign(root).records()))
        if lines:
            out += [lines[0], f"{lines[1]}: {root}", *lines[2:]]
    return "\n".join(out) + "\n" if out else ""
