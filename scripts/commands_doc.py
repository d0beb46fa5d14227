#!/usr/bin/env python3
"""Rewrite the ``--help`` blocks of docs/reference/commands.md from the commands themselves.

Each block is what ``commstack WORDS --help`` prints at 100 columns (``COLUMNS=100``, no colour,
this checkout's src/ first on the path), between two markers::

    <!-- help: commstack WORDS -->
    ```text
    (the help, written by this script)
    ```
    <!-- /help -->

The hand-written text around the blocks is kept. Every command line must have its block:
``commstack`` itself, each subcommand of ``commstack.cli``, and for a subcommand with actions
(``machine``) each action instead; a block naming no command line is an error too.

    python scripts/commands_doc.py          # rewrite the page
    python scripts/commands_doc.py --check  # exit 1 naming the blocks that differ; write nothing

tests/test_commands_doc.py runs ``--check``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "reference" / "commands.md"
COLUMNS = "100"
BLOCK = re.compile(r"^<!-- help: (commstack(?: [a-z_-]+)*) -->\n.*?^<!-- /help -->$",
                   flags=re.M | re.S)
OPENING = re.compile(r"^<!-- help:", flags=re.M)


def command_lines() -> List[str]:
    """Every command line that has its own help: ``commstack``, then each leaf of the parser."""
    sys.path.insert(0, str(REPO / "src"))
    from commstack.cli import build_parser

    return ["commstack"] + [" ".join(("commstack",) + words) for words in _leaves(build_parser())]


def _leaves(parser: argparse.ArgumentParser, words: Tuple[str, ...] = ()) -> List[Tuple[str, ...]]:
    # argparse has no public way to list a parser's subparsers: its actions are where they are.
    groups = [action for action in parser._actions
              if isinstance(action, argparse._SubParsersAction)]
    if not groups:
        return [words] if words else []
    return [leaf for group in groups for name, sub in group.choices.items()
            for leaf in _leaves(sub, words + (name,))]


def help_text(command_line: str) -> str:
    """``COMMAND_LINE --help`` as this checkout's commstack prints it, in a fixed environment."""
    env = {"PATH": os.environ.get("PATH", ""), "COLUMNS": COLUMNS, "NO_COLOR": "1",
           "PYTHON_COLORS": "0", "PYTHONIOENCODING": "utf-8", "PYTHONPATH": str(REPO / "src")}
    words = command_line.split()[1:]
    done = subprocess.run([sys.executable, "-m", "commstack", *words, "--help"], env=env,
                          cwd=REPO, capture_output=True, text=True, encoding="utf-8",
                          timeout=120, check=False)
    if done.returncode != 0:
        raise SystemExit(f"commands_doc: `{command_line} --help` exited {done.returncode}:\n"
                         f"{done.stderr}")
    return done.stdout.rstrip()


def block(command_line: str, text: str) -> str:
    return f"<!-- help: {command_line} -->\n```text\n{text}\n```\n<!-- /help -->"


def rewritten(page: str, helps: Dict[str, str]) -> str:
    """The page with each block's help replaced; SystemExit naming what is missing or unknown."""
    found = [match.group(1) for match in BLOCK.finditer(page)]
    if len(OPENING.findall(page)) != len(found):
        raise SystemExit("commands_doc: a `<!-- help: commstack ... -->` marker without its "
                         "`<!-- /help -->`, or naming a command in capitals")
    unknown = sorted(set(found) - set(helps))
    absent = [line for line in helps if line not in found]
    if unknown or absent:
        raise SystemExit("commands_doc: "
                         + (f"blocks of no command: {', '.join(unknown)}. " if unknown else "")
                         + (f"commands without a block: {', '.join(absent)}; add under each "
                            "command's section the two lines `<!-- help: COMMAND LINE -->` and "
                            "`<!-- /help -->`, then run this script" if absent else ""))
    return BLOCK.sub(lambda match: block(match.group(1), helps[match.group(1)]), page)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 naming the blocks that differ; write nothing")
    parser.add_argument("--page", type=Path, default=PAGE,
                        help="the page (default: docs/reference/commands.md)")
    args = parser.parse_args(argv)
    if sys.version_info < (3, 10):
        raise SystemExit("commands_doc: argparse before Python 3.10 titles the options "
                         "'optional arguments:'; run this with Python 3.10 or later")
    page = args.page.read_text(encoding="utf-8")
    helps = {line: help_text(line) for line in command_lines()}
    new = rewritten(page, helps)
    if args.check:
        old_blocks = {match.group(1): match.group(0) for match in BLOCK.finditer(page)}
        stale = [line for line, text in helps.items() if old_blocks[line] != block(line, text)]
        if stale:
            print(f"{args.page.name}: the --help of {', '.join(stale)} differs; run "
                  "python scripts/commands_doc.py", file=sys.stderr)
            return 1
        return 0
    if new != page:
        args.page.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
