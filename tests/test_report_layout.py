"""Must show: every Markdown table in commstack is written by the one table writer, which keeps
a cell's ``|`` and line breaks inside the cell; `compare` imports nothing of `report` (so the two
are not in an import cycle); the report asks its study plugins whether they apply instead of
hard-coding which campaign gets which section; the study layouts show every number as the
standard tables do, median [95 % interval] (n), with the markers of unclean runs beside it."""

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
from commstack.store.record import Record
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


# --- study layouts: every number with its interval ------------------------------------------------


def _write_campaign(root: Path, records: List[Record]) -> Path:
    """A campaign on disk as a sweep leaves it (records only: no outputs are needed here)."""
    from commstack.store.files import write_new

    campaign = Campaign(root)
    campaign.ensure({"campaign": root.name, "machine": root.parent.name,
                     "benchmark": records[0].benchmark})
    for record in records:
        folder = campaign.point_dir(record.point_id) / f"rep{record.repeat}.try1"
        folder.mkdir(parents=True)
        write_new(folder / "record.json", record.dumps())
    return root


def _cartex(exe: str, halo: int, value: float, repeat: int, oversubscribed: bool) -> Record:
    return Record.from_dict({
        "campaign": "halo", "machine": "local", "attempt": 1, "status": "ok",
        "benchmark": "cartex", "point_id": f"{exe}-h{halo}", "repeat": repeat,
        "stack": "ompi", "stack_info": {"flavour": "openmpi"}, "ranks": 4,
        "oversubscribed": oversubscribed,
        "params": {"executable": exe, "halo": halo, "nfields": 1, "stack": "ompi"},
        "parsed": [{"mean_s": value / 1e4, "time_10000_calls_s": value}]})


def test_study_layout_cells_show_their_interval_and_count_in_the_report(tmp_path):
    """A swept cartex campaign's report: the Betzy-layout table reads like the standard tables,
    median [95 % interval] (n), with the oversubscribed run's marker beside its number and the
    caption saying that fewer than 6 repeats give no interval."""
    six = [2.61, 2.58, 2.66, 2.6, 2.64, 2.59]
    records = [_cartex("benchmark_mpi_comm", 1, v, r, False) for r, v in enumerate(six, 1)]
    records += [_cartex("benchmark_mpi_comm", 5, v, r, False)
                for r, v in enumerate([14.7, 14.9, 14.8], 1)]
    records += [_cartex("benchmark_ghex_comm_mpi", 1, 3.1, 1, True)]
    root = _write_campaign(tmp_path / "results" / "local" / "halo", records)
    text = write_report(root).read_text()
    section = text.split("## Halo exchange tables (Betzy layout)")[1].split("\n## ")[0]
    from commstack import stats

    c = stats.describe(six)
    assert (c.n, c.low, c.high) == (6, min(six), max(six))
    row = next(line for line in section.splitlines() if "benchmark_mpi_comm " in line)
    assert f"{c.median:.5g} [{c.low:.5g}–{c.high:.5g}] (6)" in row
    assert "14.8 (3)" in row  # three repeats: the median and its count, no interval
    ghex = next(line for line in section.splitlines() if "benchmark_ghex_comm_mpi " in line)
    assert "3.1 (1) ⚠ov" in ghex
    assert "A cell `median [95 % interval] (n)` is the median over the n repeats" in section
    assert ("2 of 3 such cells have fewer than 6 repeats and show no interval: the interval "
            "needs 6 repeats") in section
    assert "`⚠ov` oversubscribed" in section


def test_gasnet_tables_show_the_runs_median_beside_the_papers_number():
    """The GASNet-EX paper's minimum latency and maximum bandwidth keep their columns; beside
    each, the runs' median with its 95 % interval (six runs) or without (three), and the
    oversubscribed configuration's marker after its number."""
    from commstack import stats
    from commstack.report.studies import gasnet

    def rma(fabric: str, repeat: int, t: float, oversubscribed: bool) -> Record:
        rows = [{"benchmark": op, "np": 2, "mode": mode, "bytes": b, "t_us": t * (1 + b / 1e4),
                 "mbytes_per_s": 100 * t * b / 1024}
                for op in ("Unidir_put", "Unidir_get") for mode in ("aggregate", "non-aggregate")
                for b in (8, 1024)]
        return Record.from_dict({
            "campaign": "rma", "machine": "local", "attempt": 1, "status": "ok",
            "benchmark": "imb-rma", "point_id": fabric, "repeat": repeat, "stack": "impi",
            "stack_info": {"flavour": "intelmpi"}, "ranks": 2, "oversubscribed": oversubscribed,
            "params": {"I_MPI_FABRICS": fabric, "stack": "impi"}, "parsed": rows})

    shm = [0.31, 0.35, 0.33, 0.3, 0.36, 0.32]
    records = [rma("shm", r, t, False) for r, t in enumerate(shm, 1)]
    records += [rma("ofi", r, t, True) for r, t in enumerate([5.2, 5.0, 5.4], 1)]
    lat = gasnet.latency(records)
    lines = gasnet.latency_table(lat)
    eight = [t * (1 + 8 / 1e4) for t in shm]
    c = stats.describe(eight)
    shm_row = next(line for line in lines if line.startswith("| I_MPI_FABRICS=shm |"))
    assert shm_row.startswith(f"| I_MPI_FABRICS=shm | {min(eight):.2f} μs | {c.median:.2f} "
                              f"[{c.low:.2f}–{c.high:.2f}] (6) |")
    ofi_row = next(line for line in lines if line.startswith("| I_MPI_FABRICS=ofi |"))
    assert " μs ⚠ov | " in ofi_row and " (3) | " in ofi_row and "[" not in ofi_row
    # the medians' ratio to the baseline (ofi, the first configuration): the statistics
    # module's shift, without an interval where a side has 3 runs
    ratio = stats.shift([t * (1 + 8 / 1e4) for t in (5.2, 5.0, 5.4)], eight).ratio
    assert f" | {min(eight) / 5.0 / (1 + 8 / 1e4):.2f} | {ratio:.2f} | " in shm_row, shm_row
    assert ofi_row.count(" | 1.00 | 1.00 |") == 2, ofi_row
    # six runs a side: the medians' ratio with its bootstrap interval (compare's)
    six = gasnet.latency(records[:6] + [rma("ofi", r, t, False)
                                        for r, t in enumerate([5.2, 5.0, 5.4, 5.1, 5.3, 5.6], 1)])
    shm_six = next(line for line in gasnet.latency_table(six)
                   if line.startswith("| I_MPI_FABRICS=shm |"))
    assert re.search(r"\| 0\.0\d \[0\.0\d–0\.0\d\] \|", shm_six), shm_six
    notes = " ".join(gasnet.notes([(s, 8) for s in lat]))
    assert "2 of 4 such cells have fewer than 6 runs" in notes and "`⚠ov` oversubscribed" in notes
    peak = [row for row in gasnet.saturation(gasnet.bandwidth(records))
            if row.startswith("| I_MPI_FABRICS=shm | Put |")]
    rates = stats.describe([100 * t * 1024 / 1024 * 1e6 / 2 ** 30 for t in shm], rate=True)
    assert peak and f" | {rates.median:.3f} [{rates.low:.3f}–{rates.high:.3f}] (6) | " in peak[0]
