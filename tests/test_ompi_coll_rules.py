"""Must show (issue 24): a per-size ``mca.coll_tuned_<op>_algorithm`` is launched as Open MPI's
coll/tuned rules file, kept with each run's outputs, read by the real Open MPI 4.1.4 with its
size boundaries where commstack puts them, and exported so that sourcing ``tuned/ucx.env`` from
anywhere makes Open MPI read it; bad values are refused before anything is launched.

Evidence that Open MPI reads the file: a release build prints nothing about it, but an
algorithm number the collective does not have (99) makes the call fail with MPI_ERR_ARG exactly
at the sizes its rule covers. So a run whose value poisons the sizes from N on must print IMB
rows up to the largest size below N, then die with MPI_ERR_ARG; a file Open MPI ignored would
run every size, and a wrong boundary would stop at another row. MPI_ERRORS_ARE_FATAL aborts with
the error code, so mpirun exits with MPI_ERR_ARG's value; the rank's "*** MPI_ERR_ARG" lines do
not always reach mpirun's stderr before the abort (at 1 MiB they never did here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from textwrap import dedent
from typing import Dict, List

import pytest

from commstack.benchmarks import registry
from commstack.flavours import FlavourError
from commstack.flavours import ompi_coll_rules as rules
from commstack.launch.command import LaunchCommand
from commstack.store.files import AlreadyExists
from commstack.tune import export
from commstack.tune import ompi_rules_export as ompi_export
from commstack.tune.staged import CaseResult
from tests.sweeps import commstack, records, run_allreduce_axis

MPI_ERR_ARG = 13  # Open MPI's mpi.h
ALLREDUCE = "mca.coll_tuned_allreduce_algorithm"
ALLTOALL = "mca.coll_tuned_alltoall_algorithm"


# --- the value and the file, no MPI ----------------------------------------------------------
def test_ranges_become_message_rules_from_size_zero():
    assert rules.message_rules(rules.parse("3:0-1023;4:1024-")) == [(0, 3), (1024, 4)]
    # Sizes no range covers get 0 (Open MPI's own choice); equal neighbours are one rule.
    assert rules.message_rules(rules.parse("3:100-199; 4:1024-2047")) == [
        (0, 0), (100, 3), (200, 0), (1024, 4), (2048, 0)]
    assert rules.message_rules(rules.parse("3:0-99;3:100-")) == [(0, 3)]
    assert rules.comm_sizes(1) == [1] and rules.comm_sizes(3) == [1, 2, 3]
    assert rules.comm_sizes(8) == [1, 2, 4, 8] and rules.comm_sizes(12) == [1, 2, 4, 8, 12]


def _numbers(text: str) -> List[int]:
    """The integers Open MPI reads: comments dropped, as ompi_coll_base_file_getnext_long does."""
    return [int(n) for line in text.splitlines() for n in line.split("#", 1)[0].split()]


def test_the_file_counts_sizes_as_open_mpi_compares_them():
    env = {"OMPI_MCA_coll_tuned_alltoall_algorithm": "2:0-767;3:768-",
           "OMPI_MCA_coll_tuned_allreduce_algorithm": "4:0-1023;6:1024-",
           "OMPI_MCA_coll_tuned_allreduce_algorithm_tree_fanout": "2",
           "OMPI_MCA_coll_tuned_alltoall_algorithm_segmentsize": "8192",
           "UCX_TLS": "sm"}
    out, (file,) = rules.launch_files(env, 3)
    assert out == {"UCX_TLS": "sm", "OMPI_MCA_coll_tuned_allreduce_algorithm_tree_fanout": "2",
                   "OMPI_MCA_coll_tuned_alltoall_algorithm_segmentsize": "8192",
                   rules.USE_RULES: "1", rules.RULES_FILE: rules.FILE_NAME}
    assert (file.name, file.variable) == (rules.FILE_NAME, rules.RULES_FILE)
    assert "could not be checked" in file.note and "coll_tuned_allreduce_algorithm" in file.note
    # 2 collectives; allreduce (2): one communicator size serving all, bytes as counted, its
    # tree fan-out; alltoall (3): 1, 2 and 3 ranks, each boundary times the communicator size.
    assert _numbers(file.text) == [
        2,
        2, 1, 1, 2, 0, 4, 2, 0, 1024, 6, 2, 0,
        3, 3, 1, 2, 0, 2, 4, 8192, 768, 3, 4, 8192,
        2, 2, 0, 2, 4, 8192, 1536, 3, 4, 8192,
        3, 2, 0, 2, 4, 8192, 2304, 3, 4, 8192]
    plain = {"OMPI_MCA_coll_tuned_allreduce_algorithm": "3", "UCX_TLS": "sm"}
    assert rules.launch_files(plain, 2) == (plain, ())


@pytest.mark.parametrize("env, expected", [
    ({ALLREDUCE: "3:0-1023;junk"}, "'junk' is not <algorithm>:<first>-<last>"),
    ({ALLREDUCE: "3:0-;4:1024-"}, "only the last range may be open-ended"),
    ({ALLREDUCE: "3:1024-0"}, "ends before it starts"),
    ({ALLREDUCE: "3:0-1023;4:512-"}, "does not start after the range before it"),
    ({ALLREDUCE: "ring:0-1023;4:1024-"}, "'ring:0-1023' is not <algorithm>"),
    ({"mca.coll_tuned_scan_algorithm": "1:0-1023;2:1024-"},
     "not supported for scan: its rule compares datatype size x communicator size"),
    ({"mca.coll_tuned_barrier_algorithm": "1:0-1023;2:1024-"}, "barrier: it has no message size"),
    ({ALLREDUCE: "1:0-1023;2:1024-", "mca.coll_tuned_dynamic_rules_filename": "/x"},
     "names one of its own"),
    ({ALLREDUCE: "1:0-1023;2:1024-", "mca.coll_tuned_use_dynamic_rules": "0"}, "turns off"),
    ({ALLREDUCE: "1:0-1023;2:1024-", "mca.coll_tuned_init_tree_fanout": "four"},
     "mca.coll_tuned_init_tree_fanout='four' is not a whole number"),
])
def test_bad_values_are_refused_naming_the_parameter(env, expected):
    variables = {"OMPI_MCA_" + k[4:]: v for k, v in env.items()}
    with pytest.raises(FlavourError, match=re.escape(expected)) as info:
        rules.launch_files(variables, 2)
    assert "mca.coll_tuned_" in str(info.value) and "\n" not in str(info.value)


def test_a_placed_command_writes_its_file_once(tmp_path):
    _, files = rules.launch_files({"OMPI_MCA_coll_tuned_bcast_algorithm": "6:0-8191;8:8192-"}, 4)
    command = LaunchCommand(["true"], {rules.RULES_FILE: rules.FILE_NAME}, files=files)
    placed = command.placed(tmp_path)
    assert placed.env[rules.RULES_FILE] == str(tmp_path.resolve() / rules.FILE_NAME)
    assert (tmp_path / rules.FILE_NAME).read_text() == files[0].text
    assert command.env[rules.RULES_FILE] == rules.FILE_NAME  # the prepared command is unchanged
    with pytest.raises(AlreadyExists):  # a run's file is never overwritten
        command.placed(tmp_path)


def test_a_bad_value_stops_the_run_before_anything_is_launched(tmp_path):
    run = run_allreduce_axis(tmp_path, ALLREDUCE, ["1:0-1023;2:1024-", "1:0-1023;2:512-"])
    assert run.returncode != 0
    assert f"{ALLREDUCE}='1:0-1023;2:512-'" in run.stderr
    assert "does not start after the range before it" in run.stderr
    assert not (tmp_path / "results" / "local" / "bad" / "points").exists()


# --- the real Open MPI -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def imb_bin(request) -> Path:
    """IMB-MPI1 built against Debian's Open MPI: $COMMSTACK_IMB_OPENMPI_BIN, else Spack's."""
    if shutil.which("mpirun.openmpi") is None:
        pytest.skip("skipped: no Debian Open MPI (apt install openmpi-bin libopenmpi-dev)")
    given = os.environ.get("COMMSTACK_IMB_OPENMPI_BIN")
    if given and (Path(given) / "IMB-MPI1").exists():
        return Path(given)
    return request.getfixturevalue("imb_openmpi_bin")


def _sweep(imb_bin: Path, root: Path, name: str, benchmark: str, ranks: int,
           values: List[str], msglog: str = "0:12") -> Path:
    matrix = root / "matrices" / "local" / f"{name}.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)
    axis = f"mca.coll_tuned_{benchmark.lower()}_algorithm"
    matrix.write_text(dedent(f"""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 120
        stacks:
          ompi: {{flavour: openmpi, launcher: mpirun.openmpi, bin: {imb_bin}}}
        parameters: {{ranks_per_node: {ranks}, npmin: {ranks}, benchmarks: {benchmark},
                     msglog: "{msglog}", iter: 10}}
        product:
          {axis}: {json.dumps(values)}
        """))
    run = commstack("run", str(matrix), "--out", str(root / "results"))
    assert run.returncode in (0, 3), run.stdout[-2000:] + run.stderr[-3000:]  # 3: poisoned runs
    return root / "results" / "local" / name


_ROW = re.compile(r"^\s*(\d+)\s+\d+\s+\d+\.\d+", re.M)


def _runs(campaign: Path, axis: str) -> Dict[str, dict]:
    """value -> its record, the sizes IMB printed, whether it ended with MPI_ERR_ARG, its file."""
    out = {}
    for rec in records(campaign):
        folder = campaign / "points" / rec["point_id"] / f"rep{rec['repeat']}.try{rec['attempt']}"
        out[rec["params"][axis]] = {
            "record": rec, "folder": folder,
            "sizes": [int(s) for s in _ROW.findall((folder / rec["stdout"]).read_text())],
            "err_arg": rec["exit_code"] == MPI_ERR_ARG,
            "file": (folder / rules.FILE_NAME).read_text()}
    return out


def _poisoned_from(value: str, scale: int = 1) -> int:
    """The first size (as the rules file counts it) whose rule is algorithm 99."""
    return next(first for first, alg in rules.message_rules(rules.parse(value)) if alg == 99) // scale


ALLREDUCE_VALUES = ["1:0-1023;99:1024-", "1:0-255;99:256-", "1:0-1023;99:1048576-"]


@pytest.fixture(scope="module")
def allreduce(imb_bin, tmp_path_factory):
    """Allreduce on 2 ranks; a campaign named ``verify`` so a tuning's export can read it."""
    root = tmp_path_factory.mktemp("rules")
    return _sweep(imb_bin, root, "verify", "Allreduce", 2, ALLREDUCE_VALUES)


def _check_poisoned(run: dict, first_bad: int, ok_sizes: List[int]) -> None:
    expected = [s for s in ok_sizes if s < first_bad]
    assert run["sizes"] == expected and run["err_arg"], (run["sizes"], first_bad)
    assert run["record"]["status"] == "crash"


def _check_record(run: dict) -> None:
    rec, folder = run["record"], run["folder"]
    env = rec["env"]
    # The record says what was launched: the per-size value in params, the file in env (and
    # kept beside the run's outputs), no forced algorithm, and that its use could not be checked.
    assert env[rules.RULES_FILE] == str(folder.resolve() / rules.FILE_NAME)
    assert env[rules.USE_RULES] == "1" and not any(
        k.startswith("OMPI_MCA_coll_tuned_") and k.endswith("_algorithm") for k in env)
    assert ["-x", rules.RULES_FILE] == rec["argv"][rec["argv"].index(rules.RULES_FILE) - 1:][:2]
    assert any("could not be checked" in n and rules.FILE_NAME in n for n in rec["notes"])


@pytest.mark.spack
@pytest.mark.mpi
def test_open_mpi_reads_the_file_and_its_allreduce_boundaries_are_in_bytes(allreduce):
    runs = _runs(allreduce, ALLREDUCE)
    ok = runs["1:0-1023;99:1048576-"]  # the poisoned band is above every size measured
    assert ok["record"]["status"] == "ok" and not ok["err_arg"] and max(ok["sizes"]) == 4096
    for value in ALLREDUCE_VALUES[:2]:
        _check_poisoned(runs[value], _poisoned_from(value), ok["sizes"])
    for run in runs.values():
        _check_record(run)
    # Each run's file is its own (the prepared command named it; the run wrote it).
    assert "1024 99 4 0" in runs["1:0-1023;99:1024-"]["file"]
    assert "256 99 4 0" in runs["1:0-255;99:256-"]["file"]


@pytest.mark.spack
@pytest.mark.mpi
def test_alltoall_boundaries_are_per_process_bytes_times_the_ranks(imb_bin, tmp_path):
    # 3 ranks: a boundary of 768 bytes per process is 2304 in the file. Written unscaled (768)
    # the run would stop after 128 bytes, scaled by 2 (1536) after 256; right, after 512.
    values = ["1:0-767;99:768-", "1:0-767;2:768-"]
    runs = _runs(_sweep(imb_bin, tmp_path, "a2a", "Alltoall", 3, values), ALLTOALL)
    ok = runs["1:0-767;2:768-"]
    assert ok["record"]["status"] == "ok" and max(ok["sizes"]) == 4096
    _check_poisoned(runs["1:0-767;99:768-"], _poisoned_from("1:0-767;99:768-"), ok["sizes"])
    assert "2304 99 4 0" in runs["1:0-767;99:768-"]["file"]
    for run in runs.values():
        _check_record(run)


@pytest.mark.spack
@pytest.mark.mpi
def test_the_exported_file_is_the_verified_one_and_ucx_env_finds_it_anywhere(allreduce, imb_bin):
    value = "1:0-1023;99:1048576-"
    settings = {ALLREDUCE: value}
    case = allreduce.parent  # <case>/verify is the campaign
    result = CaseResult({"benchmarks": "Allreduce"}, settings, [], case, 0, dict(settings),
                        {ALLREDUCE: 0}, {"faster": [], "slower": [], "same": [], "data": {}},
                        dict(settings))
    summary = export.write_case_files(result, registry.get("imb-mpi1"))
    tuned = case / "tuned"
    measured = _runs(allreduce, ALLREDUCE)[value]
    assert (tuned / rules.FILE_NAME).read_text() == measured["file"]
    assert summary["files"][rules.FILE_NAME] == "verify/" + str(
        (measured["folder"] / rules.FILE_NAME).relative_to(allreduce))
    mca = (tuned / "mca-params.conf").read_text()
    # No line Open MPI would take for the forced algorithm (it takes one number).
    assert [line for line in mca.splitlines() if not line.startswith("#")] == [
        "coll_tuned_use_dynamic_rules = 1"]
    # Sourced from another directory, ucx.env points Open MPI at the file beside it: the band
    # poisoned from 1 MiB (never measured by the verify) now fails exactly there.
    elsewhere = tuned.parent / "elsewhere"
    elsewhere.mkdir()
    script = (f". {tuned}/ucx.env && echo $OMPI_MCA_coll_tuned_dynamic_rules_filename && "
              f"exec mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 {imb_bin}/IMB-MPI1 "
              "Allreduce -msglog 19:21 -iter 5 -npmin 2")
    out = subprocess.run(["bash", "-c", script], cwd=elsewhere, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.splitlines()[0] == str(tuned / rules.FILE_NAME)
    sizes = [int(s) for s in _ROW.findall(out.stdout)]
    assert max(sizes) == 2 ** 19 and out.returncode == MPI_ERR_ARG, (sizes, out.stderr[-500:])
    with pytest.raises(Exception, match="no successful verify run"):
        ompi_export.measured_file(allreduce, {ALLREDUCE: "1:0-1023;99:1024-"})  # it crashed


PLAN = """\
campaign: ompi-persize
base:
  benchmark: imb-mpi1
  repeats: 3
  timeout: 120
  stacks:
    ompi: {flavour: openmpi, launcher: mpirun.openmpi, bin: "${COMMSTACK_IMB_OPENMPI_BIN}"}
  parameters: {stack: ompi, benchmarks: Allreduce, msglog: "0:12", iter: 50, npmin: 2,
               ranks_per_node: 2, mca.coll_tuned_use_dynamic_rules: 1}
defaults:
  mca.coll_tuned_allreduce_algorithm: 0
steps:
  - name: algorithm
    product:
      mca.coll_tuned_allreduce_algorithm: [0, 3, 4]
"""


@pytest.mark.spack
@pytest.mark.mpi
def test_the_tuner_verifies_the_per_size_value_and_exports_what_it_ran(imb_bin, tmp_path):
    """`commstack tune` with the step's decision already on disk (as an earlier tune leaves it;
    its bands name algorithm 3 below 1 KiB and 4 from there): the verify sweeps the default
    against "3:0-1023;4:1024-" for real, each tuned run with its own rules file, and the case
    exports whichever the rule picks, the rules file only with the per-size value."""
    plan = tmp_path / "plans" / "local" / "ompi-persize.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(PLAN)
    case = tmp_path / "results" / "local" / "ompi-persize" / "case"
    (case / "algorithm").mkdir(parents=True)
    bands = [{"from_bytes": 0, "to_bytes": 512, "best": {ALLREDUCE: 3}, "gain": 0.1},
             {"from_bytes": 1024, "to_bytes": 4096, "best": {ALLREDUCE: 4}, "gain": 0.1}]
    (case / "algorithm" / "decision.json").write_text(json.dumps({
        "step": "algorithm", "case": {}, "axes": [ALLREDUCE], "incumbent": {ALLREDUCE: 0},
        "winner": {ALLREDUCE: 3}, "changed": True, "bands": bands, "per": None, "per_group": {},
        "skipped": [], "left_out": []}))
    env = {**os.environ, "COMMSTACK_IMB_OPENMPI_BIN": str(imb_bin)}
    run = commstack("tune", str(plan), "--out", str(tmp_path / "results"), "--local", env=env)
    assert run.returncode in (0, 3), run.stdout[-3000:] + run.stderr[-3000:]
    value = "3:0-1023;4:1024-"
    runs = [r for r in records(case / "verify") if r["params"][ALLREDUCE] == value]
    assert len(runs) == 3 and all(r["status"] == "ok" for r in runs)
    files = set()
    for rec in runs:
        path = Path(rec["env"][rules.RULES_FILE])
        assert path.parent.name == f"rep{rec['repeat']}.try{rec['attempt']}"
        files.add(path.read_text())
    assert len(files) == 1 and "1024 4 4 0" in files.pop()
    summary = json.loads((case / "tuned" / "decision.json").read_text())
    ucx_env = (case / "tuned" / "ucx.env").read_text()
    if summary["settings"][ALLREDUCE] == value:
        assert summary["files"][rules.FILE_NAME].startswith("verify/points/")
        assert (case / "tuned" / rules.FILE_NAME).read_text() == Path(
            runs[0]["env"][rules.RULES_FILE]).read_text()
        assert rules.RULES_FILE in ucx_env
    else:  # kept the default: nothing per size to export
        assert "kept the default" in summary["outcome"]
        assert not (case / "tuned" / rules.FILE_NAME).exists() and rules.RULES_FILE not in ucx_env
