"""OSU Micro-Benchmarks outputs written by other people (OMB 5.0 to 7.5.2: issue threads and pull
requests of Open MPI, MPICH, UCX, libfabric, EasyBuild, EESSI, AWS ParallelCluster).

Table-driven from tests/fixtures/osu/external/MANIFEST.tsv: per file its source, OMB version, the
test name its title gives and what it must yield: ``expect`` parse (rows), warn (rows, and a note
saying the output is not all OMB's: the CLI prints it as a warning), refused (ParseError);
``rows`` the number of rows; ``spot`` "<bytes>|<key>=<value>;..." (a row with those values must
exist); ``notes`` a substring of a note (parse, warn) or of the error (refused).
"""

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from commstack.benchmarks import registry
from commstack.benchmarks.base import ParseError
from commstack.benchmarks.osu import parse_osu
from commstack.errors import USER_ERROR_EXIT
from tests.sweeps import commstack

EXTERNAL = Path(__file__).parent / "fixtures" / "osu" / "external"
with open(EXTERNAL / "MANIFEST.tsv", newline="") as handle:
    ENTRIES = list(csv.DictReader(handle, delimiter="\t"))
READABLE = [e for e in ENTRIES if e["expect"] != "refused"]
# osu_barrier: "# Avg Latency(us)" and one number, no size column ("-" in spot)
SIZELESS = [e for e in READABLE if e["spot"].startswith("-|")]
SIZED = [e for e in READABLE if e not in SIZELESS]
# A table row as OMB prints it: the size, then numbers (after an Open MPI tag, if any).
ROW = re.compile(r"(?:^[ \t]*|<stdout>:)(\d+)((?:[ \t]+[\d.]+)+)[ \t]*$", re.M)


def test_manifest_lists_every_file_and_enough_of_them():
    listed = {entry["file"] for entry in ENTRIES}
    assert listed == {p.name for p in EXTERNAL.glob("*.txt")}
    assert len(ENTRIES) >= 12
    # a thread's address, or a repository file at a commit
    assert all(re.match(r"github \S+/\S+ ", entry["source"])
               and re.search(r"https://github\.com/\S+/(issues|pull)/\d+|@[0-9a-f]{40}",
                             entry["source"]) for entry in ENTRIES)
    assert {entry["expect"] for entry in ENTRIES} == {"parse", "warn", "refused"}
    majors = Counter(entry["osu_version"].split(".")[0] for entry in ENTRIES)
    assert majors["5"] >= 5 and majors["7"] >= 5, majors


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_external_output(entry):
    text = (EXTERNAL / entry["file"]).read_text()
    if entry["expect"] == "refused":
        with pytest.raises(ParseError, match=re.escape(entry["notes"])):
            parse_osu(text)
        return
    output = parse_osu(text)
    assert len(output.rows) == int(entry["rows"])
    assert output.meta["version"] == entry["osu_version"]
    assert output.meta["benchmark"] == entry["benchmark"]
    assert all(row["status"] == "ok" and row["benchmark"] == entry["benchmark"]
               for row in output.rows)
    for spot in filter(None, entry["spot"].split(";")):
        size, assignment = spot.split("|")
        key, value = assignment.split("=")
        matches = [row for row in output.rows if row["bytes"] == (None if size == "-" else int(size))
                   and (row.get(key) == value if key == "datatype"
                        else row.get(key) == pytest.approx(float(value)))]
        assert matches, spot
    if entry["notes"]:
        assert any(entry["notes"] in note for note in output.notes), output.notes
    if entry["expect"] == "warn":
        assert any("not OSU rows" in note for note in output.notes), output.notes


@pytest.mark.parametrize("entry", SIZED, ids=[e["file"] for e in SIZED])
def test_every_printed_row_comes_back_with_its_values(entry):
    text = (EXTERNAL / entry["file"]).read_text()
    output = parse_osu(text)
    printed = ROW.findall(text)
    assert len(printed) == len(output.rows) > 0
    value_keys = output.meta["columns"][1:]
    for row, (size, values) in zip(output.rows, printed):
        assert row["bytes"] == int(size)
        assert [row[k] for k in value_keys] == [
            int(v) if k == "repetitions" else float(v) for k, v in zip(value_keys, values.split())]


def test_device_buffers_and_accelerator_come_from_the_output():
    cuda = parse_osu((EXTERNAL / "osu7.2-cuda-bw-DD-eessi-np2.txt").read_text())
    assert (cuda.meta["accelerator"], cuda.meta["buffers"]) == ("CUDA", "D D")
    rocm = parse_osu((EXTERNAL / "osu7.5-rocm-bw-DD-pair01-banner.txt").read_text())
    # OMB 7.5 prints no buffer line: the command asked for D D, the output does not say so.
    assert (rocm.meta["accelerator"], rocm.meta["buffers"]) == ("ROCM", None)
    host = parse_osu((EXTERNAL / "osu5.8-bibw-ompi412-ucx1.11-np2.txt").read_text())
    assert (host.meta["accelerator"], host.meta["buffers"]) == (None, None)


def test_multi_pair_rows_carry_the_printed_pairs_and_nothing_else_invented():
    mbw = parse_osu((EXTERNAL / "osu5.7.1-mbw_mr-pairs48-efa.txt").read_text())
    assert (mbw.meta["pairs"], mbw.meta["window_size"]) == (48, 64)
    for name in ("osu5.0-cray-latency-srun-np2.txt", "osu7.3-cuda-reduce-full-np192.txt"):
        rows = parse_osu((EXTERNAL / name).read_text()).rows
        assert not any("np" in row or "pairs" in row for row in rows)  # OMB prints no np


def test_a_title_without_a_version_is_read_and_noted():
    text = (EXTERNAL / "osu5.6.2-ucx-ugni-bw-np2.txt").read_text().replace(" v5.6.2", "", 1)
    output = parse_osu(text)
    assert output.meta["version"] == "" and len(output.rows) == 23
    assert any("prints no OMB version" in note for note in output.notes)


def test_a_failed_validation_is_a_failed_run():
    # osu_bibw -c as OMB 7.x prints it (print_header: "Validation" column, Pass/Fail per row),
    # built on the rows of a real 5.8 output.
    lines = (EXTERNAL / "osu5.8-bibw-ompi412-ucx1.11-np2.txt").read_text().splitlines()
    lines[1] += "          Validation"
    lines[2:] = [line + ("    Fail" if line.startswith("8 ") else "    Pass") for line in lines[2:]]
    output = parse_osu("\n".join(lines) + "\n")
    assert [row["validation"] for row in output.rows[:5]] == ["Pass"] * 3 + ["Fail", "Pass"]
    assert registry.get("osu").fatal(output) == [
        "validation failed at message sizes 8 (OMB -c)"]


def test_parse_command_warns_and_refuses_like_for_imb():
    hang = commstack("parse", str(EXTERNAL / "osu5.4.1-alltoall-np20-verbs-hang.txt"),
                     "--benchmark", "osu")
    assert hang.returncode == 0, hang.stderr
    assert len(hang.stdout.splitlines()) == 9
    assert "warning: ignored 1 line(s) in the table that are not OSU rows" in hang.stderr
    assert "never progresses" in hang.stderr
    crash = commstack("parse", str(EXTERNAL / "osu7.5-cuda-bibw-DD-lnx-segfault-after-1-row.txt"),
                      "--benchmark", "osu")
    assert crash.returncode == USER_ERROR_EXIT and crash.stdout == ""
    assert "line 10: the run ended abnormally" in crash.stderr
    hung = commstack("parse", str(EXTERNAL / "osu5.6.2-get_acc_latency-tag-output-hang.txt"),
                     "--benchmark", "osu")
    assert hung.returncode == USER_ERROR_EXIT and "column header but no rows" in hung.stderr


def test_barrier_outputs_of_omb_5_and_7_are_one_row_without_a_size():
    """osu_barrier prints "# Avg Latency(us)" and one number, osu_ibarrier its four non-blocking
    columns and one line of numbers (OMB 5.x to 7.x; 5.6.3 without "#" before the header): one
    row, size null; before, the parser refused them as "column header but no rows"."""
    versions = {e["osu_version"].split(".")[0] for e in SIZELESS}
    assert {"5", "7"} <= versions, versions
    assert {e["benchmark"] for e in SIZELESS} == {"Barrier Latency", "Non-blocking Barrier Latency"}
    for entry in SIZELESS:
        text = (EXTERNAL / entry["file"]).read_text()
        output = parse_osu(text)
        printed = re.findall(r"^[ \t]*((?:\d+\.\d+[ \t]+)*\d+\.\d+)[ \t]*$", text, re.M)
        columns = output.meta["columns"]
        assert [[row[k] for k in columns] for row in output.rows] == [
            [float(v) for v in line.split()] for line in printed]
        assert output.rows[0]["bytes"] is None
        assert columns == (["t_avg_us"] if entry["benchmark"] == "Barrier Latency"
                           else ["t_ovrl_us", "t_cpu_us", "t_pure_us", "overlap_pct"])


def test_a_second_number_under_a_barrier_header_is_refused():
    text = (EXTERNAL / "osu7.3-barrier-orfeo-np4.txt").read_text() + "             1.52\n"
    with pytest.raises(ParseError, match="line 4: .*second row"):
        parse_osu(text)
