"""Parse a benchmark output file and print its results (one JSON object per line with --json)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commstack.benchmarks import registry
from commstack.benchmarks.base import ParseError
from commstack.errors import USER_ERROR_EXIT

# As for `commstack run`: the run (here: the one in FILE) failed, its output read to the end.
RUN_FAILED_EXIT = 3


def register(p: argparse.ArgumentParser) -> None:
    formats = registry.formats()
    p.add_argument("file", type=Path, help="stdout of one benchmark run")
    p.add_argument("--benchmark", required=True, choices=formats, metavar="FORMAT",
                   help=f"output format: {', '.join(formats)} (gasnet: testlarge or testsmall; "
                        "osu: any osu_* MPI test)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.epilog = (
        "The parser's notes are printed as 'warning: ...' lines on stderr.\n\n"
        "exit status:\n"
        "  0  the output is a complete result of what was asked\n"
        f"  {USER_ERROR_EXIT}  the output is not a complete result: empty, cut off or malformed (the\n"
        "     message names FILE and the line; nothing is printed on stdout); or FILE does not\n"
        "     exist, or FORMAT is unknown\n"
        f"  {RUN_FAILED_EXIT}  the run measured something other than what was asked although its\n"
        "     output is complete (IMB's 'Invalid benchmark name': IMB runs its default list\n"
        "     and exits 0); its rows are still printed\n"
        "  4  FILE cannot be read (permission denied, a directory, ...)\n")


def execute(args: argparse.Namespace) -> int:
    text = args.file.read_text(errors="replace")
    benchmark = _benchmark_of(args.benchmark)
    try:
        output = benchmark.parse(text)
    except ParseError as exc:
        print(f"commstack parse: error: {args.file}: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    for row in output.rows:
        if args.json:
            print(json.dumps(row, sort_keys=True))
        else:
            print("  ".join(f"{k}={v}" for k, v in row.items() if v is not None))
    for note in output.notes:
        print(f"warning: {note}", file=sys.stderr)
    fatal = benchmark.fatal(output)
    if fatal:
        print(f"commstack parse: error: {args.file}: the run did not run what was asked: "
              + "; ".join(fatal), file=sys.stderr)
        return RUN_FAILED_EXIT
    return 0


def _benchmark_of(format_name: str) -> registry.Benchmark:
    """The first benchmark with this output format: its parser and fatal notes."""
    return next(b for b in registry.BENCHMARKS.values() if b.format == format_name)
