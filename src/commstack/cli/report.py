"""Write report.md with tables and plots for a campaign (aggregated over repeats).

  commstack report results/<machine>/<campaign> [--with CAMPAIGN ...]
  commstack report --index results      # results/README.md: one line per campaign
"""

from __future__ import annotations

import argparse
from pathlib import Path

from commstack.cli.common import existing_campaign
from commstack.errors import CampaignError
from commstack.optional import require


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", type=Path, nargs="?", help="results/<machine>/<campaign>")
    p.add_argument("--with", dest="others", action="append", default=[], type=Path,
                   metavar="CAMPAIGN",
                   help="another campaign whose records join the study sections (GASNet-EX "
                        "paper style: testlarge/testsmall with IMB-RMA and IMB-MPI1; repeatable)")
    p.add_argument("--index", type=Path, metavar="RESULTS",
                   help="write RESULTS/README.md indexing every campaign under RESULTS")


def execute(args: argparse.Namespace) -> int:
    if args.index is not None:
        from commstack.report.index import write_index

        print(write_index(args.index))
        if args.campaign is None:
            return 0
    if args.campaign is None:
        raise CampaignError("give a campaign directory (or --index RESULTS)")
    require("pandas", "report", "commstack report")
    require("matplotlib", "report", "commstack report").use("Agg")
    from commstack.report.document import write_report

    others = [existing_campaign(o) for o in args.others]
    print(write_report(existing_campaign(args.campaign), others))
    return 0
