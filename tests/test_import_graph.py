"""Must show: every import in src/commstack goes down the floors of docs/reference/layers.md (or
stays on its floor), and no imports go round in a circle.

Every ``import`` or ``from ... import`` of a commstack module is an arrow, wherever it stands: at
module level, under ``if TYPE_CHECKING:``, inside a function (a lazy import). ``from a import b``
points at the module ``a.b`` when there is one, else at ``a``. Python runs the __init__ of every
package above a module before the module, so an arrow also points at those packages, except at
the importer's own packages: Python has begun their __init__ before the importer, so no circle
closes through them. An import that names one of them itself (``from commstack.machine import
Machine`` in machine/check/) is an arrow all the same: it needs names that __init__ must have
defined by then. What importlib loads is not seen (see the page).

The page's table is the one list of floors: each module file is on the floor of the row that names
it (``store/`` a package, ``bounds`` a module, ``__init__`` the package's own); a file that no row
names fails, and so does a name that is no file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, NamedTuple, Set, Tuple

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "commstack"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "layers.md"


class Arrow(NamedTuple):
    importer: str
    imported: str
    path: Path
    line: int
    implied: bool  # a package above the module named, whose __init__ runs first


class Floor(NamedTuple):
    number: int
    layer: str
    names: List[str]  # as the page writes them: "store/" (a package), "bounds", "__init__"


def modules(package: Path) -> Dict[str, Path]:
    """Dotted module name -> its file, for every .py file under ``package``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = [package.name, *path.relative_to(package).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _within(name: str, package: str) -> bool:
    """``name`` is ``package`` or one of its modules."""
    return name == package or name.startswith(package + ".")


def _named(node: ast.AST, package: str, known: Dict[str, Path]) -> Set[str]:
    """The modules an import statement names (``package``: the importer's, for relative ones)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
    return {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names}


def arrows(package: Path) -> List[Arrow]:
    """Every import of a module of ``package`` by a module of it, lazy ones included."""
    known = modules(package)
    found: List[Arrow] = []
    for name, path in known.items():
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            named = {t for t in _named(node, own, known) if t in known and t != name}
            above = {".".join(t.split(".")[:i]) for t in named for i in range(1, t.count(".") + 1)}
            implied = {p for p in above - named if p in known and not _within(name, p)}
            found += [Arrow(name, t, path, node.lineno, t in implied)
                      for t in sorted(named | implied)]
    return found


def graph(found: List[Arrow]) -> Dict[str, Set[str]]:
    out: Dict[str, Set[str]] = {}
    for arrow in found:
        out.setdefault(arrow.importer, set()).add(arrow.imported)
        out.setdefault(arrow.imported, set())
    return out


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Each strongly connected set of two or more modules (Tarjan), sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                group.append(item)
                if item == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def floors(page: Path) -> List[Floor]:
    """The rows of the page's table of floors, bottom first."""
    rows = [line for line in page.read_text().splitlines() if re.match(r"^\| \d+ \|", line)]
    out = []
    for row in rows:
        number, layer, names, may_import = (cell.strip() for cell in row.strip("|").split("|")[:4])
        below = "—" if number == "1" else "1" if number == "2" else f"1–{int(number) - 1}"
        assert may_import == below, f"{page.name}: floor {number} may import {below!r}, not " \
                                    f"{may_import!r} (the rule: its own floor and those below)"
        out.append(Floor(int(number), layer, re.findall(r"`([^`]+)`", names)))
    assert [f.number for f in out] == list(range(1, len(out) + 1)), "floors are 1, 2, 3, ..."
    return out


def _file_name(package: Path, path: Path) -> str:
    """A module file as the table names it: ``store/record``, ``bounds``, ``__init__``."""
    return path.relative_to(package).with_suffix("").as_posix()


def placing(package: Path, table: List[Floor]) -> Tuple[Dict[str, Floor], List[str]]:
    """Each module's floor, and a line for every module that no row or two rows name and for
    every name of the table that is no module."""
    floor_of: Dict[str, Floor] = {}
    problems: List[str] = []
    used: Set[str] = set()
    for name, path in modules(package).items():
        file = _file_name(package, path)
        rows = [(floor, n) for floor in table for n in floor.names
                if file == n or (n.endswith("/") and file.startswith(n))]
        used.update(n for _, n in rows)
        where = path.relative_to(package.parent)
        if not rows:
            problems.append(f"{where}: on no floor; name it on one row of docs/reference/layers.md")
        elif len(rows) > 1:
            problems.append(f"{where}: on the floors of " + ", ".join(
                f"`{n}` ({floor.number})" for floor, n in rows) + "; keep one")
        else:
            floor_of[name] = rows[0][0]
    problems += [f"the table names `{n}` (floor {f.number}), which is no module"
                 for f in table for n in f.names if n not in used]
    return floor_of, problems


def imports_back_up(package: Path, table: List[Floor]) -> List[str]:
    """One line per import of a module on a higher floor: where, who, whom, which floors (of the
    modules the table places; ``placing`` says which it does not). A package whose __init__ runs
    first is named only where the module the import names is not itself higher."""
    floor_of = placing(package, table)[0]
    up = [a for a in arrows(package) if a.importer in floor_of and a.imported in floor_of
          and floor_of[a.imported].number > floor_of[a.importer].number]
    said = {(a.path, a.line) for a in up if not a.implied}
    return [f"{a.path.relative_to(package.parent)}:{a.line}: {a.importer} (floor "
            f"{floor_of[a.importer].number}, {floor_of[a.importer].layer}) imports {a.imported} "
            f"(floor {floor_of[a.imported].number}, {floor_of[a.imported].layer})"
            for a in up if not (a.implied and (a.path, a.line) in said)]


def circles(package: Path) -> List[str]:
    """One paragraph per circle: its modules, then each of its imports with file and line."""
    found = arrows(package)
    out = []
    for circle in cycles(graph(found)):
        ties = [f"  {a.path.relative_to(package.parent)}:{a.line}: {a.importer} -> {a.imported}"
                for a in found if a.importer in circle and a.imported in circle]
        out.append("circle of " + ", ".join(circle) + ":\n" + "\n".join(ties))
    return out


def test_every_module_is_on_one_floor_of_the_page():
    floor_of, problems = placing(PACKAGE, floors(PAGE))
    assert not problems, "\n".join(problems)
    assert floor_of["commstack.store.record"].layer == "store"
    assert floor_of["commstack"].number == 1 and floor_of["commstack.__main__"].layer == "entry"


def test_no_import_runs_back_up_the_floors():
    found = imports_back_up(PACKAGE, floors(PAGE))
    assert not found, "imports that run back up:\n" + "\n".join(found)


def test_no_imports_go_round_in_a_circle():
    found = circles(PACKAGE)
    assert not found, "\n".join(found)


def test_the_plan_and_its_pre_flight_import_each_other_no_more():
    edges = graph(arrows(PACKAGE))
    assert "commstack.preflight.check" in edges["commstack.sweep"] | edges["commstack.preflight"]
    assert "commstack.sweep" not in edges["commstack.preflight.check"]
    assert "commstack.plan" in edges["commstack.preflight.check"]


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_lazy_import_back_up_and_a_circle_are_found(tmp_path):
    package = tmp_path / "pkg"
    _write(package, {
        "__init__.py": "",
        "low.py": "def f():\n    from pkg.high import g\n",  # lazy, up a floor, and a circle
        "high.py": "from pkg import low\n",
        "sub/__init__.py": "from pkg.sub.a import x\n",
        "sub/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.low\n",
        "sub/b.py": "from pkg.sub import x\n",  # its own package, on its floor: no arrow up
    })
    page = tmp_path / "layers.md"
    page.write_text("| Floor | Layer | Modules | May import floors |\n|---|---|---|---|\n"
                    "| 1 | ground | `__init__`, `low`, `sub/` | — |\n"
                    "| 2 | top | `high` | 1 |\n")
    table = floors(page)
    assert imports_back_up(package, table) == [
        "pkg/low.py:2: pkg.low (floor 1, ground) imports pkg.high (floor 2, top)"]
    assert circles(package) == ["circle of pkg.high, pkg.low:\n"
                                "  pkg/high.py:1: pkg.high -> pkg.low\n"
                                "  pkg/low.py:2: pkg.low -> pkg.high"]
    edges = graph(arrows(package))
    assert edges["pkg.sub.a"] == {"pkg.low"} and edges["pkg.sub.b"] == {"pkg.sub"}
    assert edges["pkg.sub"] == {"pkg.sub.a"}


def test_a_module_no_row_or_two_rows_name_fails(tmp_path):
    package = tmp_path / "pkg"
    _write(package, {"__init__.py": "", "new.py": "", "old.py": "", "sub/__init__.py": ""})
    page = tmp_path / "layers.md"
    page.write_text("| 1 | ground | `__init__`, `old`, `gone`, `sub/` | — |\n"
                    "| 2 | top | `sub/__init__` | 1 |\n")
    assert placing(package, floors(page))[1] == [
        "pkg/new.py: on no floor; name it on one row of docs/reference/layers.md",
        "pkg/sub/__init__.py: on the floors of `sub/` (1), `sub/__init__` (2); keep one",
        "the table names `gone` (floor 1), which is no module"]
