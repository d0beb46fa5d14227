"""docs/reference/commands.md's help blocks are what the commands print (issue 39):
scripts/commands_doc.py writes them from ``commstack ... --help``; these tests run it as a user
does, on the page and on damaged copies of it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGE = REPO / "docs" / "reference" / "commands.md"
SCRIPT = REPO / "scripts" / "commands_doc.py"

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 10),
    reason="skipped: argparse before Python 3.10 titles the options 'optional arguments:', so "
           "its help is not the page's")


def commands_doc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def test_the_page_is_what_the_script_writes():
    done = commands_doc("--check")
    assert done.returncode == 0, (f"docs/reference/commands.md is not what the commands' --help "
                                  f"prints; run python scripts/commands_doc.py\n{done.stderr}")


def test_a_stale_block_is_named_then_rewritten_and_the_prose_kept(tmp_path: Path):
    page = PAGE.read_text()
    line = "  --json                one JSON object per point (JSON Lines), for scripts\n"
    assert page.count(line) == 1, "the plan block's --json line is the one changed here"
    copy = tmp_path / "commands.md"
    copy.write_text(page.replace(line, "  --json                an option that changed\n"))
    done = commands_doc("--check", "--page", str(copy))
    assert done.returncode == 1
    assert "the --help of commstack plan differs; run python scripts/commands_doc.py" in done.stderr
    assert commands_doc("--page", str(copy)).returncode == 0
    assert copy.read_text() == page


def test_a_command_without_its_block_is_named(tmp_path: Path):
    marker = "<!-- help: commstack history -->\n"
    copy = tmp_path / "commands.md"
    copy.write_text(PAGE.read_text().replace(marker, "").replace(
        "<!-- help: commstack dashboard -->", "<!-- help: commstack dashboards -->"))
    done = commands_doc("--page", str(copy))
    assert done.returncode == 1
    assert "blocks of no command: commstack dashboards." in done.stderr
    assert "commands without a block: commstack history, commstack dashboard;" in done.stderr
