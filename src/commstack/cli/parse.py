"""Parse a benchmark output file and print its results (one JSON object per line with --json)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from commstack.benchmarks import registry


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="stdout of one benchmark run")
    p.add_argument("--benchmark", required=True, choices=["imb", "cartex", "gasnet", "osu"],
                   help="output format (gasnet: testlarge or testsmall; osu: any osu_* MPI test)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")


def execute(args: argparse.Namespace) -> int:
    output = registry.parser_for(args.benchmark)(args.file.read_text(errors="replace"))
    rows = output.rows if hasattr(output, "rows") else [
        {"runtime": output.runtime, "ranks": output.ranks, **output.values}]
    for row in rows:
        if args.json:
            print(json.dumps(row, sort_keys=True))
        else:
            print("  ".join(f"{k}={v}" for k, v in row.items() if v is not None))
    return 0
