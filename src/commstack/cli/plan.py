"""Expand a matrix (or a tuning plan's step sweeps) and print every point with its exact command
line; launch nothing.

On this machine a plan is what `run` would do, so a missing stack is an error. A campaign of
another machine (its machine.yaml names the machine in `verify.this_machine`, and this host is
not it), or any campaign with --review, is planned for review: stacks not installed here are
shown as unresolved, and outside an allocation the commands are those of a Slurm job there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from commstack import preflight, run_order
from commstack.adaptive import within
from commstack.cli.common import add_matrix_arguments, campaign_root, machine_name, point_filter
from commstack.machine import Machine, find_machine
from commstack.matrix.load import load_matrix
from commstack.matrix.model import Matrix, Point
from commstack.plan import Plan, PreparedPoint, prepare
from commstack.preflight import add_allow_argument
from commstack.schedulers import registry
from commstack.schedulers.allocation import Allocation
from commstack.tune.plan import is_tune_plan


def register(p: argparse.ArgumentParser) -> None:
    add_matrix_arguments(p)
    add_allow_argument(p)
    p.add_argument("--json", action="store_true",
                   help="one JSON object per point (JSON Lines), for scripts")
    p.add_argument("--review", action="store_true",
                   help="show stacks not installed here as unresolved instead of stopping "
                        "(automatic for another machine's campaign)")


def execute(args: argparse.Namespace) -> int:
    # `run --dry-run` comes here with run's arguments, which have neither flag.
    args.json = getattr(args, "json", False)
    args.review = getattr(args, "review", False)
    if is_tune_plan(args.matrix):
        return _tune_plan(args)
    matrix = load_matrix(args.matrix)
    machine = find_machine(machine_name(args, matrix), matrix.path.parent, matrix.node_type)
    review, why = _review(args, machine)
    plan = prepare(matrix, machine, _allocation(args, machine, review),
                   select=point_filter(args, matrix), review=review)
    root = campaign_root(args, matrix)
    seed = run_order.seed_of(matrix, root.name)
    repeat = getattr(args, "repeat", None) or 1
    plan.points = run_order.ordered(plan.points, repeat, seed, point_of=lambda p: p.point)
    order = {"kind": "fixed" if seed is None else "shuffled", "seed": seed}
    if args.json:
        for i, line in enumerate(_objects(plan), 1):
            if line["skipped"] is None:
                line["order"] = dict(order, repeat=repeat, position=i)
            print(json.dumps(line, sort_keys=True, default=str))
        return 0
    _print_header(plan, root, why)
    print(f"# order: {run_order.describe(seed, matrix)}; the points below in the order of "
          f"repeat {repeat}")
    _print_points(plan)
    if review:
        print("# pre-flight: not run in a review (it asks the stacks, which are not here)")
        return 0
    verdict = preflight.default().check(plan, getattr(args, "allow_unlisted", ()))
    for line in verdict.messages():
        print(f"# pre-flight would refuse: {line}")
    for line in verdict.warnings:
        print(f"# pre-flight: {line}")
    return 0


def _review(args: argparse.Namespace, machine: Optional[Machine]) -> Tuple[bool, str]:
    """(review?, why) — another machine's campaign is always reviewed."""
    markers = ((machine.facts.get("verify") or {}).get("this_machine") or {}) if machine else {}
    if markers:
        from commstack.machine.check.identity import this_machine

        here, found = this_machine(markers)
        if not here:
            return True, f"not {machine.name} ({found})"
    return bool(args.review), "--review"


def _allocation(args: argparse.Namespace, machine: Optional[Machine], review: bool
                ) -> Optional[Allocation]:
    """The allocation the commands are for: this one, none (--local), or, for a review of a
    scheduler's machine's campaign outside any allocation, a job there (nodes unknown yet)."""
    if args.local:
        return None
    allocation = registry.current_allocation()
    if allocation is None and review and machine is not None and machine.scheduler:
        return Allocation("(review)", partition=machine.scheduler.get("partition"))
    return allocation


def _print_header(plan: Plan, root: Path, why: str) -> None:
    m = plan.matrix
    if plan.allocation is None:
        where = "this node"
    elif plan.allocation.job_id == "(review)":
        where = f"a {registry.of(plan.allocation, plan.machine).label} job on the machine"
    else:
        where = f"{registry.of(plan.allocation, plan.machine).label} job {plan.allocation.job_id}"
    print(f"# launching on {where}; machine facts: "
          f"{plan.machine.path if plan.machine else 'none (defaults)'}")
    if any(p.unresolved for p in plan.points) or why != "--review" or plan.skipped:
        print(f"# review ({why}): what is not installed here is marked UNRESOLVED")
    n, rule = len(plan.points), m.adaptive
    if rule is None:
        print(f"# campaign {root}: {n} points x {m.repeats} repeats "
              f"= {n * m.repeats} runs, timeout {m.timeout:g}s per run")
        return
    print(f"# campaign {root}: {n} points x {rule.min} to {rule.max} repeats (adaptive: until "
          f"the median's 95 % interval is within {within(rule)} at every result row) "
          f"= {n * rule.min} to {n * rule.max} runs, timeout {m.timeout:g}s per run")


def _print_points(plan: Plan, prefix: str = "") -> None:
    for prepared in plan.points:
        params = " ".join(f"{k}={v}" for k, v in prepared.point.params)
        extra = "  (oversubscribed)" if prepared.command.oversubscribed else ""
        print(f"{prefix}{prepared.point.id}  {params}{extra}")
        print(f"    {prepared.command.shell()}")
        for why in prepared.unresolved:
            print(f"    UNRESOLVED: {why}")
    for point, why in plan.skipped:
        print(f"{prefix}{point.id}  SKIPPED: {why}")


def _objects(plan: Plan, extra: Optional[Dict[str, Any]] = None) -> Iterable[Dict[str, Any]]:
    for prepared in plan.points:
        yield dict(_point_object(prepared), **(extra or {}))
    for point, why in plan.skipped:
        yield dict(_skipped_object(point, why), **(extra or {}))


def _point_object(prepared: PreparedPoint) -> Dict[str, Any]:
    command, point = prepared.command, prepared.point
    argv: List[str] = list(command.argv)
    start = argv.index(command.executable) if command.executable in argv else 0
    nodes = int(point.get("nodes", 1))
    per_node = int(point.get("ranks_per_node", 2))
    return {"point_id": point.id, "params": dict(point.params), "stack": prepared.stack.name,
            "flavour": prepared.stack.flavour, "nodes": nodes, "ranks_per_node": per_node,
            "ranks": command.ranks, "argv": argv, "benchmark_argv": argv[start:],
            "env": dict(command.env), "unresolved": list(prepared.unresolved),
            "oversubscribed": command.oversubscribed, "skipped": None}


def _skipped_object(point: Point, why: str) -> Dict[str, Any]:
    return {"point_id": point.id, "params": dict(point.params), "stack": point.get("stack"),
            "nodes": int(point.get("nodes", 1)), "skipped": why}


def _tune_plan(args: argparse.Namespace) -> int:
    from commstack.tune.plan import load_plan
    from commstack.tune.review import step_sweeps

    plan = load_plan(args.matrix)
    name = args.machine or plan.path.resolve().parent.name
    sweeps = list(step_sweeps(plan))
    total = 0
    verdict: Optional[Tuple[bool, str]] = None  # asked once: the probes run commands
    for sweep in sweeps:
        matrix: Matrix = sweep.matrix
        machine = find_machine(name, plan.path.parent, matrix.node_type)
        verdict = verdict or _review(args, machine)
        review, why = verdict
        prepared = prepare(matrix, machine, _allocation(args, machine, review), review=review)
        extra = {"case": sweep.case, "step": sweep.step}
        if args.json:
            for line in _objects(prepared, extra):
                line["candidate"] = {axis: line["params"].get(axis) for axis in sweep.axes}
                print(json.dumps(line, sort_keys=True, default=str))
            continue
        if total == 0:
            _print_header(prepared, args.out / name / (args.campaign or plan.campaign), why)
        case = ", ".join(f"{k}={v}" for k, v in sweep.case.items())
        print(f"## case {case}: step {sweep.step} ({', '.join(sweep.axes)}; earlier steps at "
              "their defaults)")
        _print_points(prepared)
        total += len(prepared.points)
    if not args.json:
        print(f"# {len(plan.case_list())} cases, {len(sweeps)} step sweeps, {total} points as "
              "reviewed (later steps sweep the same number of candidates around earlier winners)")
    return 0
