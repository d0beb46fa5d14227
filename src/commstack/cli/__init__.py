"""The `commstack` command: one module per subcommand, each with register() and execute()."""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import List, Optional

from commstack import __version__

# Subcommand name -> module under commstack.cli. Only the module of the command given is
# imported, so `commstack status` does not pay for compare's or plan's imports.
COMMANDS = {"plan": "plan", "run": "run", "parse": "parse", "report": "report",
            "status": "status", "submit": "submit", "cancel": "cancel", "mirror": "mirror", "import": "import_",
            "compare": "compare", "tune": "tune", "machine": "machine", "rehearse": "rehearse",
            "query": "query", "history": "history",
            "dashboard": "dashboard"}

EXIT_STATUS = """\
exit status:
  0    success
  1    compare: a regression; machine check: a contradiction; query --guidelines: a violation
  2    a user error (bad matrix, missing file or binary); nothing was launched
  3    some runs failed (each is recorded)
  4    a file could not be written or read (disk full, permission denied); every run
       recorded so far is kept: fix the cause and run the same command again to resume
  5    machine check: this host is not the machine named (nothing was read)
  130  interrupted; run the same command again to resume
"""
# An error message line longer than this is cut: errors quote excerpts, never whole values.
MAX_LINE = 1000


def summary(module: ModuleType) -> str:
    """A subcommand's one-line help: the first paragraph of its docstring, unwrapped (a ``%``
    doubled: argparse formats help with ``%``, and "95 % interval" reads as a format)."""
    return " ".join((module.__doc__ or "").strip().split("\n\n")[0].split()).replace("%", "%%")


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"commstack.cli.{COMMANDS[name]}")


def chosen_command(argv: List[str]) -> Optional[str]:
    """The subcommand named on the command line, if any (the first word not an option)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` one subcommand's (the others as bare names)."""
    parser = argparse.ArgumentParser(
        prog="commstack", description="Sweep MPI benchmarks over communication stacks and knobs.",
        epilog=EXIT_STATUS, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"commstack {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        if only not in (None, name):
            sub.add_parser(name)
            continue
        module = command_module(name)
        module.register(sub.add_parser(name, help=summary(module), description=module.__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(chosen_command(argv)).parse_args(argv)
    try:
        return command_module(args.command).execute(args)
    except KeyboardInterrupt:
        print("commstack: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # user and system errors: one clear sentence, a documented status
        from commstack import errors
        from commstack.cli.user_errors import USER_ERRORS

        if isinstance(exc, USER_ERRORS):
            _error(args.command, str(exc))
            return errors.USER_ERROR_EXIT
        if errors.is_system_error(exc):
            _error(args.command, errors.describe_system_error(exc, args.command))
            return errors.SYSTEM_ERROR_EXIT
        raise  # a bug: keep the traceback


def _error(command: str, message: str) -> None:
    lines = [line if len(line) <= MAX_LINE else f"{line[:MAX_LINE]}… ({len(line)} characters)"
             for line in message.splitlines()]
    print(f"commstack {command}: error: " + "\n".join(lines), file=sys.stderr)
