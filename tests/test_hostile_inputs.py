"""Damaged and hostile inputs: every reader ends in a result or in one sentence naming the file and
the line, never a traceback, never memory or time sized by a number in the input.

Property-based (Hypothesis, seeded: the same examples on every run) over real outputs of
tests/fixtures damaged by tests/mutations.py; the long run of the same mutations through the CLI
under a memory limit is bench/fuzz.py (figures in docs/measured.md, "Damaged inputs").
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commstack import bounds
from commstack.benchmarks import registry
from commstack.benchmarks.base import ParseError
from commstack.cli import main
from commstack.placement import reports
from tests.mutations import FAMILIES, mutate

FIXTURES = Path(__file__).parent / "fixtures"
SEEDED = settings(max_examples=120, derandomize=True, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow])
# "commstack parse: error: FILE: line N: ..." or, where no line is at fault, "...: FILE: ..."
ERROR = re.compile(r"^commstack parse: error: (?P<file>\S+): (?:line \d+: )?\S")
PARSE = {"imb": registry.get("imb-mpi1").parse, "osu": registry.get("osu").parse,
         "cartex": registry.get("cartex").parse, "gasnet": registry.get("gasnet-testlarge").parse}
FILES = {family: files() for family, (_, files) in FAMILIES.items()}


def _damaged(family: str, choice: int, seed: int) -> bytes:
    fixtures = FILES[family]
    return mutate(fixtures[choice % len(fixtures)].read_bytes(), random.Random(seed))


def _cli(path: Path, options: list) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["parse", str(path), *options])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("family", sorted(PARSE))
@SEEDED
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_a_damaged_output_is_parsed_or_refused_with_its_line(family, choice, seed):
    text = _damaged(family, choice, seed).decode(errors="replace")
    try:
        output = PARSE[family](text)
    except ParseError as exc:
        assert "\n" not in str(exc).strip()
        assert exc.line is None or str(exc).startswith(f"line {exc.line}: ")
        return
    for row in output.rows:  # what is read is in bounds
        for key, value in row.items():
            if isinstance(value, float):
                assert value == value and abs(value) != float("inf"), (key, value)
            if isinstance(value, int) and key in ("bytes", "repetitions", "np"):
                assert 0 <= value <= bounds.MAX_BYTES, (key, value)


@SEEDED
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_a_damaged_binding_report_is_read_or_refused_with_its_line(choice, seed):
    text = _damaged("placement", choice, seed).decode(errors="replace")
    try:
        found = reports.find_reports(text)
    except ParseError as exc:
        assert exc.line is not None and str(exc).startswith(f"line {exc.line}: ")
        return
    for report in found:
        for binding in report.bindings:
            assert binding.rank is None or 0 <= binding.rank <= bounds.MAX_RANKS
            _, cpus = reports.printed_cpus(binding)
            assert all(0 <= cpu <= bounds.MAX_CPUS for cpu in cpus)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=40, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_the_parse_command_exits_0_2_or_3_with_one_line_naming_the_file(family, choice, seed):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "output.txt"
        path.write_bytes(_damaged(family, choice, seed))
        code, out, err = _cli(path, FAMILIES[family][0])
    assert code in (0, 2, 3)
    errors = [line for line in err.splitlines() if not line.startswith("warning: ")]
    if code == 2:
        assert out == "" and len(errors) == 1, err
        match = ERROR.match(errors[0])
        assert match and match["file"].rstrip(":") == str(path), errors
    else:
        assert "Traceback" not in err


# --- the two cases of issue 25, and what bounds them --------------------------------------------
def _limited(args: list, limit_mb: int = 1024, timeout: float = 60) -> subprocess.CompletedProcess:
    """`commstack ARGS` in a child limited to ``limit_mb`` of address space."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
    return subprocess.run([sys.executable, "-m", "commstack", *args], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit)


def test_a_display_map_rank_past_any_machine_is_refused_not_allocated(tmp_path):
    """Issue 25: "Process rank: 99999999999999999999999" in an Open MPI --display-map made
    `parse --placement` allocate until memory died (the ranks it did not list were a range up to
    that number). Now: the line is named, in bounded memory."""
    real = (FIXTURES / "placement/external/ompi-display-map-job-map-bound-to-socket.txt").read_text()
    assert "Process rank: 0 " in real
    damaged = tmp_path / "display-map.txt"
    damaged.write_text(real.replace("Process rank: 0 ", "Process rank: 99999999999999999999999 ", 1))
    line = 1 + real[:real.index("Process rank: 0 ")].count("\n")
    result = _limited(["parse", str(damaged), "--placement"], limit_mb=1024)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.strip() == (
        f"commstack parse: error: {damaged}: line {line}: rank '99999999999999999999999' is past "
        f"what any machine has (read 0 to {bounds.MAX_RANKS})")
    # a large rank that is in bounds still reads, its gap named without listing it
    damaged.write_text(real.replace("Process rank: 0 ", "Process rank: 16000000 ", 1))
    result = _limited(["parse", str(damaged), "--placement", "--json"], limit_mb=1024)
    assert result.returncode == 0, result.stderr
    assert '"rank": 16000000' in result.stdout and "ranks 0-15999999 not printed" in result.stderr


@pytest.mark.parametrize("fixture, token", [
    ("imb/openmpi-4.1.4/v2021.11-mpi1-pingpong-np2.out", "nan"),
    ("imb/external/imb2018-hpcx-mofed-pingpong-np2.txt", "inf"),
    ("imb/intelmpi-2021.18/prebuilt-p2p-default-np2-msglog0-4.out", "nan"),
])
def test_nan_or_inf_where_an_imb_count_stands_is_a_sentence_naming_the_line(tmp_path, fixture, token):
    """Issue 25: IMB-MPI1 (Open MPI 4.1.4, HPC-X) and IMB-P2P (Intel MPI) outputs with nan or inf
    where a count stands ended in "ValueError: invalid literal for int()" and a traceback."""
    lines = (FIXTURES / fixture).read_text().splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if re.match(r"\s*#bytes\s", line))
    row = header + 1 + next(i for i, line in enumerate(lines[header + 1:]) if line.split())
    size, repetitions = lines[row].split()[:2]
    lines[row] = lines[row].replace(f"{size}{lines[row].split(size, 1)[1].split(repetitions)[0]}"
                                    f"{repetitions}", f"{size}  {token}", 1)  # #repetitions
    damaged = tmp_path / Path(fixture).name
    damaged.write_text("".join(lines))
    result = _limited(["parse", str(damaged), "--benchmark", "imb"])
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip() == (f"commstack parse: error: {damaged}: line {row + 1}: "
                                     f"repetitions: '{token}' is not a whole number")


def test_sizes_past_2_63_and_non_finite_times_are_refused_by_every_family(tmp_path):
    def read(name: str) -> str:
        return (FIXTURES / name).read_text()

    damaged = {
        "imb": read("imb/openmpi-4.1.4/v2021.11-mpi1-pingpong-np2.out").replace(" 0.40 ", " 1e309 ", 1),
        "osu": read("osu/openmpi-4.1.4/latency-np2.out").replace("4096 ", "9223372036854775808 ", 1),
        "gasnet": re.sub(r"(\d+) byte :", "99999999999999999999999 byte :",
                         read("gasnet/smp-testlarge-np2.out"), count=1),
        "cartex": re.sub(r"^(mean \(s\)\s+)\S+", r"\1inf", read("cartex/mpi_comm-mpicart221-np4.out"),
                         count=1, flags=re.M)}
    for family, text in damaged.items():
        path = tmp_path / f"{family}.out"
        path.write_text(text)
        code, out, err = _cli(path, ["--benchmark", family])
        assert code == 2 and out == "", (family, err)
        assert re.match(rf"commstack parse: error: {re.escape(str(path))}: line \d+: .*"
                        r"(not a finite number|past what any machine has)", err), (family, err)


def test_a_file_past_the_input_limit_is_refused_in_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr(bounds, "MAX_OUTPUT_BYTES", 1 << 20)
    big = tmp_path / "big.out"
    big.write_bytes(b"x" * ((1 << 20) + 1))
    code, out, err = _cli(big, ["--benchmark", "osu"])
    assert code == 2 and out == ""
    assert err.strip() == (f"commstack parse: error: {big}: 1.0 MiB is larger than commstack reads "
                           "of a benchmark output or report (1 MiB); cut it to the part that matters")


def test_a_report_listing_more_processors_than_any_run_is_refused_in_bounded_time():
    line = "[h:1] MCW rank 0 bound to package[0][core:0-65535]\n"
    with pytest.raises(ParseError, match=r"line \d+: the report lists more than"):
        reports.find_reports(line * (reports.MAX_LISTED // 65536 + 2))
    with pytest.raises(ParseError, match="line 1: processor '70000' is past"):
        reports.find_reports("[h:1] MCW rank 0 bound to package[0][core:0-70000]\n")


def test_matrices_plans_machine_facts_and_records_past_their_limit_are_refused(tmp_path, monkeypatch):
    from commstack.machine import MachineError, load_machine_file
    from commstack.matrix.load import load_matrix
    from commstack.matrix.model import MatrixError
    from commstack.store import record
    from commstack.store.record import RecordError
    from commstack.tune.plan import load_plan

    monkeypatch.setattr(bounds, "MAX_CONFIG_BYTES", 1 << 20)
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * ((1 << 20) // 10 + 1))
    for load, error in ((load_matrix, MatrixError), (load_plan, MatrixError),
                        (load_machine_file, MachineError)):
        with pytest.raises(error, match=rf"{re.escape(str(big))}: cannot read .*larger than "
                                        r"commstack reads"):
            load(big)
    monkeypatch.setattr(record, "MAX_RECORD_BYTES", 1000)
    rec = tmp_path / "record.json"
    rec.write_text('{"padding": "' + "x" * 1000 + '"}')
    with pytest.raises(RecordError, match="larger than a record.json can be"):
        record.read_json(rec)


def test_a_5000_digit_value_in_a_statistic_line_is_read_in_linear_time():
    """A regex over 'label  value' backtracked quadratically: 2 s for one 5 kB cartex line."""
    text = (FIXTURES / "cartex/mpi_comm-mpicart221-np4.out").read_text()
    damaged = re.sub(r"^(max \(s\)\s+)\S+", r"\g<1>" + "1" * 200_000 + "\0", text, count=1,
                     flags=re.M)
    output_or_error = None
    try:
        output_or_error = PARSE["cartex"](damaged)
    except ParseError as exc:
        output_or_error = exc
    assert output_or_error is not None


LONG = 400_000  # one line of this many characters; each regex below took minutes on it before


def _within_a_minute(call, *args):
    begin = time.monotonic()
    try:
        call(*args)
    except ParseError:
        pass  # refusing the line is fine; taking minutes over it is not
    assert time.monotonic() - begin < 60


def test_long_lines_that_regexes_backtracked_on_are_read_in_linear_time():
    """bench/regex_audit.py found these quadratic on a long run of one character (20 kB: 0.5 to
    18 s each): the cartex histogram rule on '|'; the Betzy importer's grid and node counts, a
    tool's version and a URL's credentials on digits. Each reader now takes one long line in
    time linear in it."""
    from commstack.importers.betzy import parse_betzy
    from commstack.machine.check.externals import first_version
    from commstack.provenance import scrub_env

    cartex = (FIXTURES / "cartex/mpi_comm-mpicart221-np4.out").read_text()
    _within_a_minute(PARSE["cartex"], cartex + "|" * LONG + "\n")
    published = json.loads((Path(__file__).parents[1] / "results/betzy/reference/imports/"
                            "betzy_allcores_27nodes.json").read_text())["text"]
    damaged = published.replace("27-nodes results", "1" * LONG + " results", 1)
    damaged = damaged.replace("64^3 per-rank grids", "1" * LONG + "^2 per-rank grids", 1)
    assert damaged != published
    _within_a_minute(parse_betzy, damaged, "betzy.md")
    _within_a_minute(first_version, "1" * LONG)
    assert scrub_env({"URL": "1" * LONG, "PROXY": "https://user:pw@proxy"}) == {
        "URL": "1" * LONG, "PROXY": "https://***@proxy"}


def test_counts_in_an_imported_study_past_any_machine_are_refused():
    from commstack.importers.betzy import parse_betzy

    published = json.loads((Path(__file__).parents[1] / "results/betzy/reference/imports/"
                            "betzy_allcores_27nodes.json").read_text())["text"]
    with pytest.raises(ParseError, match=r"ranks per compute node '99999999999999999999' is past "
                                         r"what any machine has"):
        parse_betzy(published.replace("(128 ranks per compute node",
                                      "(99999999999999999999 ranks per compute node"), "betzy.md")
