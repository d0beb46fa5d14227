"""Binding reports printed in the wild, and `commstack parse FILE --placement --json`.

Table-driven from tests/fixtures/placement/external/MANIFEST.tsv: per file its public source, the
tool and version that printed it and what it must yield: ``ranks`` (how many), ``numbering`` of
the printed numbers (os, logical processor, logical core; ``-`` when no rank is bound), ``spot``
"<rank>=<cpus>;..." (cpus as printed, ``-`` for a rank the report calls unbound; hydra's ranks as
``n<node>p<process>``), ``notes`` a substring of a note on what the report does not print.
The CLI tests at the end parse reports made here by the MPIs of this machine.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from commstack.placement.reports import Report, find_reports, printed_cpus
from tests.conftest import intel_mpi_root

FIXTURES = Path(__file__).parent / "fixtures" / "placement"
EXTERNAL = FIXTURES / "external"
with open(EXTERNAL / "MANIFEST.tsv", newline="") as handle:
    ENTRIES = list(csv.DictReader(handle, delimiter="\t"))
PARSER_OF_TOOL = {"Open MPI": "openmpi", "PRRTE": "openmpi", "Intel MPI": "intelmpi",
                  "MPICH hydra": "hydra", "Slurm srun": "slurm"}


def _parser_of(tool: str) -> str:
    return next(parser for name, parser in PARSER_OF_TOOL.items() if tool.startswith(name))


def _key(row: Dict) -> str:
    return str(row["rank"]) if row["rank"] is not None else f"n{row['node']}p{row['local']}"


def _cpus(text: str) -> Optional[List[int]]:
    """"0-2,5" -> [0, 1, 2, 5]; "-" (unbound) -> None."""
    if text == "-":
        return None
    cpus: List[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def _rows(report: Report) -> List[Dict]:
    rows = []
    for binding in report.bindings:
        numbering, cpus = printed_cpus(binding)
        rows.append({"rank": binding.rank, "node": binding.node, "local": binding.local,
                     "cpus": cpus, "bound": binding.bound, "numbering": numbering})
    return rows


def test_manifest_lists_every_file_with_its_source():
    assert {e["file"] for e in ENTRIES} == {p.name for p in EXTERNAL.glob("*.txt")}
    assert len(ENTRIES) >= 12
    for entry in ENTRIES:  # a repository + path + commit, or a URL: never an index id alone
        assert entry["source"].startswith(("https://", "github ")), entry["file"]
        assert entry["tool"] and entry["version"], entry["file"]
    families = {_parser_of(e["tool"]) for e in ENTRIES}
    assert families == set(PARSER_OF_TOOL.values())


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_external_report(entry):
    reports = find_reports((EXTERNAL / entry["file"]).read_text())
    assert reports, "no binding report read"
    report = reports[0]
    assert report.parser == _parser_of(entry["tool"])
    rows = _rows(report)
    assert len(rows) == int(entry["ranks"])
    for row in rows:  # every rank: its CPUs when bound, none when the report says unbound
        assert row["bound"] == bool(row["cpus"]), row
    numberings = {row["numbering"] for row in rows if row["bound"]}
    assert numberings == ({entry["numbering"]} if entry["numbering"] != "-" else set())
    by_key = {_key(row): row for row in rows}
    for spot in entry["spot"].split(";"):
        key, cpus = spot.split("=")
        expected = _cpus(cpus)
        assert by_key[key]["cpus"] == (expected or []), spot
        assert by_key[key]["bound"] == (expected is not None), spot
    if entry["notes"]:
        assert any(entry["notes"] in note for note in report.notes), report.notes


TASKSET = re.compile(r"task (\d+) \(node \d+\):? ?pid \d+'s current affinity list: ([\d,\-]+)")


@pytest.mark.parametrize("name", [e["file"] for e in ENTRIES if "ulhpc-docs" in e["source"]])
def test_srun_masks_agree_with_taskset_in_the_same_output(name):
    """ULHPC's examples print taskset's affinity list of each task after srun's masks."""
    text = (EXTERNAL / name).read_text()
    affinity = {int(rank): _cpus(cpus) for rank, cpus in TASKSET.findall(text)}
    assert len(affinity) >= 4
    cpus = {b.rank: printed_cpus(b)[1] for b in find_reports(text)[0].bindings}
    assert {rank: cpus[rank] for rank in affinity} == affinity


def test_a_report_cut_short_names_the_ranks_it_does_not_print():
    notes = find_reports((EXTERNAL / "slurm-cpu-bind-tasks-out-of-order-excerpt.txt").read_text())[0].notes
    assert any("18 ranks listed, numbered up to 24: ranks 3-9 not printed" in n for n in notes)


# --- commstack parse FILE --placement ------------------------------------------------------------
def commstack(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commstack", *args], capture_output=True,
                          text=True, timeout=120)


def _json_lines(stdout: str) -> List[Dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def _run_to_file(command: List[str], path: Path, env: Optional[Dict[str, str]] = None) -> Path:
    run = subprocess.run(command, capture_output=True, text=True, timeout=300,
                         env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr
    path.write_text(run.stdout + "\n" + run.stderr)
    return path


def _assert_two_ranks_on_two_cpus(rows: List[Dict], numbering: str, host: Optional[str]):
    assert [row["rank"] for row in rows] == [0, 1] or [row.get("local") for row in rows] == [0, 1]
    assert all(row["bound"] and row["numbering"] == numbering for row in rows)
    assert all(row["host"] == host for row in rows)
    first, second = (set(row["cpus"]) for row in rows)
    assert first and second and not first & second
    assert first | second <= set(range(os.cpu_count() or 1))


@pytest.fixture
def two_cores():
    if (os.cpu_count() or 1) < 2:
        pytest.skip("skipped: needs 2 processors to bind 2 ranks to different cores")


def test_open_mpi_report_made_here(tmp_path, two_cores):
    if shutil.which("mpirun.openmpi") is None:
        pytest.skip("skipped: no Debian Open MPI (apt install openmpi-bin)")
    path = _run_to_file(["mpirun.openmpi", "--allow-run-as-root", "--report-bindings", "--tag-output",
                         "--map-by", "core", "--bind-to", "core", "-np", "2", "true"],
                        tmp_path / "ompi.txt")
    run = commstack("parse", str(path), "--placement", "--json")
    assert run.returncode == 0, run.stderr
    rows = _json_lines(run.stdout)
    assert set(rows[0]) == {"rank", "host", "cpus", "bound", "numbering"}
    _assert_two_ranks_on_two_cpus(rows, "logical processor", os.uname().nodename.split(".")[0])
    assert "hwloc logical" in run.stderr


def test_intel_mpi_pin_table_made_here(tmp_path, two_cores):
    root = intel_mpi_root()
    if root is None:
        pytest.skip("skipped: no Intel MPI (pip install impi-rt impi-devel)")
    env = {"I_MPI_ROOT": str(root), "I_MPI_DEBUG": "4", "I_MPI_PIN_DOMAIN": "core",
           "LD_LIBRARY_PATH": f"{root / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    path = _run_to_file([str(root / "bin" / "mpiexec"), "-n", "2", str(root / "bin" / "IMB-MPI1"),
                         "PingPong", "-msglog", "0:0", "-iter", "1"], tmp_path / "impi.txt", env)
    run = commstack("parse", str(path), "--placement", "--json")
    assert run.returncode == 0, run.stderr
    _assert_two_ranks_on_two_cpus(_json_lines(run.stdout), "os", os.uname().nodename)


def test_hydra_report_made_here(tmp_path, two_cores):
    if shutil.which("mpiexec.mpich") is None:
        pytest.skip("skipped: no MPICH (apt install mpich)")
    path = _run_to_file(["mpiexec.mpich", "-n", "2", "-bind-to", "core", "true"],
                        tmp_path / "hydra.txt", {"HYDRA_TOPO_DEBUG": "1"})
    run = commstack("parse", str(path), "--placement", "--json")
    assert run.returncode == 0, run.stderr
    rows = _json_lines(run.stdout)
    assert [(row["rank"], row["node"], row["local"]) for row in rows] == [(None, 0, 0), (None, 0, 1)]
    _assert_two_ranks_on_two_cpus(rows, "os", None)
    assert "names no host" in run.stderr


def test_json_is_what_the_parser_read():
    path = EXTERNAL / "slurm-mask-wider-than-64-bits.txt"
    run = commstack("parse", str(path), "--placement", "--json")
    assert run.returncode == 0, run.stderr
    assert _json_lines(run.stdout) == [
        {"rank": 0, "host": "mcfly8", "cpus": [1], "bound": True, "numbering": "os"},
        {"rank": 1, "host": "mcfly8", "cpus": list(range(22)) + list(range(44, 66)), "bound": True,
         "numbering": "os"}]


def test_table_without_json_and_notes_on_stderr():
    run = commstack("parse", str(EXTERNAL / "ompi5.0.0rc1-no-host-prefix-elided-listing.txt"),
                    "--placement")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "# Open MPI --report-bindings"
    assert lines[2].split() == ["0", "-", "yes", "0-31", "(logical", "core)"]
    assert len(lines) == 2 + 17
    assert "warning: the report names no host" in run.stderr


def test_unbound_ranks_have_no_cpus():
    run = commstack("parse", str(EXTERNAL / "ompi-circleci-bind-none.txt"), "--placement", "--json")
    assert run.returncode == 0, run.stderr
    assert [(r["rank"], r["cpus"], r["bound"]) for r in _json_lines(run.stdout)] == [
        (0, [], False), (1, [], False)]


def test_the_mpis_report_is_shown_and_srun_s_named():
    run = commstack("parse", str(FIXTURES / "intelmpi-2021.18" / "srun-block.txt"), "--placement",
                    "--json")
    assert run.returncode == 0, run.stderr
    assert len(_json_lines(run.stdout)) == 4
    assert "also holds a srun --cpu-bind=verbose report (4 ranks)" in run.stderr


def test_no_binding_report_is_one_sentence_and_non_zero():
    # MPICH without -bind-to: hydra printed no binding line (a real run of this machine)
    run = commstack("parse", str(FIXTURES / "mpich-4.0.2" / "local-no-bind.txt"), "--placement",
                    "--json")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 and "no binding report found" in run.stderr
