"""The OSU Micro-Benchmarks parser on real outputs: tests/fixtures/osu/<mpi>-<version>/<stem>.out,
listed in tests/fixtures/MANIFEST.csv (OSU 7.3 with Open MPI 4.1.4, MPICH 4.0.2, Intel MPI
2021.18). Stems containing "fail-" must raise ParseError; all others must parse."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import List

import pytest

from commstack.aggregate import metric_of
from commstack.benchmarks import registry
from commstack.benchmarks.base import ParseError
from commstack.benchmarks.osu import parse_osu
from tests.sweeps import commstack

FIXTURES = Path(__file__).parent / "fixtures"
OSU = FIXTURES / "osu"
ROW = re.compile(r"^(\d+)((?:[ \t]+[\d.]+)+)[ \t]*$", re.M)


def manifest_rows() -> List[dict]:
    with open(FIXTURES / "MANIFEST.csv", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["file"].startswith("osu/")]


OSU_FIXTURES = manifest_rows()
# osu_barrier / osu_ibarrier print no size column: one row, size null (test below)
SIZELESS = [r for r in OSU_FIXTURES if re.search(r"\bosu_i?barrier\b", r["command"])]
GOOD = [r for r in OSU_FIXTURES if "fail-" not in r["file"] and r not in SIZELESS]


def read(name: str) -> str:
    return (OSU / name).read_text()


def test_manifest_lists_every_fixture_and_nothing_else() -> None:
    listed = {r["file"] for r in OSU_FIXTURES}
    on_disk = {f"osu/{p.relative_to(OSU)}" for p in OSU.rglob("*.out")}
    assert listed == on_disk and len(listed) >= 60
    for name in listed:
        assert (FIXTURES / name.replace(".out", ".err")).exists(), name
    assert {r["mpi"] for r in OSU_FIXTURES} == {"openmpi", "mpich", "intelmpi"}


@pytest.mark.parametrize("entry", GOOD, ids=[r["file"] for r in GOOD])
def test_every_printed_row_becomes_a_row(entry: dict) -> None:
    text = (FIXTURES / entry["file"]).read_text()
    out = parse_osu(text)
    printed = ROW.findall(text)
    assert out.meta["version"] == "7.3" and out.notes == []
    assert len(out.rows) == len(printed) > 0
    for row, (size, values) in zip(out.rows, printed):
        assert row["bytes"] == int(size) and row["status"] == "ok"
        assert [row[k] for k in out.meta["columns"][1:]] == [
            int(v) if k == "repetitions" else float(v) for k, v in zip(out.meta["columns"][1:], values.split())]
    # the -m of the command, as sizes doubling from its minimum (killed runs stop early)
    low, high = map(int, re.search(r"-m (\d+):(\d+)", entry["command"]).groups())
    sizes = [row["bytes"] for row in out.rows]
    assert sizes[0] == low and all(b == 2 * a for a, b in zip(sizes, sizes[1:]))
    assert sizes[-1] == high or entry["file"].split("/")[-1].startswith("killed-")


@pytest.mark.parametrize("entry", GOOD, ids=[r["file"] for r in GOOD])
def test_metric_names_are_the_ones_aggregation_reads(entry: dict) -> None:
    out = parse_osu((FIXTURES / entry["file"]).read_text())
    exe = re.search(r"\b(osu_\w+)", entry["command"]).group(1)
    full = " -f " in f" {entry['command']} "
    expected = {
        "osu_latency": ["bytes", "t_us"], "osu_multi_lat": ["bytes", "t_us"],
        "osu_bw": ["bytes", "mbytes_per_s"], "osu_bibw": ["bytes", "mbytes_per_s"],
        "osu_mbw_mr": ["bytes", "mbytes_per_s", "msg_per_s"],
    }.get(exe, ["bytes", "t_avg_us"] + (["t_min_us", "t_max_us", "repetitions"] if full else []))
    assert out.meta["columns"] == expected
    metric = metric_of(out.rows[0], "osu")
    assert metric == {"t_us": ("t_us", True), "mbytes_per_s": ("mbytes_per_s", False),
                      "t_avg_us": ("t_avg_us", True)}[expected[1]]


@pytest.mark.parametrize("entry", SIZELESS, ids=[r["file"] for r in SIZELESS])
def test_ibarrier_is_one_row_without_a_size(entry: dict) -> None:
    """osu_ibarrier prints the four non-blocking columns and one line of numbers, no size."""
    text = (FIXTURES / entry["file"]).read_text()
    out = parse_osu(text)
    printed = re.findall(r"^[ \t]*((?:[\d.]+[ \t]+){3}[\d.]+)[ \t]*$", text, re.M)
    assert out.meta["benchmark"] == "Non-blocking Barrier Latency" and out.notes == []
    assert out.meta["columns"] == ["t_ovrl_us", "t_cpu_us", "t_pure_us", "overlap_pct"]
    assert len(out.rows) == len(printed) == 1 and out.rows[0]["bytes"] is None
    assert [out.rows[0][k] for k in out.meta["columns"]] == [float(v) for v in printed[0].split()]
    assert metric_of(out.rows[0], "osu") == ("t_ovrl_us", True)


def test_titles_name_the_benchmark() -> None:
    names = {p.stem: parse_osu(p.read_text()).meta["benchmark"]
             for p in (OSU / "openmpi-4.1.4").glob("*.out") if not p.stem.startswith("fail-")}
    assert names["latency-np2"] == "Latency" and names["bw-np2"] == "Bandwidth"
    assert names["bibw-np2"] == "Bi-Directional Bandwidth"
    assert names["multi_lat-np2"] == "Multi Latency"
    assert names["allreduce-full-np4"] == "Allreduce Latency"
    assert names["alltoall-np2"] == "All-to-All Personalized Exchange Latency"
    assert names["bcast-np4"] == "Broadcast Latency"


def test_message_rate_test_prints_its_title_twice_and_its_pairs() -> None:
    text = read("mpich-4.0.2/mbw_mr-np2.out")
    assert text.count("# OSU MPI Multiple Bandwidth / Message Rate Test v7.3") == 2
    out = parse_osu(text)
    assert out.meta["benchmark"] == "Multiple Bandwidth / Message Rate"
    assert (out.meta["pairs"], out.meta["window_size"]) == (1, 64)
    assert all(r["pairs"] == 1 and r["window_size"] == 64 for r in out.rows)
    assert out.meta["datatypes"] == ["MPI_CHAR"] and out.rows[0]["datatype"] == "MPI_CHAR"


def test_full_statistics_are_ordered_and_count_iterations() -> None:
    for path in OSU.rglob("*-full-np*.out"):
        for row in parse_osu(path.read_text()).rows:
            assert row["t_min_us"] <= row["t_avg_us"] <= row["t_max_us"], (path, row)
            assert row["repetitions"] == 100  # -i 100


FAILURES = [
    ("openmpi-4.1.4/fail-latency-np3.out", "empty output"),
    ("mpich-4.0.2/fail-latency-np3.out", "empty output"),
    ("intelmpi-2021.18/fail-latency-np3.out", "empty output"),
    ("openmpi-4.1.4/fail-latency-full-option-np2.out", "osu_latency printed its usage text"),
    ("mpich-4.0.2/fail-latency-full-option-np2.out", "osu_latency printed its usage text"),
    ("openmpi-4.1.4/fail-bw-bad-size-np2.out", "line 2: Bandwidth: column header but no rows"),
    ("mpich-4.0.2/fail-bw-bad-size-np2.out", "column header but no rows"),
    ("openmpi-4.1.4/fail-latency-all-types-np2.out", r"line 9: .*\(MPI_CHAR, MPI_INT\).*-T all"),
    ("openmpi-4.1.4/fail-allreduce-all-types-np2.out", r"second table.*-T all"),
]


@pytest.mark.parametrize("name, message", FAILURES)
def test_failures_raise_a_clear_error(name: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_osu(read(name))


def test_every_fail_fixture_is_covered_above() -> None:
    covered = {name for name, _ in FAILURES}
    fails = {r["file"][len("osu/"):] for r in OSU_FIXTURES if "fail-" in r["file"]}
    assert fails == covered


def test_the_stderr_of_the_failures_says_why() -> None:
    assert "This test requires exactly two processes" in read("openmpi-4.1.4/fail-latency-np3.err")
    assert "Invalid option [-f]" in read("mpich-4.0.2/fail-latency-full-option-np2.err")


def test_output_cut_inside_a_row_or_before_the_rows_is_an_error() -> None:
    text = read("openmpi-4.1.4/allreduce-full-np4.out")
    last = text.rstrip().splitlines()[-1]
    cut = text[:text.rindex(last) + len(last) - 6]  # the last row without its Iterations column
    with pytest.raises(ParseError, match=r"line 17: Allreduce Latency: row has 4 values, the header"):
        parse_osu(cut)
    with pytest.raises(ParseError, match="no column header"):
        parse_osu(text[:text.index("# Size")])
    with pytest.raises(ParseError, match="column header but no rows"):
        parse_osu(text[:text.index("\n1 ") + 1])


def test_a_missing_row_is_an_error() -> None:
    lines = read("mpich-4.0.2/latency-np2.out").splitlines(keepends=True)
    gap = "".join(line for line in lines if not line.startswith("64 "))
    with pytest.raises(ParseError, match="message size 128 follows 32"):
        parse_osu(gap)


def test_a_killed_run_parses_up_to_its_last_flushed_row() -> None:
    # The limitation the sweep covers with the exit status (124 here): OSU has no end line.
    out = parse_osu(read("openmpi-4.1.4/killed-latency-np2.out"))
    assert out.rows[-1]["bytes"] < 4194304
    (entry,) = [r for r in OSU_FIXTURES if r["file"] == "osu/openmpi-4.1.4/killed-latency-np2.out"]
    assert entry["exit_code"] == "124"


def test_other_output_is_not_taken_for_osu() -> None:
    imb = next((FIXTURES / "imb" / "openmpi-4.1.4").glob("*mpi1-pingpong-np2.out")).read_text()
    with pytest.raises(ParseError, match="OSU"):
        parse_osu(imb)


def test_a_table_without_its_title_is_read_and_says_what_is_missing() -> None:
    whole = parse_osu(read("openmpi-4.1.4/latency-np2.out"))
    pasted = parse_osu(read("openmpi-4.1.4/latency-np2.out").split("\n", 1)[1])  # title lost
    assert [r["t_us"] for r in pasted.rows] == [r["t_us"] for r in whole.rows]
    assert {r["benchmark"] for r in pasted.rows} == {None} and pasted.meta["version"] == ""
    assert any("test name and OMB version are not printed" in n for n in pasted.notes)


def test_registry_builds_the_command_and_picks_this_parser() -> None:
    bench = registry.get("osu")
    assert registry.parser_for("osu") is parse_osu
    argv = bench.argv({"executable": "osu_allreduce", "message_size": "1:4096", "iterations": 100,
                       "warmup": 10, "full": True})
    assert argv == ["osu_allreduce", "-m", "1:4096", "-i", "100", "-x", "10", "-f"]
    assert bench.argv({"full": False}) == ["osu_latency"]


def test_parse_command_prints_rows_as_json() -> None:
    run = commstack("parse", str(OSU / "openmpi-4.1.4" / "bcast-full-np4.out"), "--benchmark", "osu",
                    "--json")
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(rows) == 13 and rows[0]["benchmark"] == "Broadcast Latency"
    assert rows[-1]["bytes"] == 4096 and rows[-1]["repetitions"] == 100
    bad = commstack("parse", str(OSU / "mpich-4.0.2" / "fail-bw-bad-size-np2.out"), "--benchmark", "osu")
    assert bad.returncode != 0 and "column header but no rows" in bad.stderr
