"""ReproMPI mpibenchmark parser on real outputs: made here (tests/fixtures/reprompi/<mpi>/, listed
in tests/fixtures/MANIFEST.csv: Open MPI 4.1.4 and MPICH 4.0.2, barrier, double barrier, window,
hierarchical (Topo2) synchronisation, -v, --summary, failures) and written elsewhere by an older
release (tests/fixtures/reprompi/external/, each with its source in MANIFEST.tsv)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from commstack.benchmarks import registry
from commstack.benchmarks.base import ParseError
from commstack.benchmarks.reprompi import NOT_IN_EFFECT, parse_reprompi, samples

FIXTURES = Path(__file__).parent / "fixtures"
HERE = sorted((FIXTURES / "reprompi").glob("*-*/*.out"))
EXTERNAL = FIXTURES / "reprompi" / "external"


def _manifest():
    with open(FIXTURES / "MANIFEST.csv", newline="") as handle:
        return {r["file"]: r for r in csv.DictReader(handle) if r["file"].startswith("reprompi/")}


def test_every_fixture_made_here_is_in_the_manifest():
    assert len(HERE) == 20
    assert sorted(_manifest()) == sorted(str(p.relative_to(FIXTURES)) for p in HERE)


@pytest.mark.parametrize("path", HERE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_outputs_made_here(path):
    text = path.read_text()
    if "fail-bad-call" in path.stem:
        with pytest.raises(ParseError):
            parse_reprompi(text)
        return
    out = parse_reprompi(text)
    assert out.rows
    nrep = out.meta["nrep"]
    for row in out.rows:
        assert row["repetitions"] == nrep
        assert 0 <= row["valid"] <= nrep
        assert isinstance(row["bytes"], int) and "count" not in row
        if row["valid"] and "t_min_us" in row:  # --summary: ReproMPI's own statistics
            assert row["t_min_us"] <= row["t_med_us"] <= row["t_max_us"]
        elif row["valid"] >= 6:
            assert row["t_low_us"] <= row["t_med_us"] <= row["t_high_us"]
    fatal = registry.get("reprompi").fatal(out)
    assert bool(fatal) == ("runtime-type-not-in-effect" in path.stem), fatal


def test_verbose_runtimes_are_the_slowest_process_per_call():
    """-v: the local run-time of a call is the largest (end - start) over the processes, as
    ReproMPI computes it; the global one runs from the first start to the last end."""
    text = (FIXTURES / "reprompi/openmpi-4.1.4/barrier-v-bcast-np2.out").read_text()
    lines = [line.split() for line in text.splitlines() if line.strip().split()[:1] in (["0"], ["1"])]
    call0 = [w for w in lines if w[1] == "MPI_Bcast" and w[2] == "0" and w[3] == "8"]
    assert len(call0) == 2
    local = max(float(w[5]) - float(w[4]) for w in call0)
    glob = max(float(w[7]) for w in call0) - min(float(w[6]) for w in call0)
    got = samples(text)[("MPI_Bcast", 8)]
    assert got.measured == 10 and len(got.local) == 10
    assert got.local[0] == pytest.approx(local)
    assert got.global_[0] == pytest.approx(glob)
    assert got.start_skew[0] >= 0


def test_window_calls_outside_their_window_are_left_out():
    text = (FIXTURES / "reprompi/openmpi-4.1.4/window-too-small-np2.out").read_text()
    out = parse_reprompi(text)
    (row,) = out.rows
    assert row["valid"] == 0 and row["t_med_us"] is None
    assert any("5 of 5 calls started outside their window" in n for n in out.notes)
    assert samples(text)[("MPI_Bcast", 8)].local == []


def test_the_median_has_an_interval_from_six_calls_on():
    out = parse_reprompi((FIXTURES / "reprompi/openmpi-4.1.4/barrier-bcast-allreduce-np2.out")
                         .read_text())
    for row in out.rows:
        assert row["valid"] == 20
        assert row["t_low_us"] <= row["t_med_us"] <= row["t_high_us"]
    # call by call, each call's sizes in order: one block of the record's table per call
    assert [(r["benchmark"], r["bytes"]) for r in out.rows] == [
        (c, b) for c in ("MPI_Bcast", "MPI_Allreduce", "MPI_Reduce") for b in (8, 1024, 65536)]


def test_hierarchical_clock_synchronisation_is_read_from_the_header():
    out = parse_reprompi((FIXTURES / "reprompi/openmpi-4.1.4/hierarchical-window-v-np2.out")
                         .read_text())
    assert out.meta["clocksync"] == "TwoLevelSync" and out.meta["procsync"] == "window"


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.95])
def test_output_cut_off_is_refused(keep):
    text = (FIXTURES / "reprompi/mpich-4.0.2/barrier-v-bcast-np2.out").read_text()
    cut = text[: int(len(text) * keep)]
    with pytest.raises(ParseError, match="cut off|did not finish"):
        parse_reprompi(cut)


def test_damaged_lines_are_named():
    text = (FIXTURES / "reprompi/openmpi-4.1.4/barrier-bcast-allreduce-np2.out").read_text()
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if "MPI_Bcast" in line and not line.startswith("#"))
    lines[row] = lines[row].replace("MPI_Bcast", "MPI_Bcast x")
    with pytest.raises(ParseError, match=f"line {row + 1}:"):
        parse_reprompi("\n".join(lines))
    lines[row] = "MPI_Bcast 0 8 zero"
    with pytest.raises(ParseError, match=f"line {row + 1}: not a result line"):
        parse_reprompi("\n".join(lines))
    with pytest.raises(ParseError, match="empty output"):
        parse_reprompi("")


def _external():
    with open(EXTERNAL / "MANIFEST.tsv", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def test_every_external_fixture_has_its_source():
    names = sorted(p.name for p in EXTERNAL.glob("*.txt"))
    assert names == sorted(r["file"] for r in _external())
    assert all(r["source"] for r in _external())


@pytest.mark.parametrize("entry", _external(), ids=lambda r: r["file"])
def test_outputs_of_other_versions(entry):
    out = parse_reprompi((EXTERNAL / entry["file"]).read_text())
    assert len(out.rows) == int(entry["rows"])
    assert out.meta["procsync"] == "MPI_Barrier" and out.meta["runtime_type"] == "local"
    by_count = {r["bytes"]: r for r in out.rows}  # MPI_BYTE: the printed count is the bytes
    for spot in entry["spot"].split(";"):
        count, assignment = spot.split("|")
        key, value = assignment.split("=")
        assert by_count[int(count)][key] == pytest.approx(float(value), rel=1e-3)  # 4 digits
    assert registry.get("reprompi").fatal(out) == []


def test_options_are_given_with_equals_signs():
    argv = registry.get("reprompi").argv({"calls": "MPI_Bcast,MPI_Allgather", "nrep": 10,
                                          "runtime_type": "global", "shuffle_jobs": False})
    assert argv == ["mpibenchmark", "--calls-list=MPI_Bcast,MPI_Allgather", "--nrep=10",
                    "--runtime-type=global"]
    assert NOT_IN_EFFECT.startswith("asked")
    # an empty value leaves the option out (barrier points of a zip with window sizes)
    assert registry.get("reprompi").argv({"proc_sync": "MPI_Barrier", "window_size": ""}) == \
        ["mpibenchmark", "--proc-sync=MPI_Barrier"]


def test_a_call_stores_one_block_per_kind_of_row_whatever_the_window_keeps():
    """Under load, window synchronisation keeps 0, a few or all calls of a size, in any order of
    sizes: a record's table stores one block per kind of row (every value; too few calls for an
    interval; no valid call), not one per alternation (a CI run's record grew to 7.8 KB)."""
    from commstack.store.record import rows_table

    text = (FIXTURES / "reprompi/openmpi-4.1.4/window-v-bcast-np2.out").read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    columns = next(line for line in text.splitlines() if line.startswith("process"))
    sizes = [2 ** k for k in range(3, 15)]
    header = [line for line in header if not line.startswith("#\t")]
    header.insert(header.index("#Message sizes:") + 1, "\n".join(f"#\t{s}" for s in sizes))
    keep = [10, 3, 10, 0, 2, 10, 0, 10, 4, 10, 1, 10]  # valid calls per size, alternating kinds
    rows = []
    for process in (0, 1):
        for size, kept in zip(sizes, keep):
            for rep in range(10):
                start = 0.001 + rep * 0.0002 + size * 1e-9
                rows.append(f"{process:7d} {'MPI_Bcast':>50} {rep:10d} {size:12d} "
                            f"{0 if rep < kept else 1:10d} {start:14.10f} {start + 2e-6:14.10f} "
                            f"{start:14.10f} {start + 2e-6:14.10f}")
    output = parse_reprompi("\n".join(header + [columns] + rows) + "\n")
    assert [r["valid"] for r in output.rows] == sorted(keep, key=lambda k: (k == 0, 0 < k < 6))
    assert [r["bytes"] for r in output.rows if r["valid"] == 10] == [8, 32, 256, 1024, 4096, 16384]
    assert len(rows_table(output.rows)["blocks"]) == 3
