"""The documentation (issue 29): docs/ builds with MkDocs with warnings as errors, every command
has its reference section, the README stays short and its links into docs/ resolve, and every
shell example of the tutorials runs (in a copy of the checkout) or says what it needs.

A tutorial's fenced ``sh``/``bash``/``shell``/``console`` block runs (``bash -eu -o pipefail``: a
command that fails inside a pipe fails the block), unless the line just before
it (blank lines aside) is a marker ``<!-- needs: WHAT -->`` naming one of NEEDS. Blocks of the
same page run one after the other in one copy, so a later block sees what an earlier one wrote.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import List, NamedTuple, Optional

import pytest

from tests.conftest import REPO, intel_mpi_root

DOCS = REPO / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))

#: What a tutorial block may declare it needs instead of being run (docs/about-docs.md).
NEEDS = {"network", "spack", "slurm cluster", "the machine itself", "betzy", "perlmutter",
         "bm-optimized3-36"}
SHELL = {"sh", "bash", "shell", "console"}
#: Seconds one block may take (the quick sweep takes about 1.5 min on 2 idle cores).
BLOCK_TIMEOUT = 1200

FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*needs:\s*(.*?)\s*-->$")


class Block(NamedTuple):
    page: Path
    line: int            # of the opening fence, 1-based
    lang: str
    text: str
    needs: Optional[str]  # the marker's WHAT, or None


def blocks(page: Path) -> List[Block]:
    """The fenced blocks of a Markdown page (top-level fences only), with their markers."""
    lines = page.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, lang = i, match.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{page}:{start + 1}: a fence that is never closed"
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(before.strip())
        found.append(Block(page, start + 1, lang, "\n".join(lines[start + 1:end]),
                           marker.group(1) if marker else None))
        i = end + 1
    return found


def script(block: Block) -> str:
    """The commands of a block: a ``console`` block's ``$ `` lines (with their continuations),
    any other shell block as it is."""
    if block.lang != "console":
        return block.text
    out, going_on = [], False
    for line in block.text.splitlines():
        if line.startswith("$ ") or going_on:
            command = line[2:] if line.startswith("$ ") and not going_on else line
            out.append(command)
            going_on = command.rstrip().endswith("\\")
    return "\n".join(out)


def slug(heading: str) -> str:
    """Python-Markdown's toc slug of a heading's text (markup dropped), as MkDocs makes anchors."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set:
    fence, found = False, set()
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            found.add(slug(line.lstrip("#").strip()))
    return found


# --- the build -----------------------------------------------------------------------------


def test_docs_build_with_warnings_as_errors(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("skipped: mkdocs is not installed (pip install 'commstack[test]'; "
                    "scripts/test.sh does)")
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (site / "index.html").is_file()
    assert (site / "images" / "dashboard.png").is_file()
    for page in ("tutorials/quick-sweep", "reference/commands", "explanation/statistics",
                 "measured", "known-limits", "howto/add-a-flavour", "explanation/studies"):
        assert (site / page / "index.html").is_file(), page


def test_every_command_has_its_reference_section():
    from commstack.cli import COMMANDS

    text = (DOCS / "reference" / "commands.md").read_text()
    sections = set(re.findall(r"^## `commstack ([a-z]+)`", text, flags=re.M))
    assert sections == set(COMMANDS), f"missing: {set(COMMANDS) - sections}; " \
                                      f"not commands: {sections - set(COMMANDS)}"
    for action in ("check", "capture"):
        assert f"commstack machine {action}" in text


# --- the README ----------------------------------------------------------------------------


def test_readme_is_short_and_its_docs_links_resolve():
    readme = REPO / "README.md"
    lines = readme.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200: the rest is docs/)"
    links = re.findall(r"\]\((docs/[^)\s]+)\)", readme.read_text())
    assert len(links) >= 10, links
    for link in links:
        path, _, anchor = link.partition("#")
        target = REPO / path
        assert target.is_file(), f"README.md links to {link}: no such file"
        if anchor:
            assert anchor in anchors(target), f"README.md links to {link}: no such heading"
    # the two set-up commands, as the main job and the tests run them
    text = readme.read_text()
    assert "bash scripts/quickstart.sh" in text and "bash scripts/test.sh" in text


# --- the tutorials' shell examples ---------------------------------------------------------


def test_every_tutorial_shell_block_runs_or_says_what_it_needs():
    """The cheap half: every fenced block has a language; a marker names a known need; each
    page has at least one block that runs."""
    assert TUTORIALS, "no docs/tutorials/*.md"
    for page in TUTORIALS:
        found = blocks(page)
        for block in found:
            where = f"{page.relative_to(REPO)}:{block.line}"
            assert block.lang, f"{where}: a fenced block without a language (sh, text, yaml, ...)"
            if block.needs is not None:
                assert block.needs in NEEDS, f"{where}: unknown need {block.needs!r} " \
                                             f"(known: {', '.join(sorted(NEEDS))})"
                assert block.lang in SHELL, f"{where}: a needs marker on a {block.lang} block"
        assert any(b.lang in SHELL and b.needs is None for b in found), \
            f"{page.relative_to(REPO)}: no shell block that the test runs"


def _copy_checkout(dest: Path) -> None:
    """The checkout's files as git knows them (tracked and untracked-not-ignored), else all but
    .git, the venv and results made here: a clean copy, whatever this checkout has run."""
    try:
        names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], cwd=REPO, capture_output=True,
                               check=True, timeout=60).stdout.decode().split("\0")
    except (OSError, subprocess.SubprocessError):
        def ignore(folder: str, names: List[str]) -> List[str]:
            made_here = {".git", ".venv", "site", "__pycache__", ".pytest_cache"}
            if Path(folder) == REPO / "results":
                made_here |= {"local", "slurm-ci"}
            return [name for name in names if name in made_here]

        shutil.copytree(REPO, dest, ignore=ignore, dirs_exist_ok=True)
        return
    for name in filter(None, names):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def _launches_mpi(page: Path) -> bool:
    runs = [script(b) for b in blocks(page) if b.lang in SHELL and b.needs is None]
    return any(re.search(r"\bcommstack (run|tune|rehearse)\b(?![^\n]*--dry-run)", s) for s in runs)


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.parametrize("page", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_tutorial_shell_examples_run(page, tmp_path):
    """Each page's runnable blocks, in order, in a copy of the checkout, ``commstack`` on PATH."""
    if _launches_mpi(page) and intel_mpi_root() is None:
        pytest.skip("skipped: the tutorial runs MPI jobs and Intel MPI from PyPI is not installed "
                    "(pip install impi-rt impi-devel; scripts/test.sh does)")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    _copy_checkout(checkout)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "commstack").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m commstack "$@"\n')
    (shim / "commstack").chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(shim), str(Path(sys.executable).parent), env["PATH"]])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout / "src"),
                                                      env.get("PYTHONPATH")]))
    for name in ("COMMSTACK_SITE_CONFIGS", "SLURM_JOB_ID"):
        env.pop(name, None)
    for block in blocks(page):
        if block.lang not in SHELL or block.needs is not None:
            continue
        where = f"{page.relative_to(REPO)}:{block.line}"
        done = subprocess.run(["bash", "-eu", "-o", "pipefail", "-c", script(block)],
                              cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT)
        assert done.returncode == 0, (f"{where}: exit {done.returncode}\n{block.text}\n"
                                      f"--- stdout (end)\n{done.stdout[-3000:]}\n"
                                      f"--- stderr (end)\n{done.stderr[-3000:]}")


def test_the_spack_set_up_by_hand_uses_the_pinned_commits():
    """docs/howto/set-up-spack.md checks out the Spack and spack-packages commits that
    scripts/setup_spack.sh pins (it once cloned Spack's develop)."""
    setup = (REPO / "scripts" / "setup_spack.sh").read_text()
    pins = {name: re.search(rf"^{name}=([0-9a-f]{{40}})", setup, flags=re.M).group(1)
            for name in ("SPACK_REF", "PACKAGES_REF")}
    page = (DOCS / "howto" / "set-up-spack.md").read_text()
    for name, commit in pins.items():
        assert f"checkout {commit}" in page, f"set-up-spack.md does not check out {name} {commit}"
    assert "--branch develop" not in page
