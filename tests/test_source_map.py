"""docs/reference/source-layout.md, the map of the code (issue 39): it names every file of the
package, every command and every script, and nothing that is gone.

How the page names things: each Markdown table's header starts with a code span naming a folder
of the checkout (`src/commstack/`, `bench/`, `scripts/`; `./` is the checkout itself), and the
first cell of each of its rows is a code span naming a path in that folder (`store/record.py`,
`tests/cluster/`; a ``<word>`` such as ``<machine>`` stands for any name). The rules:

* every file under src/commstack/ (modules and the data files beside them; caches aside) is
  named, except that an ``__init__.py`` which only hands names on (nothing but a docstring,
  imports and ``__all__``) may instead be named by its package folder (``store/``);
* every command of ``commstack.cli.COMMANDS`` is named as ``commstack NAME`` on the page;
* every file directly in bench/ and scripts/ is named;
* every path named exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Set

from tests.conftest import REPO

PAGE = REPO / "docs" / "reference" / "source-layout.md"
PACKAGE = "src/commstack/"
SCRIPT_FOLDERS = ("bench/", "scripts/")
FIRST_CELL = re.compile(r"^\|\s*`([^`]+)`\s*\|")
SEPARATOR = re.compile(r"^\|[\s:|-]+\|$")
PLACEHOLDER = re.compile(r"<[^>]+>")


def named_paths(text: str) -> Dict[str, str]:
    """Each path the page's tables name, relative to the checkout -> the table folder and the
    name as written (for messages)."""
    named: Dict[str, str] = {}
    folder = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("|"):
            folder = None
            continue
        if SEPARATOR.match(line):
            continue
        cell = FIRST_CELL.match(line)
        assert cell, f"{PAGE.name}:{number}: a table row whose first cell is not one `path`"
        if folder is None:
            folder = cell.group(1)
            continue
        path = cell.group(1) if folder == "./" else folder.rstrip("/") + "/" + cell.group(1)
        named[path] = f"{folder}: {cell.group(1)}"
    return named


def hands_names_on(init: Path) -> bool:
    """An ``__init__.py`` of nothing but a docstring, imports and ``__all__``."""
    for position, node in enumerate(ast.parse(init.read_text()).body):
        docstring = (position == 0 and isinstance(node, ast.Expr)
                     and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))
        exports = isinstance(node, ast.Assign) and all(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets)
        if not (docstring or exports or isinstance(node, (ast.Import, ast.ImportFrom))):
            return False
    return True


def wanted() -> Dict[str, Set[str]]:
    """What the page must name: each file, as the paths (relative to the checkout) any one of
    which names it."""
    found: Dict[str, Set[str]] = {}
    for path in sorted((REPO / PACKAGE).rglob("*")):
        if (not path.is_file() or path.name.startswith(".") or "__pycache__" in path.parts
                or path.suffix == ".pyc"):
            continue
        relative = path.relative_to(REPO).as_posix()
        found[relative] = {relative}
        if path.name == "__init__.py" and path.parent != REPO / PACKAGE and hands_names_on(path):
            found[relative].add(relative[:-len("__init__.py")])
    for folder in SCRIPT_FOLDERS:
        for path in sorted((REPO / folder).iterdir()):
            if path.is_file() and not path.name.startswith("."):
                found[f"{folder}{path.name}"] = {f"{folder}{path.name}"}
    return found


def missing(text: str) -> List[str]:
    """The files the page does not name, each as the row to add and the table it goes in."""
    named = set(named_paths(text))
    rows = []
    for path, names in wanted().items():
        if names & named:
            continue
        folder = PACKAGE if path.startswith(PACKAGE) else path.split("/")[0] + "/"
        shortest = min(names, key=len)[len(folder):]
        rows.append(f"| `{shortest}` | ... |   (a table headed `{folder}`)")
    return rows


def stale(text: str) -> List[str]:
    """The paths the page names that do not exist (a ``<word>`` matching any name)."""
    gone = []
    for path, as_written in named_paths(text).items():
        if PLACEHOLDER.search(path):
            exists = any(REPO.glob(PLACEHOLDER.sub("*", path).rstrip("/")))
        elif path.endswith("/"):
            exists = (REPO / path).is_dir()
        else:
            exists = (REPO / path).is_file()
        if not exists:
            gone.append(as_written)
    return gone


def commands_missing(text: str) -> List[str]:
    from commstack.cli import COMMANDS

    return [name for name in COMMANDS if not re.search(rf"`commstack {re.escape(name)}[` ]", text)]


def test_the_page_names_every_file_of_the_package_and_every_script():
    rows = missing(PAGE.read_text())
    assert not rows, ("docs/reference/source-layout.md does not name these files; add each row "
                      "to a table whose header is the folder given (the rules: "
                      "tests/test_source_map.py's docstring):\n" + "\n".join(rows))


def test_the_page_names_every_command():
    names = commands_missing(PAGE.read_text())
    assert not names, ("docs/reference/source-layout.md does not name these commands; write "
                       "`commstack NAME` in the row of its module (cli/...py): " + ", ".join(names))


def test_every_path_the_page_names_exists():
    gone = stale(PAGE.read_text())
    assert not gone, ("docs/reference/source-layout.md names paths that do not exist (table "
                      "header: row); remove or rename their rows:\n" + "\n".join(gone))


def test_a_row_left_out_or_left_behind_is_caught():
    """The checks above on the page with one module's row taken out, a hand-on package's folder
    row taken out, a command's name changed, and a row for a module that does not exist."""
    text = PAGE.read_text()
    assert "| `sweep.py` |" in text and "| `store/` |" in text and "`commstack tune`" in text
    damaged = (text.replace("| `sweep.py` |", "| `gone_away.py` |")
               .replace("| `store/` |", "| `store/nothing/` |")
               .replace("`commstack tune`", "`commstack tuning`"))
    assert "| `sweep.py` | ... |   (a table headed `src/commstack/`)" in missing(damaged)
    assert "| `store/` | ... |   (a table headed `src/commstack/`)" in missing(damaged)
    assert commands_missing(damaged) == ["tune"]
    assert stale(damaged) == ["src/commstack/: gone_away.py", "src/commstack/: store/nothing/"]
