"""Write report.md with tables and plots for a campaign (aggregated over repeats)."""

from __future__ import annotations

import argparse
from pathlib import Path

from commstack.cli.common import existing_campaign


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", type=Path, help="results/<machine>/<campaign>")


def execute(args: argparse.Namespace) -> int:
    from commstack.report.markdown import write_report

    print(write_report(existing_campaign(args.campaign)))
    return 0
