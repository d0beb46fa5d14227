"""How far to trust the simulation: simulated against measured, per benchmark, process count
and message size, from a campaign of matrices/local/smpi-vs-measured.yaml (the same IMB runs
measured with Debian's Open MPI and simulated by SimGrid SMPI on this machine's calibrated
platform).

For each (benchmark, np, bytes): the measured median over the repeats with its distribution-free
95 % interval (commstack.stats, as every report), the simulated value (every repeat of a
simulation without noise is the same number; checked), and their ratio simulated / measured.
Rows of oversubscribed runs are marked. Writes JSON (--out) and prints a Markdown table.

Usage: python bench/smpi_trust.py CAMPAIGN [--out bench/results/smpi_trust.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

from commstack import stats
from commstack.store.campaign import Campaign


def table(campaign: Path) -> List[Dict[str, Any]]:
    measured: Dict[Tuple, List[float]] = {}
    simulated: Dict[Tuple, List[float]] = {}
    over: Dict[Tuple, bool] = {}
    for record in Campaign(campaign).records():
        if not record.ok:
            continue
        for row in record.parsed:
            metric = "t_us" if row.get("t_us") is not None else "t_avg_us"
            if row.get(metric) is None or row.get("status", "ok") != "ok":
                continue
            if row.get("np") != record.ranks:
                continue
            key = (row["benchmark"], row["np"], row["bytes"])
            (simulated if record.simulated else measured).setdefault(key, []).append(
                float(row[metric]))
            over[key] = over.get(key, False) or bool(record.oversubscribed)
    rows = []
    for key in sorted(set(measured) & set(simulated)):
        m, s = measured[key], simulated[key]
        center = stats.describe(m)
        rows.append({"benchmark": key[0], "np": key[1], "bytes": key[2],
                     "measured_us": center.median, "measured_low": center.low,
                     "measured_high": center.high, "measured_n": center.n,
                     "simulated_us": s[0], "simulated_identical": len(set(s)) == 1,
                     "ratio": s[0] / center.median if center.median else None,
                     "oversubscribed": over[key]})
    return rows


def markdown(rows: List[Dict[str, Any]]) -> str:
    out = ["| benchmark | np | bytes | measured median [95 % interval] (n) µs | simulated µs | "
           "simulated / measured |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        interval = (f" [{r['measured_low']:.3g}–{r['measured_high']:.3g}]"
                    if r["measured_low"] is not None else "")
        mark = " (oversubscribed)" if r["oversubscribed"] else ""
        out.append(f"| {r['benchmark']} | {r['np']}{mark} | {r['bytes']} | "
                   f"{r['measured_us']:.3g}{interval} ({r['measured_n']}) | "
                   f"{r['simulated_us']:.3g} (simulated) | {r['ratio']:.2f} |")
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("campaign", type=Path)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    rows = table(args.campaign)
    if not rows:
        print(f"{args.campaign}: no benchmark, process count and size with both a measured and "
              "a simulated run", file=sys.stderr)
        return 2
    if args.out:
        args.out.write_text(json.dumps({"campaign": args.campaign.name, "rows": rows},
                                       indent=1) + "\n")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
