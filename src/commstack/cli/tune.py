"""Tune runtime settings step by step, with the Oracle study's staged method.

Each step is a sweep whose winner is fixed into the next; writes ucx.env, mca-params.conf and a
decisions table.

A tune of simulated runs (SimGrid SMPI) says so in each of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from commstack.errors import CampaignError


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("plan", type=Path, nargs="?", help="tuning plan (plans/<machine>/<name>.yaml)")
    p.add_argument("--machine", default=None, help="machine name (default: the plan's folder)")
    p.add_argument("--out", type=Path, default=Path("results"), help="results root")
    p.add_argument("--campaign", default=None, help="campaign name (default: the plan's)")
    p.add_argument("--node-type", default=None, metavar="NAME",
                   help="tune on this node type of machine.yaml (e.g. nps1, nps2 on "
                        "bm-optimized3-36; default: the plan's base.node_type, else the "
                        "machine's default); the campaign is <campaign>-<NAME>")
    p.add_argument("--local", action="store_true", help="mpirun on this node even inside an allocation")
    p.add_argument("--retry-failed", action="store_true",
                   help="steps not decided yet run their failed runs again (a new attempt each)")
    p.add_argument("--budget", type=int, default=None, metavar="RUNS",
                   help="runs per raced step at most (a plan with racing:): the race stops "
                        "before a round that would go past it and says what is undecided")
    p.add_argument("--review", action="store_true",
                   help="print the runs the plan takes (per step: without racing, and a "
                        "race's fewest and most) and exit; nothing runs")
    p.add_argument("--compare-reference", type=Path, default=None, metavar="CSV|CAMPAIGN",
                   help="a reference decisions CSV (see --import-reference) to compare the "
                        "decisions with, or a campaign (e.g. imported raw outputs) to compare "
                        "the tuned settings' verify runs with")
    p.add_argument("--import-reference", type=Path, default=None, metavar="CSV",
                   help="normalise published decisions (oci_tuning_decisions.csv) into "
                        "results/bm-optimized3-36/reference-tuning/decisions.csv and exit")


def execute(args: argparse.Namespace) -> int:
    from commstack.tune import reference

    if args.import_reference:
        rows = reference.import_reference(args.import_reference.read_text())
        target = args.out / "bm-optimized3-36" / "reference-tuning" / "decisions.csv"
        reference.write_reference(rows, target)
        print(f"{len(rows)} published decisions -> {target}")
        return 0
    if args.plan is None:
        raise CampaignError("a tuning plan is needed (or --import-reference)")

    from commstack.benchmarks import registry
    from commstack.machine import find_machine
    from commstack.schedulers import registry as schedulers
    from commstack.store.files import replace
    from commstack.tune import export
    from commstack.tune.plan import load_plan
    from commstack.tune.staged import run_plan, tuned_parameters
    from commstack.tune.step_campaign import TuneInterrupted

    plan = load_plan(args.plan)
    if args.review:
        from commstack.tune.review import expected_runs

        print("\n".join(expected_runs(plan, args.budget)))
        return 0
    reference_figures = None
    if args.compare_reference and args.compare_reference.is_dir():
        from commstack.tune import against_campaign

        reference_figures = against_campaign.check_reference_campaign(args.compare_reference)
    elif args.compare_reference and not args.compare_reference.is_file():
        raise CampaignError(f"--compare-reference {args.compare_reference}: no such file or campaign")
    machine_name = args.machine or plan.path.resolve().parent.name
    node_type = args.node_type or plan.base.get("node_type")
    if node_type:
        plan.base["node_type"] = node_type  # the step matrices carry it (--constraint etc.)
    machine = find_machine(machine_name, plan.path.parent, node_type)
    allocation = None if args.local else schedulers.current_allocation()

    def campaign_root(kind: str | None) -> Path:
        name = args.campaign or plan.campaign
        return args.out / machine_name / (f"{name}-{kind}" if kind else name)

    root = campaign_root(node_type)
    try:
        results = run_plan(plan, root, machine, allocation, elsewhere=campaign_root,
                           retry_failed=args.retry_failed, budget=args.budget)
    except TuneInterrupted as exc:
        print(f"commstack tune: {exc}")
        return 130
    names = tuned_parameters(plan)
    bench = registry.get(plan.base["benchmark"])
    failed = 0
    for res in results:
        summary = export.write_case_files(res, bench)
        slower = summary["verify"]["slower"] if not res.kept_default else []
        failed += bool(slower)
        print(f"{res.directory}/tuned: " + ", ".join(f"{k}={v}" for k, v in res.settings.items())
              + f"  ({summary['outcome']})"
              + (f"  (slower than default at {slower} bytes!)" if slower else ""))
    rows = export.decisions_table(results, names)
    nps = (machine.node or {}).get("nps") if machine else None
    if nps is not None:  # a machine fact (BIOS), the same for every case of this run
        for row in rows:
            row["nps"] = nps
    replace(root / "decisions.md", export.table_markdown(rows, results).encode())
    replace(root / "decisions.csv", export.table_csv(rows).encode())
    print(f"decisions: {root / 'decisions.md'}")
    if reference_figures is not None:
        text = against_campaign.comparison(results, args.compare_reference, reference_figures)
        replace(root / "reference-comparison.md", text.encode())
        print(text)
    elif args.compare_reference:
        lines = reference.compare(rows, reference.read_reference(args.compare_reference))
        text = export.table_markdown(lines)
        replace(root / "reference-comparison.md", text.encode())
        print(text)
    return 0 if not failed else 3
