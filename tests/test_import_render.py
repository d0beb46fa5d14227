"""Must show: the published Betzy tables round-trip: import -> records -> render gives back every
number and label; published slips are corrected and noted; the records look like sweep records.

The published files are the texts kept in results/betzy/reference/imports/*.json (each with the
sha256 of the file it was imported from; the originals are GHEX-BENCH's
cartex/results/betzy/27_nodes/{halo_fields_allcores,staged}.md).
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from textwrap import dedent

import pandas as pd
import pytest

from commstack.importers.betzy import parse_betzy
from commstack.report.layout import Block, Label, Layout, Part, Section, Table, auto_layout
from commstack.report.published import (
    differences,
    layout_notes,
    render_layout,
    render_published,
    structure,
)
from commstack.store.record import Record
from tests.conftest import REPO
from tests.sweeps import commstack, records, records_csv

REFERENCE = REPO / "results" / "betzy" / "reference"
SEEDS = {"betzy_allcores_27nodes": 48, "betzy_halfcores_staged_vs_standard": 320}


def seed_text(stem: str) -> str:
    data = json.loads((REFERENCE / "imports" / f"{stem}.json").read_text())
    assert hashlib.sha256(data["text"].encode()).hexdigest() == data["source"]["sha256"]
    return data["text"]


def code_lines(text: str) -> list:
    """Every non-blank line inside fenced blocks, trailing blanks removed (exact otherwise)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif inside and line.strip():
            out.append(line.rstrip())
    return out


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Both seed files imported through the CLI into a fresh campaign."""
    tmp = tmp_path_factory.mktemp("import")
    root = tmp / "results" / "betzy" / "reference"
    for stem in SEEDS:
        source = tmp / f"{stem}.md"
        source.write_text(seed_text(stem))
        run = commstack("import", str(source), "--out", str(root))
        assert run.returncode == 0, run.stderr
        assert f"{SEEDS[stem]} new points" in run.stdout
    return tmp, root


@pytest.mark.parametrize("stem", sorted(SEEDS))
def test_round_trip_gives_every_number_and_label_back(imported, stem):
    _, root = imported
    published, rendered = seed_text(stem), render_published(root, stem)
    assert differences(published, rendered) == []
    # Stronger than "whitespace may differ": every table line is identical, column widths too.
    assert code_lines(rendered) == code_lines(published)
    numbers = [w for line in code_lines(published) for w in line.split()
               if w == "NaN" or w.replace(".", "", 1).isdigit()]
    assert len(numbers) > 100


def test_report_writes_the_reproduction_and_compare_finds_them_equal(imported):
    tmp, root = imported
    run = commstack("report", str(root))
    assert run.returncode == 0, run.stderr
    for stem in SEEDS:
        assert differences(seed_text(stem), (root / "report" / f"{stem}.md").read_text()) == []
    report = (root / "report" / "report.md").read_text()
    assert "## Published tables: betzy_allcores_27nodes.md" in report
    # Each published value with its count; one value has no interval, and the report says why.
    assert "| benchmark_mpi_comm | 2.5159 (1) | 14.759 (1) | 23.32 (1) | 148.22 (1) |" in report
    assert ("96 of 96 such cells have fewer than 6 repeats and show no interval: the interval "
            "needs 6 repeats") in report
    # The committed reference and this fresh import: every figure matched, all equal.
    cmp = commstack("compare", str(REFERENCE), str(root), "--out", str(tmp / "cmp.md"))
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr
    assert "matched figures: 368; only in A: 0; only in B: 0" in cmp.stdout
    assert "over the figures 1.000;" in cmp.stdout and "**PASS**" in cmp.stdout
    assert "same: 368; untested: 0" in cmp.stdout


def test_committed_reference_is_what_an_import_writes(imported):
    _, root = imported
    fresh = {r["point_id"]: r["parsed"] for r in records(root)}
    committed = {r["point_id"]: r["parsed"] for r in records(REFERENCE)}
    assert fresh == committed
    for stem in SEEDS:
        assert differences(seed_text(stem), render_published(REFERENCE, stem)) == []


def test_published_slips_are_corrected_and_noted(imported):
    _, root = imported
    by_dims = {(r["params"]["cores_config"], r["params"]["toolchain"], r["params"]["order"],
                r["params"].get("algorithm"), r["params"]["executable"], r["params"]["halo"],
                r["params"]["nfields"]): r for r in records(root)}
    # allcores: the second "XYZ" block of the full results holds the ZYX numbers.
    zyx = by_dims[("allcores", "ompi", "ZYX", None, "benchmark_ghex_comm_mpi", 1, 1)]
    assert zyx["parsed"][0]["time_10000_calls_s"] == 2.8566
    printed = {(p["section"], p["block"]) for p in zyx["source"]["printed"]}
    assert printed == {("### Chosen results", "Cartesian communicator numbering order: **ZYX**"),
                       ("### Full results", "Cartesian communicator numbering order: **XYZ**")}
    assert "imported as ZYX" in zyx["notes"][0]
    # halfcores: the first ZYX full-results table has no title; it is benchmark_ghex_comm_mpi.
    staged = by_dims[("halfcores", "ompi", "ZYX", "staged", "benchmark_ghex_comm_mpi", 4, 2)]
    assert staged["parsed"][0]["time_10000_calls_s"] == 13.681
    assert staged["source"]["printed"][0]["table"] is None
    assert "no title line" in staged["notes"][0]
    # As published vs corrected labels: the numbers are the same.
    corrected = render_published(root, "betzy_halfcores_staged_vs_standard", as_published=False)
    published = render_published(root, "betzy_halfcores_staged_vs_standard")
    assert corrected.count("\nbenchmark_ghex_comm_mpi\n") == published.count(
        "\nbenchmark_ghex_comm_mpi\n") + 1
    assert [w for w in structure(corrected) if w[0].isdigit()] == [
        w for w in structure(published) if w[0].isdigit()]


def test_records_look_like_sweep_records_but_say_they_are_imported(imported):
    _, root = imported
    recs = records(root)
    assert len(recs) == 368 and all(r["status"] == "ok" and r["imported"] for r in recs)
    rec = next(r for r in recs if r["params"]["cores_config"] == "allcores"
               and r["params"]["toolchain"] == "impi" and r["params"]["halo"] == 5
               and r["params"]["nfields"] == 8 and r["params"]["order"] == "XYZ")
    assert rec["params"]["executable"] == "benchmark_mpi_comm"
    assert rec["params"]["ranks_per_node"] == 128 and rec["params"]["nodes"] == 27
    assert rec["params"]["decomposition"] == "hwcart" and rec["params"]["core"] == "4 1 1"
    assert rec["parsed"] == [{"time_10000_calls_s": 142.92, "mean_s": 0.014292}]
    assert rec["source"]["file"] == "betzy_allcores_27nodes.md"
    assert {p["line"] for p in rec["source"]["printed"]} == {33, 103}
    assert rec["argv"] == [] and rec["command"] is None and rec["start"] is None
    table = pd.read_csv(io.StringIO(records_csv(root)))
    assert len(table) == 368 and set(table["param.order"]) == {"XYZ", "ZYX"}
    summary = pd.read_csv(root / "summary.csv")
    assert len(summary) == 368 and set(summary["n"]) == {1}


def test_importing_again_writes_nothing_and_a_different_number_is_refused(imported, tmp_path):
    tmp, root = imported
    source = tmp / "betzy_allcores_27nodes.md"
    again = commstack("import", str(source), "--out", str(root))
    assert again.returncode == 0 and "0 new points, 48 already imported" in again.stdout
    changed = tmp_path / "betzy_allcores_27nodes.md"
    changed.write_text(seed_text("betzy_allcores_27nodes").replace("2.9035", "2.9036"))
    refused = commstack("import", str(changed), "--out", str(root))
    assert refused.returncode == 2
    assert "2.9035" in refused.stderr and "2.9036" in refused.stderr


def test_a_contradiction_that_no_label_explains_is_an_error(tmp_path):
    text = seed_text("betzy_allcores_27nodes")
    broken = text.replace("    5    16.704    260.87", "    5    16.704    261.87", 1)
    source = tmp_path / "broken.md"
    source.write_text(broken)
    run = commstack("import", str(source), "--out", str(tmp_path / "r" / "m" / "c"))
    assert run.returncode == 2
    assert "261.87" in run.stderr and "contradicts 260.87" in run.stderr


FAMILY = dedent("""\
    ## `mpicart` vs `hwcart` results for `halfnodes`

    Comparison of results for 64^3 per-rank grids, `halfcores` (64 ranks per compute node).
    `hwcart` decomposition is `--node 3 3 3 --socket 1 1 2 --numa 1 2 2 --l3 2 2 1 --core 2 1 1`.
    Corresponding `mpicart` decomposition is `--MPICart 12 12 12`.

    Tables present execution time [s] of 10000 exchange calls. GHEX results for `impi` are
    not available (`NaN`) because of too long startup time.

    ### halo width: 1, number of fields: 1

    Cartesian communicator numbering order: **XYZ**
    ```
                                         mpicart ompi    mpicart impi    hwcart ompi    hwcart impi
                                         ____________    ____________    ___________    ___________

        benchmark_ghex_comm_mpi             2.8893             NaN         1.5976            NaN
        benchmark_mpi_comm                  2.8057          3.1499         1.7139         3.0047
    ```

    Cartesian communicator numbering order: **ZYX**
    ```
                                         mpicart ompi    mpicart impi    hwcart ompi    hwcart impi
                                         ____________    ____________    ___________    ___________

        benchmark_ghex_comm_mpi             2.9349             NaN         1.7439            NaN
        benchmark_mpi_comm                  2.9776          3.1544         1.7214         1.8137
    ```
    """)  # excerpt of GHEX-BENCH cartex/results/betzy/27_nodes/mpicart_vs_hwcart.md (line breaks,
# trailing blanks and 3 of the 5 rows dropped)


def test_comparison_tables_by_decomposition_round_trip(tmp_path):
    source = tmp_path / "mpicart_vs_hwcart.md"
    source.write_text(FAMILY)
    root = tmp_path / "results" / "betzy" / "ref"
    run = commstack("import", str(source), "--out", str(root))
    assert run.returncode == 0, run.stderr
    assert "12 numbers from 2 tables (4 cells NaN)" in run.stdout
    # The excerpt keeps 2 of the 5 rows, so its label column is wider than MATLAB would print.
    assert differences(FAMILY, render_published(root, "mpicart_vs_hwcart")) == []
    rec = next(r for r in records(root) if r["params"]["decomposition"] == "mpicart"
               and r["params"]["toolchain"] == "impi" and r["params"]["order"] == "ZYX")
    assert rec["params"]["mpicart"] == "12 12 12" and "core" not in rec["params"]
    assert rec["params"]["halo"] == 1 and rec["params"]["nfields"] == 1
    assert rec["parsed"][0]["time_10000_calls_s"] == 3.1544


def test_labels_name_dimensions_or_the_import_says_what_it_does_not_know():
    bad = FAMILY.replace("mpicart impi    hwcart ompi", "mpicart impi    hwcart oomp")
    with pytest.raises(ValueError, match="unknown word 'oomp'"):
        parse_betzy(bad, "x.md")


def test_pivot_renders_sweep_records_in_the_betzy_layout():
    """A cartex sweep's records in the "chosen results" layout: every cell the median with its
    95 % interval and count (six repeats: an interval; two: none, and the caption says the
    interval needs six), an oversubscribed run's marker beside its number, one NaN cell."""
    def rec(exe, halo, fields, value, repeat, oversubscribed=False):
        return Record.from_dict({
            "campaign": "c", "machine": "m", "attempt": 1,
            "status": "ok", "benchmark": "cartex", "point_id": f"{exe}{halo}{fields}",
            "repeat": repeat, "stack": "ompi-ucx", "stack_info": {"flavour": "openmpi"},
            "oversubscribed": oversubscribed,
            "params": {"executable": exe, "halo": halo, "nfields": fields, "stack": "ompi-ucx"},
            "parsed": [{"mean_s": value / 1e4, "time_10000_calls_s": value}]})

    six = [2.55, 2.5, 2.53, 2.51, 2.54, 2.52]  # median 2.525; 6 repeats: [x(1), x(6)]
    recs = [rec("benchmark_mpi_comm", 1, 1, v, r) for r, v in enumerate(six, 1)]
    recs += [rec("benchmark_mpi_comm", h, f, v + d, r) for (h, f, v) in
             [(5, 1, 14.75), (1, 8, 23.3), (5, 8, 148.2)] for r, d in ((1, 0), (2, 0.02))]
    recs += [rec("benchmark_ghex_comm_mpi", 1, 1, 2.9035, 1, oversubscribed=True)]
    layout = auto_layout(recs)
    text = render_layout(layout, recs)
    assert code_lines(text) == [
        "                                       h1f1              h5f1         h1f8          h5f8",
        "                               ____________________    _________    _________    __________",
        "    benchmark_ghex_comm_mpi          2.9035 (1) ⚠ov          NaN          NaN           NaN",
        "    benchmark_mpi_comm         2.525 [2.5–2.55] (6)    14.76 (2)    23.31 (2)    148.21 (2)"]
    assert "**XYZ**" in text  # cartex's default order
    markdown = render_layout(layout, recs, markdown=True)
    assert "| benchmark_mpi_comm | 2.525 [2.5–2.55] (6) | 14.76 (2) | 23.31 (2) | 148.21 (2) |" \
        in markdown
    assert "| benchmark_ghex_comm_mpi | 2.9035 (1) ⚠ov | NaN | NaN | NaN |" in markdown
    # The published form (a round trip) has the medians alone; the marker stays.
    assert code_lines(render_layout(layout, recs, intervals=False))[2:] == [
        "    benchmark_ghex_comm_mpi    2.9035 ⚠ov      NaN      NaN       NaN",
        "    benchmark_mpi_comm              2.525    14.76    23.31    148.21"]
    notes = layout_notes(layout, recs)
    assert notes[0].startswith("A cell `median [95 % interval] (n)` is the median over the n "
                               "repeats")
    assert notes[1].startswith("4 of 5 such cells have fewer than 6 repeats and show no "
                               "interval: the interval needs 6 repeats")
    assert notes[2].startswith("`⚠ov` oversubscribed: the job had more processes than cores")


def test_layout_survives_json():
    layout = Layout(parts=[Part("## p", [Section("### s", [Block(
        [Table([Label("benchmark_x", {"executable": "benchmark_x"})],
               [Label("h1f1", {"halo": 1, "nfields": 1})], title="ompi",
               dims={"toolchain": "ompi"})], label="order **XYZ**", dims={"order": "XYZ"})])],
        dims={"nodes": 27})], metric="time_10000_calls_s")
    again = Layout.from_dict(json.loads(json.dumps(layout.to_dict())))
    assert again == layout
    assert [c[3] for c in again.cells()] == [{"nodes": 27, "order": "XYZ", "toolchain": "ompi",
                                              "executable": "benchmark_x", "halo": 1,
                                              "nfields": 1}]


def test_index_lists_campaigns(imported):
    tmp, _ = imported
    run = commstack("report", "--index", str(tmp / "results"))
    assert run.returncode == 0, run.stderr
    index = (tmp / "results" / "README.md").read_text()
    assert "| betzy | reference | cartex | 368 | 368/368 | imported: " in index
    assert "[report](betzy/reference/report/report.md)" in index


def test_no_machine_paths_in_the_committed_campaign():
    files = [*REFERENCE.glob("*.json"), *REFERENCE.glob("*.csv"), *REFERENCE.glob("imports/*"),
             *REFERENCE.glob("report/*"), next(REFERENCE.glob("points/*/rep1.try1/record.json"))]
    for path in files:
        text = path.read_text()
        assert str(Path.home()) not in text and str(REPO) not in text and "/tmp/" not in text
