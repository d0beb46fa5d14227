"""No module outside the Slurm scheduler module names Slurm (issue 40, docs/reference/schedulers.md).

Slurm is one scheduler behind ``commstack.schedulers.base.Scheduler``: its knowledge lives in
``src/commstack/schedulers/slurm.py`` and its ``slurm_*.py`` pieces. Every other module of
``src/commstack/`` asks the interface. This test reads each module's identifiers and string
literals (docstrings and comments, written for people, are not read) and fails for one that names
Slurm (``slurm``, ``srun``, ``sbatch``, ``squeue``, ``sacct``, ``scancel``, ``SLURM_...``), unless
ALLOWED names the module, with exactly that many mentions and the reason they stand. An entry
whose count no longer matches fails too: the table shrinks as mentions go.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from typing import Dict, List, Set, Tuple

from commstack.schedulers import registry
from tests.conftest import REPO

PACKAGE = REPO / "src" / "commstack"
NAMES = re.compile(r"slurm|srun|sbatch|squeue|sacct|scancel", re.I)  # SLURM_* too
SCHEDULER_MODULE = re.compile(r"^schedulers/slurm(_\w+)?\.py$")

# why the mentions stand -> {module (in src/commstack/): how many}
ALLOWED: Dict[str, Dict[str, int]] = {
    "the record schema's historical `slurm` key (record.schema.json), written and read as "
    "Record.step: records written since the first campaign keep their step there and must keep "
    "loading": {"store/record.py": 5, "run_record.py": 1},
    "the report's wording of how repeats were taken ('Slurm job') is the golden reports', byte "
    "for byte (records do not say which scheduler ran them)": {"report/repeats.py": 5},
    "messages and help a user reads: the errors of a multi-node or Cray MPICH point outside an "
    "allocation (tests/test_cli.py and tests/test_flavours.py quote them), the help of the "
    "parameter cpus_per_task (srun's option) and of `commstack parse` (srun's binding report)": {
        "launch/builder.py": 3, "matrix/parameters.py": 1, "cli/parse.py": 1},
    "output of srun's that the run's readers tell apart: its own error lines among a "
    "benchmark's output": {"benchmarks/osu.py": 1, "benchmarks/reprompi.py": 1},
    "the parser of srun's --cpu-bind=verbose report, one of the placement floor's report parsers "
    "(floor 3, below the schedulers); it moves with a per-scheduler report registry": {
        "placement/reports.py": 13},
    "Cray MPICH's own launcher is srun (HPE's documentation); the flavour table tests expect "
    "that default launcher": {"flavours/cray_mpich.py": 1},
    "the default rehearsal machine is the local Slurm test cluster, slurm-ci (`rehearse --on` "
    "picks another, e.g. flux-local), whose counterparts table the other local test machines "
    "share (site-configs/slurm-ci/counterparts.yaml); rehearsals written before they named "
    "their machine ran there": {
        "cli/rehearse.py": 1, "rehearsal/counterparts.py": 1, "report/rehearsal_banner.py": 1},
    "machine facts are written in Slurm's words (launchers.<flavour>.command: srun), and the "
    "machine check and capture probe Slurm itself (version, partitions, accounts, srun's MPI "
    "plugins, node record, cluster name); the machine floor (6) stands below the schedulers (7). "
    "Next step: these move to Scheduler methods the machine check is handed": {
        "machine/__init__.py": 1, "machine/capture/readings.py": 12, "machine/check/checks.py": 12,
        "machine/check/externals.py": 2, "machine/check/identity.py": 7,
        "machine/check/probes.py": 23},
}
ALLOWED_COUNT = {rel: n for modules in ALLOWED.values() for rel, n in modules.items()}


def _docstrings(tree: ast.AST) -> Set[Tuple[int, int]]:
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                starts.add((first.lineno, first.col_offset))
    return starts


def mentions(text: str, names: "re.Pattern[str]" = NAMES) -> List[str]:
    """The identifiers and string literals of ``text`` (no docstring, no comment) naming Slurm
    (or what ``names`` matches)."""
    docs = _docstrings(ast.parse(text))
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME or (tok.type == tokenize.STRING and tok.start not in docs):
            found += [tok.string] * len(names.findall(tok.string))
    return found


def _modules() -> Dict[str, List[str]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not SCHEDULER_MODULE.match(rel):
            out[rel] = mentions(path.read_text())
    return out


def test_no_module_outside_the_slurm_scheduler_names_slurm():
    found = _modules()
    wrong = {rel: words for rel, words in found.items() if words and rel not in ALLOWED_COUNT}
    assert not wrong, ("these modules name Slurm outside commstack/schedulers/slurm*.py; ask "
                       f"the scheduler interface instead (docs/reference/schedulers.md): {wrong}")
    stale = {rel: f"{len(found.get(rel, []))} mentions, ALLOWED says {allowed}"
             for rel, allowed in ALLOWED_COUNT.items() if len(found.get(rel, [])) != allowed}
    assert not stale, f"ALLOWED no longer matches these modules (update or drop the entry): {stale}"


def test_every_exception_says_why_once():
    assert all(len(why) > 20 for why in ALLOWED)
    assert sum(len(modules) for modules in ALLOWED.values()) == len(ALLOWED_COUNT)
    assert not [rel for rel in ALLOWED_COUNT if SCHEDULER_MODULE.match(rel)]


def test_the_reader_sees_names_and_literals_not_prose():
    text = ('"""srun in a docstring is prose."""\n# sbatch in a comment too\n'
            'x = "srun -v"\nSLURM_JOB = squeue\ndef f():\n    """SLURM here too."""\n')
    assert mentions(text) == ['"srun -v"', "SLURM_JOB", "squeue"]


def test_slurm_is_one_scheduler_behind_the_interface():
    schedulers = registry.schedulers()
    assert "slurm" in schedulers
    assert [s.name for s in schedulers.values() if s.default] == ["slurm"]
    slurm = schedulers["slurm"]
    assert type(slurm).__module__ == "commstack.schedulers.slurm"
    assert registry.for_machine(None) is slurm


def test_machine_facts_can_name_every_scheduler():
    """machine.yaml's scheduler.kind names the machine's scheduler: each scheduler module's name
    is one of its values (a new scheduler adds its word to machine/schema.json)."""
    schema = json.loads((PACKAGE / "machine" / "schema.json").read_text())
    kinds = schema["properties"]["scheduler"]["properties"]["kind"]["enum"]
    assert set(registry.names()) <= set(kinds), kinds
