"""Write a static, self-contained dashboard of a results store (one HTML file, no server).

  commstack dashboard results/ [more campaigns or folders] --out site/ [--title TEXT]

Per machine, stack and benchmark: the size curves of every campaign (medians with their 95 %
intervals), the history of a message size over the campaigns' dates with stack changes marked,
every campaign's failed and unclean runs, and each campaign compared with the one that ran its
matrix before it (commstack.dashboard, commstack.compare_previous). site/index.html opens from
disk or any static host, offline: Plotly's JavaScript (extra `dashboard`) is inlined.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", type=Path, nargs="+", help="results/, results/<machine>/ or campaigns")
    p.add_argument("--out", type=Path, required=True, help="folder for index.html")
    p.add_argument("--title", default="commstack results", help="the page's title")


def execute(args: argparse.Namespace) -> int:
    from commstack import dashboard
    from commstack.optional import require
    from commstack.store.results import open_store

    require(*dashboard.PLOTLY)  # before reading anything
    con = open_store(args.paths)
    try:
        counts = dashboard.write(con, args.out, args.title, args.paths)
    finally:
        con.close()
    print(f"{args.out / 'index.html'}: {counts['campaigns']} campaign(s), {counts['curves']} size "
          f"curve(s), {counts['history']} history series, {counts['failed']} failed run(s), "
          f"{counts['comparisons']} comparison(s) with an earlier campaign, "
          f"{counts['bytes'] / 1e6:.1f} MB", file=sys.stderr)
    return 0
