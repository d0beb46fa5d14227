"""Tests for commstack.benchmarks.cartex's parser on real GHEX-BENCH cartex outputs (mpi_comm runtime).

Fixtures: tests/fixtures/cartex/<stem>.out (stdout) + .err, listed in tests/fixtures/MANIFEST.csv.
Stems containing "fail-" must not parse; "synthetic-" is the one hand-written 2021-format file.
"""

import csv
import re
from pathlib import Path
from typing import List

import pytest

from commstack.benchmarks.base import ParseError
from commstack.benchmarks.cartex import parse_cartex

FIXTURES = Path(__file__).parent / "fixtures"
CARTEX = FIXTURES / "cartex"
SYNTHETIC = "synthetic-2021-format-ghex_comm-ucx-np8"


def read(stem: str, ext: str = ".out") -> str:
    return (CARTEX / f"{stem}{ext}").read_text()


def the_row(text: str) -> dict:
    """cartex prints one result: its output has exactly one row."""
    (row,) = parse_cartex(text).rows
    return row


def parse(stem: str) -> dict:
    return the_row(read(stem))


def manifest_rows() -> List[dict]:
    with open(FIXTURES / "MANIFEST.csv", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["file"].startswith("cartex/")]


CARTEX_FIXTURES = manifest_rows()
MEASURED_SUCCESS = [r for r in CARTEX_FIXTURES if "fail-" not in r["file"] and "synthetic" not in r["file"]]


def test_manifest_lists_existing_files():
    assert len(CARTEX_FIXTURES) >= 10
    for row in CARTEX_FIXTURES:
        assert (FIXTURES / row["file"]).exists(), row["file"]
        assert (FIXTURES / row["file"].replace(".out", ".err")).exists(), row["file"]


@pytest.mark.parametrize("entry", CARTEX_FIXTURES, ids=[r["file"] for r in CARTEX_FIXTURES])
def test_every_fixture_parses_or_fails_as_expected(entry):
    text = (FIXTURES / entry["file"]).read_text()
    if "fail-" in entry["file"]:
        with pytest.raises(ParseError):
            parse_cartex(text)
        return
    output = parse_cartex(text)
    (row,) = output.rows
    assert row["ranks"] == int(entry["ranks"])
    assert row["time_10000_calls_s"] == pytest.approx(row["mean_s"] * 1e4, rel=1e-12)
    assert output.notes == []


def _option(command: str, name: str, count: int, default: List[int]) -> List[int]:
    match = re.search(rf"--{name}((?: \d+){{{count}}})", command)
    return [int(v) for v in match.group(1).split()] if match else default


@pytest.mark.parametrize("entry", MEASURED_SUCCESS, ids=[r["file"] for r in MEASURED_SUCCESS])
def test_load_matches_halo_formula(entry):
    """load = 2 * ranks * ((X+2h)(Y+2h)(Z+2h) - XYZ) * nfields * sizeof(float)  (ghexbench.md §6)."""
    command = entry["command"]
    x, y, z = _option(command, "domain", 3, [64, 64, 64])
    (halo,) = _option(command, "halo", 1, [1])
    (fields,) = _option(command, "nfields", 1, [1])
    (nrep,) = _option(command, "nrep", 1, [10])
    shell = (x + 2 * halo) * (y + 2 * halo) * (z + 2 * halo) - x * y * z
    values = the_row((FIXTURES / entry["file"]).read_text())
    assert values["load_bytes"] == 2 * int(entry["ranks"]) * shell * fields * 4
    assert values["repetitions"] == nrep


def test_mpicart_values_from_file():
    output = parse("mpi_comm-mpicart221-np4")
    assert (output["runtime"], output["ranks"]) == ("mpi_comm", 4)
    values = output
    assert values["repetitions"] == 200
    assert values["load_bytes"] == 55552.0
    assert values["mean_s"] == 3.630615e-05
    assert values["median_s"] == 3.49620000e-05
    assert values["p5_s"] == 3.42910000e-05 and values["p95_s"] == 3.78560000e-05
    assert values["min_s"] == 3.19770000e-05 and values["max_s"] == 1.46368000e-04
    assert values["tp_median_gbs"] == 1.58892512e00
    assert values["tp_max_gbs"] == 1.73724865e00
    assert values["time_10000_calls_s"] == pytest.approx(0.3630615)
    assert "setup_time_s" not in values and "throughput_gbs" not in values


def test_all_current_keys_present():
    expected = {"runtime", "ranks", "repetitions", "load_bytes", "elapsed_s", "mean_s", "stddev_s",
                "median_s", "p5_s", "p25_s", "p75_s", "p95_s", "min_s", "max_s", "tp_median_gbs",
                "tp_p5_gbs", "tp_p25_gbs", "tp_p75_gbs", "tp_p95_gbs", "tp_min_gbs", "tp_max_gbs",
                "time_10000_calls_s"}
    assert set(parse("mpi_comm-hwcart-node221-np4-check")) == expected


def test_throughput_is_load_over_time():
    values = parse("mpi_comm-hwcart-node211-np2-h2-f2-zyx-check")
    assert values["tp_median_gbs"] == pytest.approx(1e-9 * values["load_bytes"] / values["median_s"], rel=1e-6)
    assert values["tp_min_gbs"] == pytest.approx(1e-9 * values["load_bytes"] / values["max_s"], rel=1e-6)


def test_warning_on_stderr_does_not_matter():
    assert "Warning: ignoring argument --order" in read("mpi_comm-mpicart211-np2-ignored-order", ".err")
    assert parse("mpi_comm-mpicart211-np2-ignored-order")["ranks"] == 2


def test_2021_format_synthetic():
    output = parse(SYNTHETIC)
    assert (output["runtime"], output["ranks"]) == ("ghex_comm UCX none", 8)
    values = output
    assert values["setup_time_s"] == 0.000312847
    assert values["throughput_gbs"] == 1.61711192e00
    assert values["tp_stddev_gbs"] == 1.97472900e-01
    assert values["mean_s"] == 2.62477363e-04
    assert values["time_10000_calls_s"] == pytest.approx(2.62477363)
    assert "repetitions" not in values and "tp_median_gbs" not in values


def test_launcher_prefix_is_stripped():
    text = "".join(f"[1,0]<stdout>:{line}\n" for line in read("mpi_comm-mpicart221-np4").splitlines())
    assert the_row(text) == parse("mpi_comm-mpicart221-np4")


# ----------------------------------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stem", ["fail-decomposition-mismatch-np4", "fail-hwcart-mismatch-np2"])
def test_could_not_create_decomposition(stem):
    with pytest.raises(ParseError, match="could not create decomposition") as error:
        parse(stem)
    assert error.value.line == 1


@pytest.mark.parametrize("stem", ["fail-unknown-option-np2", "fail-missing-value-np2"])
def test_command_line_error_is_on_stderr(stem):
    assert read(stem) == ""
    with pytest.raises(ParseError, match="empty output"):
        parse(stem)
    with pytest.raises(ParseError, match="command line parsing error"):
        parse_cartex(read(stem) + read(stem, ".err"))


def test_segfault_without_decomposition():
    with pytest.raises(ParseError, match="empty output"):
        parse("fail-no-decomposition-np2")


def test_check_failed():
    lines = read("mpi_comm-hwcart-node221-np4-check").splitlines()
    lines.insert(2, "check failed!!!!!!!!!!!!!!!!! expected 7 but found 0")
    with pytest.raises(ParseError, match="check failed") as error:
        parse_cartex("\n".join(lines))
    assert error.value.line == 3


def test_missing_mean_line():
    text = "\n".join(line for line in read("mpi_comm-mpicart221-np4").splitlines() if not line.startswith("mean"))
    with pytest.raises(ParseError, match="no 'mean \\(s\\)' line"):
        parse_cartex(text)


def test_result_block_cut_off():
    text = read("mpi_comm-mpicart221-np4")
    cut = text[: text.index("tp. 25% c.")]
    with pytest.raises(ParseError, match="cut off: missing tp_p25_gbs"):
        parse_cartex(cut)


def test_missing_ranks_line():
    text = read("mpi_comm-mpicart221-np4").replace("running on 4 ranks\n", "")
    with pytest.raises(ParseError, match="running on N ranks"):
        parse_cartex(text)


def test_histogram_cut_off_is_a_note():
    text = read("mpi_comm-mpicart221-np4")
    output = parse_cartex(text[: text.index("3.4527e-05")])
    assert output.rows[0]["mean_s"] == 3.630615e-05
    assert output.notes == ["histogram incomplete (no 'over' row): output may be cut off after the statistics"]
