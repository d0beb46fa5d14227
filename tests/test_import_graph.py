"""Must show: no import circle in src/commstack. Every import of a commstack module at module level
counts, those under ``if TYPE_CHECKING:`` too; an import inside a function does not (the CLI's
lazy imports keep start-up short), nor one of the module's own package (Python has begun that
package's __init__ before the module, so it closes no circle)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "commstack"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level(body: List[ast.stmt]) -> List[ast.stmt]:
    """Statements run at import, those of if/try blocks included (TYPE_CHECKING ones too)."""
    out: List[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += _module_level(node.body) + _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _module_level(node.body) + _module_level(node.orelse)
            out += _module_level(node.finalbody)
            for handler in node.handlers:
                out += _module_level(handler.body)
    return out


def _imports(path: Path, name: str, modules: Set[str]) -> Set[str]:
    """The commstack modules ``path`` imports at module level."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: Set[str] = set()
    for node in _module_level(ast.parse(path.read_text()).body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # a submodule by name
    return {m for m in found if m in modules and not _within(name, m)}


def _within(name: str, package: str) -> bool:
    """``name`` is ``package`` or one of its modules."""
    return name == package or name.startswith(package + ".")


def import_graph() -> Dict[str, Set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path, name, set(paths)) for name, path in paths.items()}
    # Importing a.b.c runs a/__init__ and a/b/__init__ first.
    for name in list(graph):
        for node in list(graph[name]):
            parts = node.split(".")
            graph[name].update(p for p in (".".join(parts[:i]) for i in range(2, len(parts)))
                               if p in graph and not _within(name, p))
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
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
        for nxt in sorted(graph[node]):
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_package_has_no_import_circle():
    graph = import_graph()
    assert "commstack.sweep" in graph and "commstack.plan" in graph["commstack.sweep"]
    assert cycles(graph) == []


def test_the_plan_and_its_pre_flight_import_each_other_no_more():
    graph = import_graph()
    assert "commstack.preflight.check" in graph["commstack.sweep"] | graph["commstack.preflight"]
    assert "commstack.sweep" not in graph["commstack.preflight.check"]
    assert "commstack.plan" in graph["commstack.preflight.check"]


def test_a_circle_is_found_through_type_checking_imports(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x.y\n"
                      "def f():\n    import x.z\n")
    assert {ast.unparse(n) for n in _module_level(ast.parse(source.read_text()).body)
            if isinstance(n, ast.Import)} == {"import x.y"}
