"""Rehearse another machine's matrix or tuning plan on a local test machine (the Slurm test
cluster, slurm-ci, or a local Flux instance, flux-local: ``--on``), at small scale, before its
allocation is spent.

Node counts are capped to the cluster, ranks per node to its cores, sizes and iterations cut down
(each benchmark family's `scale_down`), one repeat; every stack runs as its local counterpart
(site-configs/<on>/counterparts.yaml, else slurm-ci's). Each point shape runs as a real step of
the test machine's scheduler, is parsed, and the report is written in the study's layout under a
banner saying it is a rehearsal. Results: <out>/<on>/rehearse-<machine>-<name>/ (rehearsal.yaml
and rehearsal.json say what changed).

``--simulate``: the machine's own node and rank counts on its simulated machine instead (SimGrid
SMPI on this node, commstack.rehearsal.simulate): <out>/<machine>/simulate-<name>/.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from commstack.errors import CampaignError
from commstack.machine import find_machine
from commstack.rehearsal import build, simulate
from commstack.rehearsal.counterparts import Counterparts, table_for
from commstack.rehearsal.scale import Budget
from commstack.schedulers import registry
from commstack.store.campaign import Campaign
from commstack.tune.plan import is_tune_plan

MACHINE = "slurm-ci"  # the default test machine: tests/cluster's three nodes


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", type=Path, nargs="+", metavar="SOURCE",
                   help="matrices/<machine>/<name>.yaml or plans/<machine>/<name>.yaml; several "
                        "matrices are reported together (the GASNet-EX paper's figure)")
    p.add_argument("--out", type=Path, default=Path("results"), help="results root")
    p.add_argument("--on", default=MACHINE, metavar="MACHINE",
                   help=f"the local test machine to rehearse on (site-configs/<MACHINE>; default "
                        f"{MACHINE}; flux-local: a local Flux instance)")
    p.add_argument("--time", default="30",
                   help="time limit in minutes of the allocation it asks for (default 30)")
    p.add_argument("--shapes", action="store_true",
                   help="one point per point shape (stack, executable, settings, flags), numeric "
                        "values from the first point of each: big matrices in minutes")
    p.add_argument("--dry-run", action="store_true",
                   help="write the rehearsal's matrix or plan and print its points; run nothing")
    p.add_argument("--simulate", action="store_true",
                   help="run it at the machine's own node and rank counts on its simulated "
                        "machine (SimGrid SMPI on this node; environments/local view smpi), not "
                        "cut down on the test cluster")


def execute(args: argparse.Namespace) -> int:
    missing = [str(s) for s in args.sources if not s.is_file()]
    if missing:
        raise CampaignError(f"no such matrix or plan: {', '.join(missing)}")
    roots: List[Path] = []
    status = 0
    for source in args.sources:
        root, code = _rehearse(source, args)
        roots.append(root)
        status = max(status, code)
    if args.dry_run:
        return status
    failed = 0
    for root in roots:
        others = [r for r in roots if r != root and (r / "campaign.json").is_file()]
        for report in _reports(root, others, _environment(args.sources[0])):
            print(f"rehearsal report: {report}")
        failed += _failed_runs(root)
    where = roots[0].parent if args.simulate else args.out / args.on
    print(f"rehearsal: {failed} failed runs in {len(roots)} campaign(s) under "
          f"{where}" + (f"; a run stopped with exit status {status}"
                        if status not in (0, 3) else ""))
    if status not in (0, 3) and not failed:
        return status
    return 3 if failed else 0


def _rehearse(source: Path, args: argparse.Namespace) -> Tuple[Path, int]:
    """Write one source's rehearsal and run it (or print its plan); its root and exit status."""
    kind = "plan" if is_tune_plan(source) else "matrix"
    if args.simulate:
        rehearsal = (simulate.plan_simulation(source) if kind == "plan"
                     else simulate.matrix_simulation(source))
        rehearsal.simulated = True
        machine = rehearsal.machine
    else:
        table = Counterparts.load(table_for(args.on))
        rehearsal = (build.plan_rehearsal(source, Budget(), table) if kind == "plan"
                     else build.matrix_rehearsal(source, Budget(), table, shapes=args.shapes))
        machine = args.on
        facts = find_machine(machine, source.parent)
        rehearsal.on = (machine, facts.facts.get("description") if facts else None)
    name = rehearsal.data["campaign"]
    root = args.out / machine / name
    target = build.write(rehearsal, root)
    for note in rehearsal.notes:
        print(f"rehearsal {name}: {note}")
    common = ["--machine", machine, "--out", str(args.out), "--campaign", name]
    env = _environment(source)
    if args.dry_run:
        return root, subprocess.run([sys.executable, "-m", "commstack", "plan", str(target),
                                     *common, "--review"], env=env).returncode
    command = [sys.executable, "-m", "commstack", "tune" if kind == "plan" else "run",
               str(target), *common]
    if args.simulate:  # one process on this node, whatever the allocation; deterministic
        command.append("--local")
        print("rehearsal: " + " ".join(command), flush=True)
        return root, subprocess.run(command, env=env).returncode
    scheduler = registry.for_machine(find_machine(machine, source.parent))
    if scheduler.allocation() is None:
        command = scheduler.allocate(rehearsal.nodes, args.time, command)
    print("rehearsal: " + " ".join(command), flush=True)
    status = subprocess.run(command, env=env).returncode
    if _failed_runs(root):
        # One more attempt of what failed (the first attempt's record stays): on the shared
        # 2-core cluster Debian's Open MPI now and then crashes in MPI_Init or MPI_Finalize;
        # what fails twice is the rehearsal's finding.
        print("rehearsal: retrying the failed runs once", flush=True)
        status = subprocess.run(command + ["--retry-failed"], env=env).returncode
    return root, status


def _environment(source: Path) -> Dict[str, str]:
    """The caller's environment, with the source checkout's environments/ for `spack: {env:
    local}` stacks wherever --out lies."""
    env = dict(os.environ)
    for folder in source.resolve().parents:
        if (folder / "environments" / "local" / "spack.yaml").is_file():
            env.setdefault("COMMSTACK_ENVIRONMENTS", str(folder / "environments"))
            break
    return env


def _campaigns(root: Path) -> List[Path]:
    """The rehearsal's campaigns: the root itself, or each step of a tuning plan."""
    if (root / "campaign.json").is_file():
        return [root]
    return sorted(p.parent for p in root.glob("*/*/campaign.json"))


def _reports(root: Path, others: List[Path], env: Dict[str, str]) -> List[Path]:
    written = []
    for campaign in _campaigns(root):
        if not any(Campaign(campaign).records()):
            continue
        joined = [arg for other in others for arg in ("--with", str(other))]
        proc = subprocess.run([sys.executable, "-m", "commstack", "report", str(campaign),
                               *joined], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"rehearsal: report of {campaign} failed: {proc.stderr.strip()}", file=sys.stderr)
            continue
        written.append(campaign / "report" / "report.md")
    return written


def _failed_runs(root: Path) -> int:
    failed = 0
    for campaign in _campaigns(root):
        latest: Dict[tuple, str] = {}
        for record in Campaign(campaign).records():
            latest[(record.point_id, record.repeat)] = record.status
        failed += sum(status != "ok" for status in latest.values())
    return failed
