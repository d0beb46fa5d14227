"""Every compiled regular expression of commstack against long runs of one character.

A pattern whose matching backtracks (``\\d+`` searched in a run of digits before a literal that
is not there, overlapping quantifiers) takes time quadratic in the line: a 400 kB line of a
damaged or hostile file then takes minutes. This imports every module of the package, collects
the compiled patterns held at module level (also inside dicts, lists and tuples), and times
``search`` and ``match`` of each on probes of ``--length`` characters (digits, blanks, '|',
'_ ', '1.', ...). Patterns slower than ``--budget`` seconds on a probe are printed with the probe,
and the exit status is 1. A pattern used only with ``fullmatch`` is listed with ``--fullmatch``
(fullmatch of a leading quantifier fails without trying later starts, so it is linear).

Usage: python bench/regex_audit.py [--length 20000] [--budget 0.05] [--fullmatch NAME ...]
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import time
from typing import Iterator, List, Tuple

import commstack

# Used only with fullmatch (placement/reports.py: a wrapped map line).
FULLMATCH_ONLY = {"commstack.placement.reports._MAP_LINE"}


def probes(n: int) -> List[str]:
    runs = ["1", " ", "\t", "_ ", "`a", "-", "a", "# ", "--", "1.", "1 ", "[1]", "f", "1,", "a:",
            "=", "|", "| 1 ", "1e", ".", "a-", "[a:1] "]
    return [(run * (n // len(run) + 1))[:n] + "x" for run in runs]


def patterns() -> Iterator[Tuple[str, "re.Pattern[str]"]]:
    seen = set()
    for info in pkgutil.walk_packages(commstack.__path__, "commstack."):
        if info.name.endswith("__main__"):
            continue  # runs the CLI when imported
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            items = (value.items() if isinstance(value, dict) else
                     enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)])
            for key, item in items:
                if isinstance(item, re.Pattern) and isinstance(item.pattern, str) \
                        and id(item) not in seen:
                    seen.add(id(item))
                    yield f"{info.name}.{name}" + ("" if key is None else f"[{key!r}]"), item


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=20000)
    parser.add_argument("--budget", type=float, default=0.05, help="seconds per probe")
    args = parser.parse_args()
    lines = probes(args.length)
    slow, count = [], 0
    for name, pattern in patterns():
        count += 1
        calls = ([pattern.fullmatch] if name in FULLMATCH_ONLY else
                 [pattern.search, pattern.match])
        worst, probe = 0.0, ""
        for line in lines:
            for call in calls:
                begin = time.perf_counter()
                call(line)
                took = time.perf_counter() - begin
                if took > worst:
                    worst, probe = took, line[:4]
        if worst > args.budget:
            slow.append((worst, name, probe, pattern.pattern))
    for worst, name, probe, text in sorted(slow, reverse=True):
        print(f"{worst:8.3f} s  {name}  probe {probe!r}...  {text[:80]!r}")
    print(f"{count} patterns, {len(lines)} probes of {args.length} characters: "
          f"{len(slow)} slower than {args.budget} s")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
