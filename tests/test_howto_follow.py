"""Adding a flavour or a benchmark family is one new file plus rows in the table tests: each
how-to page followed from scratch in a copy of the checkout.

A page marks what a reader types: ``<!-- file: PATH -->`` before a fenced block (the block is the
whole file), ``<!-- rows: TEST after "LINE" -->`` before a block of rows (inserted right after the
first line of TEST that starts with LINE). The copy gets the files; its table test must then fail
naming the new family (the rows are needed), and pass, with the guard against family names
outside their package, once the rows are in. Nothing else of the copy is edited.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from tests.conftest import REPO

MARK = re.compile(r'^<!-- (?:file: (?P<file>\S+)|rows: (?P<test>\S+) after "(?P<line>[^"]+)") -->\n'
                  r"```\w*\n(?P<body>.*?)^```", re.M | re.S)
COPIED = ("src", "site-configs", "pyproject.toml", "tests/__init__.py", "tests/conftest.py",
          "tests/sweeps.py", "tests/fixtures", "tests/test_family_names.py")


def steps(page: Path) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str, str]]]:
    """(path, text) of each file and (test, line, rows) of each block of rows on ``page``."""
    files, rows = [], []
    for m in MARK.finditer(page.read_text()):
        if m["file"]:
            files.append((m["file"], m["body"]))
        else:
            rows.append((m["test"], m["line"], m["body"]))
    return files, rows


def checkout_copy(root: Path, tests: List[str]) -> Path:
    for name in (*COPIED, *tests):
        source, target = REPO / name, root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)
    return root


def insert_rows(test: Path, line: str, rows: str) -> None:
    lines = test.read_text().splitlines(keepends=True)
    at = next(i for i, text in enumerate(lines) if text.startswith(line))
    test.write_text("".join(lines[:at + 1]) + rows + "".join(lines[at + 1:]))


def pytest_in(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("page, name, table_test, coverage", [
    ("add-a-flavour.md", "mvapich2", "tests/test_flavours.py",
     "test_the_tables_cover_every_flavour"),
    ("add-a-benchmark.md", "ring", "tests/test_benchmarks.py",
     "test_the_table_names_every_registered_benchmark"),
])
def test_the_how_to_page_followed_from_scratch(tmp_path, page, name, table_test, coverage):
    files, rows = steps(REPO / "docs" / "howto" / page)
    assert files and rows, f"{page}: no marked file or rows to follow"
    assert {test for test, _, _ in rows} == {table_test}
    root = checkout_copy(tmp_path / "checkout", [table_test])
    for path, text in files:
        assert not (root / path).exists(), f"{page}: {path} exists already"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)

    without_rows = pytest_in(root, f"{table_test}::{coverage}")
    assert without_rows.returncode == 1 and name in without_rows.stdout, without_rows.stdout[-2000:]

    for test, line, block in rows:
        insert_rows(root / test, line, block)
    run = pytest_in(root, table_test, "tests/test_family_names.py")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    named = pytest_in(root, table_test, "-k", name, "--collect-only")  # its rows are tested
    selected = re.search(r"(\d+)/\d+ tests collected", named.stdout)
    assert selected and int(selected[1]) >= 3, named.stdout[-1000:]
