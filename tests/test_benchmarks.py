"""Every registered benchmark, one table row each: its family module, a real fixture its parser
reads, the figure of merit and row keys of that fixture's rows, an argv. Adding a benchmark =
one module in src/commstack/benchmarks/ + a row in BENCHMARKS below (the tests fail until then).

Also: what is derived from the modules (matrix schema, `commstack parse` choices, report
labels), and `commstack parse`'s warnings and exit status on real fixtures."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from commstack.benchmarks import registry
from commstack.benchmarks.base import Output, ParseError
from commstack.matrix.load import load_matrix
from commstack.matrix.model import MatrixError
from commstack.report.tables import units
from tests.sweeps import commstack

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Row:
    module: str  # family module in commstack.benchmarks
    fixture: str  # a real output under tests/fixtures
    metric: str  # figure of merit of the fixture's first row
    keys: Tuple[str, ...]  # row keys present in every row of the fixture
    params: Dict[str, object]  # matrix parameters ...
    argv: List[str]  # ... and the argv they make


BENCHMARKS: Dict[str, Row] = {
    "imb-mpi1": Row("imb", "imb/openmpi-4.1.4/v2021.11-mpi1-pingpong-np2-tag-output.out", "t_us",
                    ("benchmark", "np", "bytes"), {"benchmarks": "PingPong Allreduce", "msglog": "0:4"},
                    ["IMB-MPI1", "PingPong", "Allreduce", "-msglog", "0:4"]),
    "imb-rma": Row("imb", "imb/openmpi-4.1.4/v2021.11-rma-unidir-np2.out", "t_us",
                   ("benchmark", "np", "mode", "bytes"), {"benchmarks": ["Unidir_put"], "iter": 10},
                   ["IMB-RMA", "Unidir_put", "-iter", "10"]),
    "imb-nbc": Row("imb", "imb/openmpi-4.1.4/v2021.11-nbc-ialltoall-ibarrier-np4.out", "t_ovrl_us",
                   ("benchmark", "np"), {"benchmarks": "Ialltoall", "npmin": 4},  # Ibarrier: no bytes
                   ["IMB-NBC", "Ialltoall", "-npmin", "4"]),
    "imb-p2p": Row("imb", "imb/openmpi-4.1.4/v2021.11-p2p-pingpong-np2.out", "t_us",
                   ("benchmark", "np", "bytes"), {"benchmarks": "PingPong", "msglog": "0:8"},
                   ["IMB-P2P", "PingPong", "-msglog", "0:8"]),
    "cartex": Row("cartex", "cartex/mpi_comm-mpicart221-np4.out", "mean_s", (),
                  {"executable": "benchmark_ghex_comm", "domain": "64x64x64", "check": True},
                  ["benchmark_ghex_comm", "--domain", "64", "64", "64", "--check"]),
    "gasnet-testlarge": Row("gasnet", "gasnet/smp-testlarge-np2.out", "mbytes_per_s",
                            ("benchmark", "mode", "bytes", "node"),
                            {"mb_units": True, "iters": 100, "maxsz": 4096, "sections": "B"},
                            ["testlarge", "-m", "100", "4096", "B"]),
    "gasnet-testsmall": Row("gasnet", "gasnet/smp-testsmall-np2.out", "t_us",
                            ("benchmark", "mode", "bytes", "node"),
                            {"iters": 1000, "maxsz": 8, "sections": "A"}, ["testsmall", "1000", "8", "A"]),
    "osu": Row("osu", "osu/openmpi-4.1.4/allreduce-full-np4.out", "t_avg_us", ("benchmark", "bytes"),
               {"executable": "osu_allreduce", "message_size": "1:64", "full": True},
               ["osu_allreduce", "-m", "1:64", "-f"]),
    "reprompi": Row("reprompi", "reprompi/openmpi-4.1.4/barrier-v-bcast-np2.out", "t_med_us",
                    ("benchmark", "bytes"),
                    {"calls": ["MPI_Bcast", "MPI_Reduce"], "msizes": "8,1024", "nrep": 50,
                     "proc_sync": "window", "window_size": 200, "verbose": True},
                    ["mpibenchmark", "--calls-list=MPI_Bcast,MPI_Reduce", "--msizes-list=8,1024",
                     "--nrep=50", "--proc-sync=window", "--window-size=200", "-v"]),
}
# The output format of each family module, as `commstack parse --benchmark` takes it.
FORMATS = {"imb": "imb", "cartex": "cartex", "gasnet": "gasnet", "osu": "osu",
           "reprompi": "reprompi"}


def test_the_table_names_every_registered_benchmark():
    assert sorted(registry.names()) == sorted(BENCHMARKS)
    assert sorted(registry.formats()) == sorted(FORMATS.values())


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_benchmark_is_owned_by_its_family_module(name):
    row, bench = BENCHMARKS[name], registry.get(name)
    module = importlib.import_module(f"commstack.benchmarks.{row.module}")
    assert bench in module.BENCHMARKS
    assert bench.format == FORMATS[row.module]
    assert registry.parser_for(name) is bench.parse is registry.parser_for(bench.format)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_fixture_parses_to_rows_with_the_metric_and_row_keys(name):
    row, bench = BENCHMARKS[name], registry.get(name)
    output = bench.parse((FIXTURES / row.fixture).read_text())
    assert isinstance(output, Output) and output.rows
    assert bench.fatal(output) == []
    figure = registry.metric_of(output.rows[0], name)
    assert figure is not None and figure.key == row.metric
    assert isinstance(output.rows[0][row.metric], float)
    assert units(row.metric) == figure.label != row.metric
    assert set(row.keys) <= set(bench.row_keys)
    for parsed in output.rows:
        assert all(parsed.get(k) is not None for k in row.keys), parsed
    # The row keys tell the rows of one run apart.
    identities = [tuple(parsed.get(k) for k in bench.row_keys) for parsed in output.rows]
    assert len(set(identities)) == len(identities)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_parameters_become_argv(name):
    row = BENCHMARKS[name]
    assert registry.get(name).argv(row.params) == row.argv


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_parser_rejects_empty_output_naming_the_problem(name):
    with pytest.raises(ParseError, match=r"\w"):
        registry.get(name).parse("")


def test_metric_priority_is_the_benchmarks_own():
    # A GASNet row has no t_avg_us; an OSU collective row with both picks t_avg_us, as IMB does.
    both = {"t_avg_us": 2.0, "t_us": 1.0, "mbytes_per_s": 5.0}
    assert registry.metric_of(both, "osu").key == "t_avg_us"
    assert registry.metric_of(both, "imb-mpi1").key == "t_avg_us"
    assert registry.metric_of(both, "gasnet-testlarge").key == "t_us"
    assert registry.metric_of({"mbytes_per_s": 5.0}, "gasnet-testlarge").lower_is_better is False
    assert registry.metric_of({"t_us": 1.0}, "cartex") is None


def test_unknown_names_say_what_is_known():
    with pytest.raises(KeyError, match="imb-mpi1"):
        registry.get("hpcg")
    with pytest.raises(KeyError, match="imb.*osu|osu.*imb"):
        registry.parser_for("hpcg")


def test_matrix_schema_takes_its_benchmark_names_from_the_modules(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("benchmark: hpcg\nstacks:\n  ompi: {flavour: openmpi}\n")
    with pytest.raises(MatrixError) as error:
        load_matrix(path)
    assert "hpcg" in str(error.value)
    assert all(name in str(error.value) for name in BENCHMARKS)


def test_parse_help_lists_the_formats_and_exit_status():
    run = commstack("parse", "--help")
    assert run.returncode == 0
    assert all(f in run.stdout for f in FORMATS.values())
    assert "exit status" in run.stdout and "Invalid benchmark name" in run.stdout


def test_parse_rejects_an_unknown_format():
    run = commstack("parse", "--benchmark", "hpcg", str(FIXTURES / BENCHMARKS["osu"].fixture))
    assert run.returncode == 2 and "imb" in run.stderr


def test_parse_of_a_complete_run_prints_notes_as_warnings():
    fixture = FIXTURES / "imb/openmpi-4.1.4/v2021.11-mpi1-pingpong-np2-ucx-info.out"
    notes = registry.parser_for("imb")(fixture.read_text()).notes
    assert notes, "this fixture's UCX lines give a note"
    run = commstack("parse", "--benchmark", "imb", str(fixture))
    assert run.returncode == 0, run.stderr
    assert [f"warning: {n}" for n in notes] == run.stderr.splitlines()


def test_parse_of_imb_with_an_invalid_name_fails():
    # IMB met "nosuchbench", ran its default list instead and exited 0.
    fixture = FIXTURES / "imb/openmpi-4.1.4/v2021.11-mpi1-pingpong-invalid-name-np2.out"
    run = commstack("parse", "--benchmark", "imb", str(fixture))
    assert run.returncode == 3
    assert "warning: Invalid benchmark name nosuchbench" in run.stderr
    assert "did not run what was asked" in run.stderr and str(fixture) in run.stderr
    assert run.stdout  # the rows it has are still shown


@pytest.mark.parametrize("fmt,fixture,line", [
    ("gasnet", "gasnet/fail-smp-testlarge-odd-np3.out", 6),
    ("imb", "imb/openmpi-4.1.4/v2021.11-fail-rank-killed-np4.out", None),
    ("osu", "osu/openmpi-4.1.4/fail-latency-full-option-np2.out", None),
])
def test_parse_of_a_broken_run_fails_naming_file_and_line(fmt, fixture, line):
    # exit 2, as every command ends on a ParseError (commstack.errors); 3 is for a complete output
    # of the wrong measurement
    path = FIXTURES / fixture
    with pytest.raises(ParseError) as error:
        registry.parser_for(fmt)(path.read_text())
    run = commstack("parse", "--benchmark", fmt, str(path))
    assert run.returncode == 2 and run.stdout == ""
    assert f"{path}: {error.value}" in run.stderr and "Traceback" not in run.stderr
    if line is not None:
        assert error.value.line == line and f"line {line}:" in run.stderr
