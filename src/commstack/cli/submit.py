"""Submit a matrix to the machine's scheduler as batch jobs; --resume resubmits what is not done.

One batch job per node-count group, or job arrays.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from commstack.cli.common import add_matrix_arguments, campaign_root, machine_name
from commstack.errors import CampaignError
from commstack.machine import find_machine
from commstack.machine.check import refuse_on_contradiction
from commstack.matrix.load import load_matrix
from commstack.plan import prepare
from commstack.schedulers import campaign_jobs, registry
from commstack.schedulers.allocation import Allocation
from commstack.store.campaign import Campaign


def register(p: argparse.ArgumentParser) -> None:
    add_matrix_arguments(p)
    p.add_argument("--resume", action="store_true",
                   help="submit jobs for what is not done (skipping node counts with jobs queued)")
    p.add_argument("--retry-failed", action="store_true", help="also rerun failed runs")
    p.add_argument("--array", type=int, default=0, metavar="RUNS",
                   help="use job arrays with about RUNS runs per array task (points are independent)")
    p.add_argument("--repeats-across-jobs", action="store_true",
                   help="one job per repeat, each running every point once (the matrix's "
                        "`repeats_across: jobs` does the same)")
    p.add_argument("--time", help="time limit per job (default: machine.yaml scheduler.time_limit)")
    p.add_argument("--partition")
    p.add_argument("--account")
    p.add_argument("--qos")
    p.add_argument("--constraint")
    p.add_argument("--dry-run", action="store_true", help="print the batch scripts, submit nothing")
    p.add_argument("--no-machine-check", action="store_true",
                   help="submit even if this host contradicts machine.yaml (node layout, step MPI plugins)")


def execute(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    machine = find_machine(machine_name(args, matrix), matrix.path.parent, matrix.node_type)
    # Validate every point and binary now, not on the compute node an hour later.
    plan = prepare(matrix, machine, Allocation("submit"))
    if not (args.no_machine_check or args.dry_run):
        refuse_on_contradiction(machine, "submit")
    root = campaign_root(args, matrix)
    campaign = Campaign(root)
    scheduler = registry.for_machine(machine)
    earlier = campaign_jobs.submitted_jobs(campaign)
    active = scheduler.queue_states([j["job_id"] for j in earlier
                                     if campaign_jobs.scheduler_of(j).name == scheduler.name])
    if earlier and not args.resume:
        raise CampaignError(f"{root}: jobs were submitted before ({len(earlier)}); use --resume")
    busy = {(j["nodes"], j.get("repeat")) for j in earlier if j["job_id"] in active}
    per_repeat = args.repeats_across_jobs or matrix.repeats_across == "jobs"
    if per_repeat and args.array:
        raise CampaignError("--array and repeats across jobs exclude each other: a job of "
                            "repeat K already runs every point once")

    groups = campaign_jobs.pending_work(campaign, [p.point for p in plan.points], matrix.repeats,
                                        args.retry_failed, per_repeat, matrix)
    options = scheduler.job_options(
        machine, time=args.time, partition=args.partition, account=args.account, qos=args.qos,
        constraint=args.constraint)
    run_args = [str(matrix.path.resolve()), "--out", str(args.out.resolve()),
                "--machine", machine_name(args, matrix), "--campaign", campaign.name]
    if args.retry_failed:
        run_args.append("--retry-failed")
    if args.no_machine_check:
        run_args.append("--no-machine-check")
    if not args.dry_run:
        campaign.ensure({"campaign": campaign.name, "machine": campaign.machine,
                         "benchmark": matrix.benchmark.name, "matrix": str(matrix.path)})
    submitted = 0
    for (nodes, repeat), request in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        label = f"nodes={nodes}" + (f" repeat={repeat}" if repeat else "")
        if (nodes, repeat) in busy:
            print(f"{label}: a job is still queued or running; not resubmitted")
            continue
        if args.array:
            request.shards = max(1, min(request.points, math.ceil(request.runs / args.array)))
        script = scheduler.batch_script(request, run_args, options, campaign, Path.cwd())
        if args.dry_run:
            print(f"# {label}: {request.runs} runs\n{script}")
            continue
        job = campaign_jobs.submit(scheduler, script, campaign, request)
        submitted += 1
        kind = f"array of {request.shards}" if request.shards > 1 else "job"
        print(f"{label}: {request.runs} runs -> {kind} {job}")
    if not groups:
        print(f"{root}: nothing left to run")
    elif not args.dry_run:
        print(f"{submitted} job(s) submitted; follow with: commstack status {root}")
    return 0
