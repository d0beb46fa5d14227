"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from commstack.errors import CampaignError
from commstack.matrix.model import Matrix

if TYPE_CHECKING:
    from commstack.plan import Plan


def add_matrix_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("matrix", type=Path, help="matrix file (matrices/<machine>/<name>.yaml)")
    p.add_argument("--machine", default=None,
                   help="machine name for results/<machine>/ (default: the matrix's folder name)")
    p.add_argument("--out", type=Path, default=Path("results"),
                   help="results root (default: ./results)")
    p.add_argument("--campaign", default=None,
                   help="campaign name (default: the matrix's `campaign`, else its file name)")


    p.add_argument("--local", action="store_true",
                   help="launch with mpirun/mpiexec on this node even inside an allocation")
    p.add_argument("--nodes", type=int, default=None, help="only the points with this node count")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="only every N-th point starting at I (job arrays use this)")


def machine_name(args: argparse.Namespace, matrix: Matrix) -> str:
    return args.machine or matrix.path.resolve().parent.name


def campaign_root(args: argparse.Namespace, matrix: Matrix) -> Path:
    return args.out / machine_name(args, matrix) / (args.campaign or matrix.campaign)


def prepare_plan(args: argparse.Namespace, matrix: Matrix) -> "Plan":
    """The plan for this invocation: machine facts, the allocation, point selection."""
    from commstack.machine import find_machine
    from commstack.plan import prepare
    from commstack.schedulers import registry

    machine = find_machine(machine_name(args, matrix), matrix.path.parent, matrix.node_type)
    allocation = None if args.local else registry.current_allocation()
    return prepare(matrix, machine, allocation, select=point_filter(args, matrix))


def point_filter(args: argparse.Namespace, matrix: Matrix):
    from commstack.matrix.expand import expand

    keep = None
    if args.shard:
        try:
            index, count = (int(x) for x in args.shard.split("/"))
            assert 0 <= index < count
        except (ValueError, AssertionError):
            raise CampaignError(f"--shard {args.shard!r}: expected I/N with 0 <= I < N") from None
        ids = [p.id for p in expand(matrix) if args.nodes is None or p.get("nodes", 1) == args.nodes]
        keep = set(ids[index::count])

    def select(point) -> bool:
        if args.nodes is not None and point.get("nodes", 1) != args.nodes:
            return False
        return keep is None or point.id in keep

    return select


def existing_campaign(path: Path) -> Path:
    """``path`` if it is a campaign; else an error naming the campaigns found under it."""
    if (path / "campaign.json").is_file():
        return path
    if not path.is_dir():
        raise CampaignError(f"{path}: no such directory")
    from commstack.store.campaign import campaigns_under  # here: `plan` starts without the store

    found = campaigns_under(path)
    if not found:
        raise CampaignError(f"{path} is not a campaign directory (no campaign.json) and holds "
                            "no campaign")
    names = [p.relative_to(path).as_posix() for p in found]
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    root = min((p.parent.parent for p in found), key=lambda p: len(p.parts))  # <machine>/<name>
    raise CampaignError(f"{path} is not a campaign but holds {len(found)}: {shown}; give one "
                        f"(e.g. {found[0]}) or index them all with "
                        f"`commstack report --index {root}`")
