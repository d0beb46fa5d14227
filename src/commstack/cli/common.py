"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path

from commstack.errors import CampaignError
from commstack.matrix.model import Matrix


def add_matrix_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("matrix", type=Path, help="matrix file (matrices/<machine>/<name>.yaml)")
    p.add_argument("--machine", default=None,
                   help="machine name for results/<machine>/ (default: the matrix's folder name)")
    p.add_argument("--out", type=Path, default=Path("results"),
                   help="results root (default: ./results)")
    p.add_argument("--campaign", default=None,
                   help="campaign name (default: the matrix's `campaign`, else its file name)")


def campaign_root(args: argparse.Namespace, matrix: Matrix) -> Path:
    machine = args.machine or matrix.path.resolve().parent.name
    return args.out / machine / (args.campaign or matrix.campaign)


def existing_campaign(path: Path) -> Path:
    if not (path / "campaign.json").is_file():
        raise CampaignError(f"{path} is not a campaign directory (no campaign.json)")
    return path
