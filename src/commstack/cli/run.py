"""Run a matrix: every point and repeat not yet done, resuming an existing campaign."""

from __future__ import annotations

import argparse
import sys

from commstack.cli import plan as plan_command
from commstack.cli.common import add_matrix_arguments, campaign_root, prepare_plan
from commstack.machine.check import refuse_on_contradiction
from commstack.matrix.load import load_matrix
from commstack.preflight import add_allow_argument
from commstack.sweep import check_repeat, run_sweep


def register(p: argparse.ArgumentParser) -> None:
    add_matrix_arguments(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan, launch nothing")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again points whose last attempt failed (crash, timeout, parse error, "
                        "placement mismatch)")
    p.add_argument("--report", action="store_true", help="write the report when the sweep ends")
    p.add_argument("--repeat", type=int, default=None, metavar="K",
                   help="run only repeat K, every point once (a job of `commstack submit` when "
                        "repeats are taken across jobs)")
    p.add_argument("--parallel", type=int, default=1, metavar="K",
                   help="run up to K points side by side (small points sharing an allocation)")
    add_allow_argument(p)
    p.add_argument("--no-machine-check", action="store_true",
                   help="launch even if this host contradicts machine.yaml (node layout, step MPI plugins)")


def execute(args: argparse.Namespace) -> int:
    if args.dry_run:
        return plan_command.execute(args)
    matrix = load_matrix(args.matrix)
    check_repeat(matrix, args.repeat)
    plan = prepare_plan(args, matrix)
    simulated = bool(plan.points) and all(p.stack.kind.simulated for p in plan.points)
    if not (args.no_machine_check or simulated):  # a simulated machine is not this host
        refuse_on_contradiction(plan.machine, "run")
    root = campaign_root(args, plan.matrix)
    if plan.matrix.repeats_across == "jobs" and args.repeat is None:
        print(f"note: {plan.matrix.path.name} asks for its repeats across jobs "
              "(`commstack submit`); this run takes all of them in this allocation, and the "
              "report will say so", file=sys.stderr)
    result = run_sweep(plan, root, retry_failed=args.retry_failed, parallel=args.parallel,
                       allow_unlisted=args.allow_unlisted, only_repeat=args.repeat)
    print(f"campaign {root}: {result.ran} runs now, {result.skipped_done} already done, "
          f"{result.failed} failed"
          + (f", {result.deferred} left pending (not enough allocation time)" if result.deferred else "")
          + (" -- interrupted, run again to resume" if result.interrupted else ""), file=sys.stderr)
    if args.report and not result.interrupted:
        from commstack.report.document import write_report

        print(write_report(root))
    return result.exit_code
