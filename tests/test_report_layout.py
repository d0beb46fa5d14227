"""Must show: every Markdown table in commstack is written by the one table writer, which keeps
a cell's ``|`` and line breaks inside the cell; `compare` imports nothing of `report` (so the two
are not in an import cycle); the report asks its study plugins whether they apply instead of
hard-coding which campaign gets which section."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

from commstack.markdown_table import table
from commstack.report.document import write_report
from commstack.report.studies import STUDIES, Context
from commstack.store.campaign import Campaign
from tests.conftest import REPO

SRC = REPO / "src"
PACKAGE = SRC / "commstack"
# A cell boundary: a pipe not escaped by a backslash.
BOUNDARY = re.compile(r"(?<!\\)\|")


def cells(line: str) -> List[str]:
    assert line.startswith("|") and line.endswith("|"), line
    return [c.strip() for c in BOUNDARY.split(line[1:-1])]


def check_tables(text: str) -> int:
    """Every table in ``text``: header, alignment row, rows all with as many cells as the
    header. Returns how many tables there are."""
    count, width = 0, None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("|"):
            width = None
            continue
        if width is None:
            width = len(cells(line))
            assert re.fullmatch(r"\|(:?---:?\|)+", lines[index + 1]), lines[index + 1]
            assert len(cells(lines[index + 1])) == width
            count += 1
        else:
            assert len(cells(line)) == width, line
    return count


# --- the table writer -----------------------------------------------------------------------------


def test_table_keeps_pipes_and_line_breaks_inside_their_cells():
    lines = table(["point", "why"], [["p1", "exit 1 | killed\nby signal 9"], ["p2", None]],
                  align="lr")
    assert lines == ["| point | why |", "|---|---:|",
                     "| p1 | exit 1 \\| killed<br>by signal 9 |", "| p2 | |"]
    assert check_tables("\n".join(lines)) == 1
    assert cells(lines[2]) == ["p1", "exit 1 \\| killed<br>by signal 9"]


def test_table_pads_short_rows_and_refuses_long_ones_and_bad_alignment():
    assert table(["a", "b", "c"], [["x"]], align="c") == ["| a | b | c |", "|:---:|---|---|",
                                                           "| x | | |"]
    with pytest.raises(ValueError, match="row 0 has 3 cells, the table 2 columns"):
        table(["a", "b"], [[1, 2, 3]])
    with pytest.raises(ValueError, match="one of l, r, c per column"):
        table(["a"], [], align="x")
    with pytest.raises(ValueError, match="one of l, r, c per column"):
        table(["a"], [], align="lr")


def _string_constants(path: Path) -> List[ast.Constant]:
    tree = ast.parse(path.read_text(), str(path))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_no_module_but_the_writer_writes_a_table_rule():
    """A table's alignment row (``|---|``) written anywhere else in src means a second table
    writer."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "markdown_table.py":
            continue
        for node in _string_constants(path):
            if "|---" in node.value or "---|" in node.value or "|:---" in node.value:
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r}")
    assert not offenders, "\n".join(offenders)


# --- no import cycle between compare and report ---------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> Dict[str, Set[str]]:
    """commstack module -> the commstack modules it imports anywhere in its text (top level or
    inside functions), relative imports resolved."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: List[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                # a module imports its packages too (their __init__ runs first)
                parts = target.split(".")
                found |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)
                          if ".".join(parts[:i]) in modules}
        graph[name] = found - {name}
    return graph


def reachable(graph: Dict[str, Set[str]], start: str) -> Set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_compare_reaches_no_report_module_in_the_import_graph():
    graph = import_graph()
    assert "commstack.report.studies.gasnet" in graph  # the graph sees the report package
    assert "commstack.figures" in reachable(graph, "commstack.report.studies.gasnet")
    reached = reachable(graph, "commstack.compare")
    assert "commstack.figures" in reached and "commstack.markdown_table" in reached
    assert not {m for m in reached if m.startswith("commstack.report")}, sorted(reached)


def test_importing_compare_loads_no_report_module():
    """The same at run time, which also sees imports made by code (the benchmark registry)."""
    code = ("import sys, commstack.compare, commstack.figures, commstack.markdown_table; "
            "print(sorted(m for m in sys.modules if m.startswith('commstack.report')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True)
    assert run.stdout.strip() == "[]", run.stdout


# --- study plugins --------------------------------------------------------------------------------


REFERENCE = REPO / "results" / "betzy" / "reference"


def test_every_registered_study_says_when_it_applies():
    names = [s.name for s in STUDIES]
    assert len(names) == len(set(names)) and {"betzy-published", "betzy-cartex", "oracle",
                                              "gasnet"} <= set(names)
    campaign = Campaign(REFERENCE)
    records = list(campaign.records())
    assert records and all(r.imported for r in records)
    context = Context(campaign, records, REFERENCE / "report")
    # imported published tables: only their layout applies; no tuning, no run to plot
    assert [s.name for s in STUDIES if s.applies(context)] == ["betzy-published"]
    assert [s.name for s in STUDIES if s.applies(Context(campaign, [], REFERENCE))] == []


def test_report_of_an_imported_campaign_has_its_study_and_well_formed_tables(tmp_path):
    root = tmp_path / "betzy" / "reference"
    shutil.copytree(REFERENCE, root, ignore=shutil.ignore_patterns("report"))
    text = write_report(root).read_text()
    assert "## Published tables: betzy_allcores_27nodes.md" in text
    assert "Tuning step" not in text and "RMA performance" not in text
    assert check_tables(text) >= 2
    for printed in (root / "report").glob("betzy_*.md"):  # the published layout, again
        assert "```" in printed.read_text()
