"""A family knows itself: no flavour or benchmark name as a string literal outside its package.

Everything about an MPI flavour lives in its module of ``commstack.flavours``, everything about a
benchmark family in its module of ``commstack.benchmarks``; the rest of commstack asks the
registries (``flavours.FLAVOURS``, ``benchmarks.registry``). A name spelled out elsewhere
(``if record.benchmark == "cartex"``, ``{"openmpi": ...}``) is knowledge that leaked out of its
module: a new family would not be seen there and a renamed one would silently stop matching.
The names are read from the registries; every string constant of every module outside the two
packages is checked (f-string parts and docstrings too, as whole strings: a sentence that
mentions a family is not a literal equal to its name). ALLOWED says why each exception stands.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Tuple

from commstack import flavours
from commstack.benchmarks import registry

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "commstack"
FAMILY_PACKAGES = ("flavours", "benchmarks")

# (module relative to src/commstack, name) -> why the literal stands there.
ALLOWED: Dict[Tuple[str, str], str] = {
    **{("placement/reports.py", name): "binding-report formats are named after the program that "
       "prints them (hydra and slurm are not flavours); a flavour names its format in "
       "Flavour.binding_report" for name in ("openmpi", "intelmpi", "smpi")},
    **{("report/studies/gasnet.py", name): "the GASNet-EX RMA study (the paper's figure and "
       "table) compares these benchmarks' rows by design" for name in (
           "gasnet-testlarge", "gasnet-testsmall", "imb-rma")},
    ("report/studies/gasnet.py", "gasnet"): "the study's own name, after the paper",
}


def family_names() -> List[str]:
    return sorted({*flavours.names(), *registry.names(), *registry.formats()})


def literals(source: str) -> List[Tuple[int, str]]:
    """(line, text) of every string constant in ``source``."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def leaks(root: Path = PACKAGE) -> List[str]:
    """``file:line: 'name'`` for each family name spelled out outside its package."""
    names = set(family_names())
    found: List[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.split("/")[0] in FAMILY_PACKAGES:
            continue
        for line, text in literals(path.read_text()):
            if text in names and (relative, text) not in ALLOWED:
                found.append(f"src/commstack/{relative}:{line}: {text!r}")
    return found


def test_no_family_name_is_spelled_out_outside_its_package():
    found = leaks()
    assert not found, ("a flavour or benchmark family named outside its module; move what is "
                       "known of it onto its Flavour/Benchmark and ask the registry (or add an "
                       "ALLOWED row saying why it stands):\n" + "\n".join(found))


def test_every_allowed_exception_is_still_needed():
    names = set(family_names())
    used = {(path.relative_to(PACKAGE).as_posix(), text)
            for path in PACKAGE.rglob("*.py") for _, text in literals(path.read_text())
            if text in names}
    assert set(ALLOWED) <= used, f"stale ALLOWED rows: {sorted(set(ALLOWED) - used)}"


def test_the_guard_sees_a_leak(tmp_path):
    """The check itself: a module that branches on a benchmark's name is caught, by line."""
    (tmp_path / "figures.py").write_text('def f(record):\n    return record.benchmark == "osu"\n')
    assert leaks(tmp_path) == ["src/commstack/figures.py:2: 'osu'"]

