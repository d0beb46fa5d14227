"""A figure over time: chosen points across every campaign of a results store, one median with
its 95 % interval per campaign, stack changes marked; as a table and a plot.

  commstack history results/ --where test=PingPong --where bytes=1024 [--since 2026-03-01]
                    [--until DATE] [--ignore PARAM] [--out DIR] [--csv]

Every campaign at or below the paths is read through its Parquet index (rebuilt from the records
when missing or stale) and its sessions' provenance (commstack.store.results). A point is a
result row (machine, stack, benchmark, test, np, bytes, ...) with its parameters; ``--where``
keeps the points whose row column or parameter has that value (a point without the key is not
kept), ``--ignore`` leaves a parameter out of what tells points apart (a knob that differs between
campaigns of the same point). With ``--out`` the table (history.md, history.csv) and the plot
(history.png) are written there.

A simulated run's values (SimGrid SMPI) form series of their own, never a measured series: their
label says "(simulated)", their origin "simulated on <platform>", and the note under the table
counts them; ``--where origin=measured`` (or ``simulated``) keeps one kind.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commstack.errors import CampaignError


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", type=Path, nargs="+", help="results/, results/<machine>/ or campaigns")
    p.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                   help="keep points with this row column or parameter value (repeatable)")
    p.add_argument("--since", default=None, metavar="DATE", help="runs from this date (UTC)")
    p.add_argument("--until", default=None, metavar="DATE", help="runs before this date (UTC)")
    p.add_argument("--ignore", action="append", default=[], metavar="PARAM",
                   help="parameter that does not tell points apart (repeatable)")
    p.add_argument("--out", type=Path, default=None,
                   help="write history.md, history.csv and history.png here")
    p.add_argument("--csv", action="store_true", help="print CSV instead of Markdown")


def execute(args: argparse.Namespace) -> int:
    from commstack import history as hist
    from commstack.cli.query import to_csv
    from commstack.markdown_table import table
    from commstack.store.files import replace
    from commstack.store.results import open_store

    where = hist.parse_where(args.where)
    since = hist.parse_date(args.since) if args.since else None
    until = hist.parse_date(args.until) if args.until else None
    con = open_store(args.paths)
    try:
        series = hist.history(con, where, since, until, args.ignore)
    finally:
        con.close()
    if not series:
        raise CampaignError("no successful result matches " + (
            " ".join(f"{k}={v}" for k, v in where.items()) or "the store") + (
            f" since {args.since}" if args.since else ""))
    headers, rows = hist.table_rows(series)
    markdown = "\n".join(table(headers, rows)) + "\n"
    changes = sum(1 for s in series for e in s.entries if e.change)
    simulated = sorted({s.simulated for s in series if s.simulated})
    note = (f"\n{len(series)} point(s) over {len({e.campaign for s in series for e in s.entries})}"
            f" campaign(s); {changes} stack change(s) marked. median: of the campaign's repeats;"
            " low/high: its 95 % interval (none below 6 repeats).\n")
    if simulated:
        note += (f"{sum(1 for s in series if s.simulated)} point(s) are simulated, not measured "
                 f"(on {' and '.join(simulated)}; label `(simulated)`, origin `simulated on "
                 "<platform>`): a simulator's numbers, never one series with measured ones.\n")
    sys.stdout.write(to_csv(headers, rows) if args.csv else markdown + note)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        replace(args.out / "history.md", (markdown + note).encode())
        replace(args.out / "history.csv", to_csv(headers, rows).encode())
        drawn = hist.plot(series, args.out / "history.png")
        print(f"wrote {args.out}/history.md, history.csv, history.png ({drawn} panel(s)"
              + (f"; {len(series) - drawn} more point(s) in the table only" if drawn < len(series)
                 else "") + ")", file=sys.stderr)
    return 0
