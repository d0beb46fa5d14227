"""The `commstack` command: one module per subcommand, each with register() and execute()."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from commstack import __version__
from commstack.cli import compare, import_, mirror, parse, plan, report, run, status, submit, tune

COMMANDS = {"plan": plan, "run": run, "parse": parse, "report": report, "status": status,
            "submit": submit, "mirror": mirror}
COMMANDS["import"] = import_
COMMANDS["compare"] = compare
COMMANDS["tune"] = tune


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="commstack", description="Sweep MPI benchmarks over communication stacks and knobs."
    )
    parser.add_argument("--version", action="version", version=f"commstack {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        module.register(sub.add_parser(name, help=module.__doc__.strip().splitlines()[0],
                                       description=module.__doc__))
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].execute(args)
    except KeyboardInterrupt:
        print("commstack: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # user errors: one clear line, non-zero exit
        from commstack.errors import USER_ERRORS

        if isinstance(exc, USER_ERRORS):
            print(f"commstack {args.command}: error: {exc}", file=sys.stderr)
            return 2
        raise
