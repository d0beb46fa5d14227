"""Expand a matrix and print every point with its exact command line; launch nothing."""

from __future__ import annotations

import argparse

from commstack import preflight
from commstack.cli.common import add_matrix_arguments, campaign_root, prepare_plan
from commstack.matrix.load import load_matrix
from commstack.preflight import add_allow_argument


def register(p: argparse.ArgumentParser) -> None:
    add_matrix_arguments(p)
    add_allow_argument(p)


def execute(args: argparse.Namespace) -> int:
    plan = prepare_plan(args, load_matrix(args.matrix))
    m = plan.matrix
    where = f"Slurm job {plan.allocation.job_id}" if plan.allocation else "this node"
    print(f"# launching on {where}; machine facts: "
          f"{plan.machine.path if plan.machine else 'none (defaults)'}")
    print(f"# campaign {campaign_root(args, m)}: {len(plan.points)} points x {m.repeats} repeats "
          f"= {len(plan.points) * m.repeats} runs, timeout {m.timeout:g}s per run")
    for prepared in plan.points:
        params = " ".join(f"{k}={v}" for k, v in prepared.point.params)
        extra = "  (oversubscribed)" if prepared.command.oversubscribed else ""
        print(f"{prepared.point.id}  {params}{extra}")
        print(f"    {prepared.command.shell()}")
    for point, why in plan.skipped:
        print(f"{point.id}  SKIPPED: {why}")
    verdict = preflight.default().check(plan, getattr(args, "allow_unlisted", ()))
    for line in verdict.messages():
        print(f"# pre-flight would refuse: {line}")
    for line in verdict.warnings:
        print(f"# pre-flight: {line}")
    return 0
