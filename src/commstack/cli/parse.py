"""Parse a benchmark output file and print its results (one JSON object per line with --json)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from commstack import bounds
from commstack.benchmarks import registry
from commstack.benchmarks.base import ParseError
from commstack.errors import USER_ERROR_EXIT
from commstack.placement import reports as binding_reports

# As for `commstack run`: the run (here: the one in FILE) failed, its output read to the end.
RUN_FAILED_EXIT = 3


def register(p: argparse.ArgumentParser) -> None:
    formats = registry.formats()
    p.add_argument("file", type=Path, help="stdout of one benchmark run")
    p.add_argument("--benchmark", choices=formats, metavar="FORMAT",
                   help=f"output format: {', '.join(formats)} (gasnet: testlarge or testsmall; "
                        "osu: any osu_* MPI test)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--placement", action="store_true",
                   help="read FILE's binding report instead (Open MPI --report-bindings, Intel MPI "
                        "I_MPI_DEBUG pin table, hydra HYDRA_TOPO_DEBUG, srun --cpu-bind=verbose): "
                        "one rank per line; --json: {rank, host, cpus, bound, numbering}")
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
        "  4  FILE cannot be read (permission denied, a directory, ...)\n\n"
        f"FILE may be at most {bounds.MAX_OUTPUT_BYTES // bounds.MiB} MiB (docs/reference/input-limits.md).\n")


def execute(args: argparse.Namespace) -> int:
    text = bounds.read_text(args.file, bounds.MAX_OUTPUT_BYTES, "a benchmark output or report",
                            errors="replace")
    if args.placement:
        return _placement(args.file, text, args.json)
    if args.benchmark is None:
        print("commstack parse: error: --benchmark FORMAT is required (or --placement)",
              file=sys.stderr)
        return USER_ERROR_EXIT
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


# --- --placement: the binding report in FILE ----------------------------------------------------
def _placement(path: Path, text: str, as_json: bool) -> int:
    """Print each rank's binding as the report states it; notes on what it does not print go to
    stderr. The MPI's own report is shown; another one in FILE (srun's) is named in a warning."""
    try:
        found = binding_reports.find_reports(text)
    except ParseError as exc:
        print(f"commstack parse: error: {path}: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    if not found:
        wanted = ", ".join(binding_reports.LABELS.values())
        print(f"commstack parse: error: {path}: no binding report found (looked for {wanted})",
              file=sys.stderr)
        return USER_ERROR_EXIT
    shown = found[0]
    rows = []
    for binding in shown.bindings:
        numbering, cpus = binding_reports.printed_cpus(binding)
        row = {"rank": binding.rank, "host": binding.host, "cpus": cpus, "bound": binding.bound,
               "numbering": numbering}
        if binding.rank is None:  # hydra: numbered per node only
            row.update(local=binding.local, node=binding.node)
        rows.append(row)
    if as_json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(f"# {shown.label}")
        print(f"{'rank':>6}  {'host':<24} {'bound':<5}  cpus")
        for row in rows:
            rank = row["rank"] if row["rank"] is not None else f"n{row['node']}p{row['local']}"
            cpus = binding_reports.cpu_ranges(row["cpus"])
            where = f" ({row['numbering']})" if row["numbering"] else ""
            print(f"{rank:>6}  {row['host'] or '-':<24} {'yes' if row['bound'] else 'no':<5}  "
                  f"{cpus}{where}")
    for note in shown.notes:
        print(f"warning: {note}", file=sys.stderr)
    if shown.bindings[0].logical_pus is not None or shown.bindings[0].logical_cores is not None:
        print("warning: Open MPI numbers hwloc logical processors or cores, not OS processor "
              "numbers (`numbering`)", file=sys.stderr)
    for other in found[1:]:
        print(f"warning: {path} also holds a {other.label} report ({len(other.bindings)} ranks); "
              f"shown: {shown.label}", file=sys.stderr)
    return 0
