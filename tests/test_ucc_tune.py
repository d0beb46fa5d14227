"""Must show (issue 24): a tuning step over ``env.UCC_TL_UCP_TUNE`` whose bands name several
TL/UCP algorithms becomes UCC's own per-size value; UCC 1.3.0 (Open MPI 4.1.4 + coll/ucc, the
view ompi-ucc of environments/local) takes it with the boundary exactly where commstack puts it;
bad values are refused, naming the parameter, before anything is launched.

Evidence: UCC 1.3.0 never prints which algorithm served a call. ``UCC_COLL_TRACE=info`` names
the TL per call (``CL_BASIC {TL_UCP}``); ``UCC_LOG_LEVEL=info`` prints the team's score map,
whose ranges UCC merges where neighbours have the same algorithm, score and fallbacks
(``ucc_coll_score_update_one``). So a range boundary at the written size appears exactly when the
algorithms on its two sides differ: the test asserts it is there for the written value, absent
for the same ranges naming one algorithm, and that every Allreduce call on either side was served
by TL/UCP. Which algorithm ran a given call could not be checked beyond that.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from commstack.flavours import FlavourError, ucc_tune
from commstack.tune.per_size import per_size_settings, ucc_ranges
from tests.sweeps import commstack, records, run_allreduce_axis

AXIS = "env.UCC_TL_UCP_TUNE"
BANDS = [{"from_bytes": 0, "to_bytes": 512, "best": {AXIS: "allreduce:@knomial"}},
         {"from_bytes": 1024, "to_bytes": 4096, "best": {AXIS: "allreduce:@sra_knomial"}}]
WRITTEN = "allreduce:0-1024:@knomial#allreduce:1024-inf:@sra_knomial"


# --- what commstack writes and refuses -------------------------------------------------------
def test_bands_become_one_per_size_value_with_shared_boundaries():
    assert ucc_ranges(BANDS, AXIS, "") == WRITTEN
    three = BANDS + [{"from_bytes": 65536, "best": {AXIS: "allreduce:@1"}}]
    assert ucc_ranges(three, AXIS, None) == (
        "allreduce:0-1024:@knomial#allreduce:1024-65536:@sra_knomial#allreduce:65536-inf:@1")
    # The incumbent's band keeps its value; unset, it gets no token (UCC's own choice there).
    kept = [{"from_bytes": 0, "best": {AXIS: ""}}, BANDS[1]]
    assert ucc_ranges(kept, AXIS, "") == "allreduce:1024-inf:@sra_knomial"
    assert ucc_ranges(kept, AXIS, "allreduce:@0") == (
        "allreduce:0-1024:@0#allreduce:1024-inf:@sra_knomial")
    # Extra qualifiers of a candidate stay in its token.
    scored = [{"from_bytes": 0, "best": {AXIS: "allreduce:@0:host"}}, BANDS[1]]
    assert ucc_ranges(scored, AXIS, "") == (
        "allreduce:0-1024:@0:host#allreduce:1024-inf:@sra_knomial")


@pytest.mark.parametrize("bands", [
    [BANDS[0], {"from_bytes": 1024, "best": {AXIS: "allreduce:@knomial"}}],  # one algorithm
    [{"from_bytes": 0, "best": {AXIS: "alltoall:@0"}},
     {"from_bytes": 1024, "best": {AXIS: "alltoall:@1"}}],  # x team size, no process count
    [{"from_bytes": 0, "best": {AXIS: "gather:@0"}},
     {"from_bytes": 1024, "best": {AXIS: "gather:@1"}}],  # root and others count differently
    [BANDS[0], {"from_bytes": 1024, "best": {AXIS: "bcast:@1"}}],  # two collectives
    [BANDS[0], {"from_bytes": 1024, "best": {AXIS: "allreduce:0-4k:@1"}}],  # already per size
])
def test_bands_that_do_not_fit_keep_the_single_winner(bands):
    assert ucc_ranges(bands, AXIS, "") is None
    step = {"axes": [AXIS], "bands": bands, "incumbent": {AXIS: ""}}
    assert per_size_settings([step], {AXIS: "allreduce:@knomial"}) == {AXIS: "allreduce:@knomial"}


A2A_BANDS = [{"from_bytes": 0, "best": {AXIS: "alltoall:@pairwise"}},
             {"from_bytes": 1024, "best": {AXIS: "alltoall:@bruck"}}]
A2A_WRITTEN = "alltoall:[2]:0-2048:@pairwise#alltoall:[2]:2048-inf:@bruck"


def test_whole_buffer_collectives_are_written_for_the_team_size_they_were_tuned_at():
    """UCC counts an alltoall's or allgather's size over the whole receive buffer: IMB's bytes
    times the processes, for teams of that size alone."""
    assert ucc_ranges(A2A_BANDS, AXIS, "", 2) == A2A_WRITTEN
    gathered = [{"from_bytes": 0, "best": {AXIS: "allgather:@ring"}},
                {"from_bytes": 4096, "best": {AXIS: "allgather:@knomial"}}]
    assert ucc_ranges(gathered, AXIS, "", 4) == (
        "allgather:[4]:0-16384:@ring#allgather:[4]:16384-inf:@knomial")
    assert ucc_ranges(A2A_BANDS, AXIS, "", None) is None
    step = {"axes": [AXIS], "bands": A2A_BANDS, "incumbent": {AXIS: ""}, "processes": 2}
    assert per_size_settings([step], {AXIS: "alltoall:@bruck"}) == {AXIS: A2A_WRITTEN}
    # A candidate that names its own team sizes is not rewritten.
    own = [A2A_BANDS[0], {"from_bytes": 1024, "best": {AXIS: "alltoall:[2]:@bruck"}}]
    assert ucc_ranges(own, AXIS, "", 2) is None


def test_a_step_writes_the_per_size_value_into_the_settings():
    step = {"axes": [AXIS], "bands": BANDS, "incumbent": {AXIS: ""}, "per": None}
    assert per_size_settings([step], {AXIS: "allreduce:@knomial"}) == {AXIS: WRITTEN}


@pytest.mark.parametrize("value, expected", [
    ("allreduce:0-1024:@0#allreduce:512-inf:@1", "ranges 0-1024 and 512-inf overlap"),
    ("allreduce:4k-1k:@0", "'4k-1k' does not end after it starts"),
    ("allreduce:0-1x:@0", "'1x' is not a size in bytes"),
    ("allreduce:0-4k", "has neither a score nor an @algorithm"),
    ("alreduce:0-4k:@0", "'alreduce' in 'alreduce:0-4k:@0' is none of UCC's qualifiers"),
    ("allreduce:cpu:@0", "'cpu' in 'allreduce:cpu:@0' is none of UCC's qualifiers"),
    ("allreduce:0-4k:0-8k:@0", "gives the ranges qualifier twice"),
])
def test_bad_values_are_refused_naming_the_parameter(value, expected):
    with pytest.raises(FlavourError, match=re.escape(expected)) as info:
        ucc_tune.check_env({ucc_tune.VARIABLE: value})
    assert str(info.value).startswith(f"env.UCC_TL_UCP_TUNE={value!r}: ")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", [
    "", "allreduce:0", WRITTEN, "allreduce:0-4k:@0#allreduce:4k-inf:@1",
    "allreduce,bcast:host:[2-8,16]:inf:@1", "alltoall:0-256b,1M-inf:20"])
def test_values_ucc_takes_pass(value):
    ucc_tune.check_env({ucc_tune.VARIABLE: value})


def test_only_a_per_size_value_gets_a_note():
    assert ucc_tune.notes({ucc_tune.VARIABLE: "allreduce:0"}) == []
    assert ucc_tune.notes({}) == [] == ucc_tune.notes({ucc_tune.VARIABLE: ""})
    (note,) = ucc_tune.notes({ucc_tune.VARIABLE: WRITTEN})
    assert "could not be checked" in note and "\n" not in note


def test_a_bad_value_stops_the_run_before_anything_is_launched(tmp_path):
    run = run_allreduce_axis(tmp_path, AXIS, [WRITTEN, "allreduce:0-1024:@0#allreduce:512-inf:@1"])
    assert run.returncode != 0
    assert "env.UCC_TL_UCP_TUNE='allreduce:0-1024:@0#allreduce:512-inf:@1'" in run.stderr
    assert "overlap" in run.stderr
    assert not (tmp_path / "results" / "local" / "bad" / "points").exists()


# --- the real UCC ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ucc_bin() -> Path:
    from tests import spack_support

    return spack_support.ompi_ucc_bin(need=("IMB-MPI1", "mpirun", "ucc_info"))


_MAP = re.compile(r"COLL_SCORE_MAP \(team_id (\d+), size (\d+)\)")
_TRACE = re.compile(r"coll_init: Allreduce sum: src=\{[^,]+, (\d+), float32, Host\}.*?; "
                    r"CL_BASIC \{(\w+)\}")
_ROW = re.compile(r"^\s*(\d+)\s+\d+\s+\d+\.\d+", re.M)


def _run(bindir: Path, tune: str, tmp: Path, benchmark: str = "Allreduce") -> Tuple[str, str]:
    """IMB-MPI1 ``benchmark``, 256 B to 4 KiB on 2 ranks through coll/ucc with UCC's trace and
    log; (stdout, stderr)."""
    env = {**os.environ, "OMPI_MCA_coll_ucc_enable": "1", "OMPI_MCA_coll_ucc_priority": "100",
           "UCC_COLL_TRACE": "info", "UCC_LOG_LEVEL": "info", ucc_tune.VARIABLE: tune}
    proc = subprocess.run([str(bindir / "mpirun"), "--allow-run-as-root", "--oversubscribe",
                           "-np", "2", str(bindir / "IMB-MPI1"), "-npmin", "2", "-msglog", "8:12",
                           "-iter", "5", benchmark], env=env, cwd=tmp, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def _allreduce_map(text: str) -> List[str]:
    """The Host ranges of Allreduce in the first team's score map (MPI_COMM_WORLD's)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if _MAP.search(line))
    at = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith("Allreduce:"))
    return re.findall(r"\{([^}]+)\}:TL_UCP:\d+", lines[at + 1])


def _served(stdout: str) -> Dict[int, set]:
    """Bytes of each Allreduce (float sum, IMB's) UCC traced -> the TLs that served them."""
    out: Dict[int, set] = {}
    for count, tl in _TRACE.findall(stdout):
        out.setdefault(int(count) * 4, set()).add(tl)
    return out


@pytest.mark.spack
@pytest.mark.mpi
def test_ucc_takes_the_written_value_with_its_boundary_where_commstack_puts_it(ucc_bin, tmp_path):
    assert ucc_tune.check(WRITTEN)
    stdout, stderr = _run(ucc_bin, WRITTEN, tmp_path)
    both = stdout + stderr
    assert "failed to parse UCC_*_TUNE" not in both and "incorrect algorithm" not in both
    assert [int(s) for s in _ROW.findall(stdout)][-5:] == [256, 512, 1024, 2048, 4096]
    # The boundary: 0..1023 one range, 1024 on another (4K is TL/UCP's own default boundary).
    assert _allreduce_map(both) == ["0..1023", "1K..4095", "4K..inf"]
    # Every IMB Allreduce on either side was served by TL/UCP (not Open MPI's fallback).
    served = _served(stdout)
    for size in (256, 512, 1024, 2048, 4096):
        assert served.get(size) == {"TL_UCP"}, (size, served)

    # Controls: the same ranges naming one algorithm merge into one (no boundary at 1024), so
    # the boundary above is there because the algorithms differ; with no value, UCC's default.
    same = WRITTEN.replace("@sra_knomial", "@knomial")
    assert _allreduce_map("".join(_run(ucc_bin, same, tmp_path))) == ["0..4095", "4K..inf"]
    assert _allreduce_map("".join(_run(ucc_bin, "", tmp_path))) == ["0..4095", "4K..inf"]
    # Why commstack shares the boundary: written with inclusive ends, UCC gives 1023 to the
    # default between the ranges, and the first range ends at 1022.
    inclusive = "allreduce:0-1023:@sra_knomial#allreduce:1024-inf:@knomial"
    assert _allreduce_map("".join(_run(ucc_bin, inclusive, tmp_path)))[0] == "0..1022"


def _alltoall_map(bindir: Path, tune: str, tmp: Path) -> Tuple[List[str], List[int]]:
    """IMB-MPI1 Alltoall (as :func:`_run`): the Host ranges of Alltoall in the first team's
    score map, and the source counts UCC traced."""
    text = "".join(_run(bindir, tune, tmp, "Alltoall"))
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if _MAP.search(line))
    at = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith("Alltoall:"))
    counts = [int(c) for c in re.findall(r"coll_init: Alltoall: src=\{[^,]+, (\d+), uint8", text)]
    return re.findall(r"\{([^}]+)\}:TL_UCP:\d+", lines[at + 1]), counts


@pytest.mark.spack
@pytest.mark.mpi
def test_ucc_takes_an_alltoall_value_for_its_team_size_with_the_boundary_scaled(ucc_bin,
                                                                                  tmp_path):
    ranges, counts = _alltoall_map(ucc_bin, A2A_WRITTEN, tmp_path)
    # UCC counts IMB's 256 B Alltoall on 2 ranks as 512 bytes: the whole receive buffer.
    assert min(counts) == 512 and max(counts) == 4096 * 2
    # The written boundary, 1024 B per process x 2, is in the map: 2K ...
    assert ranges[-1] == "2K..inf" and ranges[-2].endswith("..2047"), ranges
    # ... because the algorithms differ there (one algorithm: no boundary), and only for teams
    # of 2 (the same value for teams of 4 leaves this team's map as UCC's default).
    default, _ = _alltoall_map(ucc_bin, "", tmp_path)
    assert "2K..inf" not in default
    assert _alltoall_map(ucc_bin, A2A_WRITTEN.replace("@bruck", "@pairwise"), tmp_path)[0] == \
        default
    assert _alltoall_map(ucc_bin, A2A_WRITTEN.replace("[2]", "[4]"), tmp_path)[0] == default


PLAN = """\
campaign: ucc-persize
base:
  benchmark: imb-mpi1
  repeats: 3
  timeout: 120
  stacks:
    ompi-ucc: {flavour: openmpi, launcher: mpirun, bin: "${COMMSTACK_OMPI_UCC_BIN}"}
  parameters: {stack: ompi-ucc, benchmarks: Allreduce, msglog: "8:12", iter: 50, npmin: 2,
               ranks_per_node: 2, oversubscribe: auto, mca.coll_ucc_enable: 1,
               mca.coll_ucc_priority: 100}
defaults:
  env.UCC_TL_UCP_TUNE: ""
steps:
  - name: algorithm
    product:
      env.UCC_TL_UCP_TUNE: ["", "allreduce:@knomial", "allreduce:@sra_knomial"]
"""


@pytest.mark.spack
@pytest.mark.mpi
def test_the_tuner_verifies_the_per_size_value_and_exports_what_it_ran(ucc_bin, tmp_path):
    """`commstack tune` with the step's decision already on disk (as an earlier tune leaves it;
    its bands name knomial below 1 KiB and sra_knomial from there): the verify sweeps the default
    against the per-size value for real, UCC serving its allreduces, and the case exports it only
    if the rule picks it."""
    plan = tmp_path / "plans" / "local" / "ucc-persize.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(PLAN)
    case = tmp_path / "results" / "local" / "ucc-persize" / "case"
    (case / "algorithm").mkdir(parents=True)
    (case / "algorithm" / "decision.json").write_text(json.dumps({
        "step": "algorithm", "case": {}, "axes": [AXIS], "incumbent": {AXIS: ""},
        "winner": {AXIS: "allreduce:@knomial"}, "changed": True,
        "bands": [dict(b, gain=0.1) for b in BANDS], "per": None, "per_group": {},
        "skipped": [], "left_out": []}))
    env = {**os.environ, "COMMSTACK_OMPI_UCC_BIN": str(ucc_bin)}
    run = commstack("tune", str(plan), "--out", str(tmp_path / "results"), "--local", env=env)
    assert run.returncode in (0, 3), run.stdout[-3000:] + run.stderr[-3000:]
    runs = [r for r in records(case / "verify") if r["params"][AXIS] == WRITTEN]
    assert len(runs) == 3 and all(r["status"] == "ok" for r in runs)
    for rec in runs:
        assert rec["env"][ucc_tune.VARIABLE] == WRITTEN and "UCC_COLL_TRACE" not in rec["env"]
        assert any(n.startswith(f"UCC_TL_UCP_TUNE={WRITTEN!r} chooses") and
                   "could not be checked" in n for n in rec["notes"]), rec["notes"]
        used = rec["components_used"]  # coll/ucc's own verbose output, from the evidence run
        assert used["collectives"]["allreduce"] == ["ucc"] and used["not_used"] == []
    summary = json.loads((case / "tuned" / "decision.json").read_text())
    ucx_env = (case / "tuned" / "ucx.env").read_text()
    if summary["settings"][AXIS] == WRITTEN:
        assert f"export UCC_TL_UCP_TUNE='{WRITTEN}'" in ucx_env
    else:  # kept the default: nothing per size to export
        assert "kept the default" in summary["outcome"], summary
        assert WRITTEN not in ucx_env
