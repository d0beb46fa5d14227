"""IMB outputs written by other people (IMB 3.0 to 2021.x, HPC-X/MOFED, docs, mailing lists).

Table-driven from tests/fixtures/imb/external/MANIFEST.tsv: per file its source, IMB version and
what it must yield: ``expect`` parse|refused; ``rows`` "<benchmark>:<np>=<count>;..." (None for
what the output does not print); ``spot`` "<benchmark>|<np>|<bytes>|<key>=<value>;..." (a row
with those values must exist); ``notes`` a substring of a note (parse) or of the error (refused).
"""

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from commstack.benchmarks.base import ParseError
from commstack.benchmarks.imb import parse_imb

EXTERNAL = Path(__file__).parent / "fixtures" / "imb" / "external"
with open(EXTERNAL / "MANIFEST.tsv", newline="") as handle:
    ENTRIES = list(csv.DictReader(handle, delimiter="\t"))


def _value(text: str):
    return None if text == "None" else int(text)


def test_manifest_lists_every_file_and_enough_of_them():
    listed = {entry["file"] for entry in ENTRIES}
    assert listed == {p.name for p in EXTERNAL.glob("*.txt")}
    assert len(ENTRIES) >= 10
    assert all(entry["source"] for entry in ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_external_output(entry):
    text = (EXTERNAL / entry["file"]).read_text()
    if entry["expect"] == "refused":
        with pytest.raises(ParseError, match=entry["spot"] or "."):
            parse_imb(text)
        return
    output = parse_imb(text)
    counts = Counter((row["benchmark"], row["np"]) for row in output.rows)
    expected = {}
    for item in entry["rows"].split(";"):
        key, count = item.split("=")
        benchmark, np = key.split(":")
        expected[(None if benchmark == "None" else benchmark, _value(np))] = int(count)
    assert dict(counts) == expected
    assert all(row["status"] == "ok" for row in output.rows)
    for spot in filter(None, entry["spot"].split(";")):
        benchmark, np, size, assignment = spot.split("|")
        key, value = assignment.split("=")
        matches = [row for row in output.rows
                   if row["benchmark"] == (None if benchmark == "None" else benchmark)
                   and row["np"] == _value(np) and row["bytes"] == int(size)
                   and row.get(key) == pytest.approx(float(value))]
        assert matches, spot
    version = entry["imb_version"].split(" (")[0]
    if version.startswith("unknown"):
        assert output.meta["version"] is None and output.meta["suite"] is None
    else:
        assert output.meta["version"] == version
    if entry["notes"]:
        assert any(entry["notes"] in note for note in output.notes), output.notes


def test_a_bare_table_says_what_was_not_printed():
    output = parse_imb((EXTERNAL / "imb4.1-mpi1-juno-allreduce-reduce-tables-only-excerpt.txt").read_text())
    notes = " | ".join(output.notes)
    assert "no IMB banner" in notes
    assert "benchmark and process count not printed" in notes
    assert "cannot tell whether the output is complete" in notes


def test_banner_spellings_give_the_printed_version():
    banner = "#    {} MPI Benchmark{}, MPI-1 part\n"
    table = ("#---\n# Benchmarking PingPong\n# #processes = 2\n#---\n"
             "       #bytes #repetitions      t[usec]   Mbytes/sec\n"
             "            0         1000         1.66         0.00\n\n"
             "# All processes entering MPI_Finalize\n")
    for vendor, rest, version in [("Intel (R)", " Suite V2.3", "2.3"), ("Intel (R)", "s 2018", "2018"),
                                  ("Intel(R)", "s 2021.11", "2021.11"), ("PALLAS", " Suite V2.2", "2.2")]:
        output = parse_imb(banner.format(vendor, rest) + table)
        assert output.meta["version"] == version and output.meta["suite"] == "MPI-1"
        assert len(output.rows) == 1


def test_a_banner_broken_over_two_lines_is_still_the_banner():
    # intel/mpi-benchmarks#62: "..., MPI-IO" / "partn#---": read as the banner, so the excerpt
    # (which stops after one row) is refused as cut off instead of read as an unbannered table.
    text = (EXTERNAL / "imb2021.8-io-ompi506-siwriteindv-excerpt.txt").read_text()
    assert "MPI-IO\npartn#---" in text
    with pytest.raises(ParseError, match=r"S_IWrite_Indv \(#processes=1, mode=aggregate\)"):
        parse_imb(text)
    whole = text + "\n\n# All processes entering MPI_Finalize\n"
    output = parse_imb(whole)
    assert (output.meta["version"], output.meta["suite"]) == ("2021.8", "MPI-IO")
    assert any("banner broken over two lines" in note for note in output.notes)


def test_missing_version_and_process_count_are_notes_not_guesses():
    text = (EXTERNAL / "imb2017u2-darwin-alltoallv-np2.txt").read_text()
    no_version = parse_imb(text.replace("Benchmarks 2017 update 2, MPI-1", "Benchmarks, MPI-1"))
    assert no_version.meta["version"] is None and no_version.meta["suite"] == "MPI-1"
    assert any("IMB version not printed" in note for note in no_version.notes)
    assert len(no_version.rows) == 24
    no_np = parse_imb(text.replace("# #processes = 2 \n", ""))
    assert {row["np"] for row in no_np.rows} == {None} and len(no_np.rows) == 24
    assert any("Alltoallv without a '# #processes' line: process count not printed" in note
               for note in no_np.notes)


def test_output_indented_in_markdown_reads_as_the_plain_one():
    text = (EXTERNAL / "imb4.0u1-intelmpi-azure-pingpong-np2.txt").read_text()
    indented = "".join("    " + line if line.strip() else line for line in text.splitlines(keepends=True))
    assert parse_imb(indented).rows == parse_imb(text).rows


def test_outputs_by_imb_version_and_program():
    versions = Counter(entry["imb_version"].split(" (")[0] for entry in ENTRIES)
    programs = Counter(next(iter(re.findall(r"IMB-[A-Z0-9]+", entry["imb_version"])), "IMB-MPI1")
                       for entry in ENTRIES)
    assert len(versions) >= 8 and {"IMB-EXT", "IMB-IO", "IMB-NBC", "IMB-MPI1"} <= set(programs)
