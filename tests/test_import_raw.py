"""Must show: raw benchmark outputs made elsewhere (the real external IMB and OSU outputs under
tests/fixtures/*/external, the cartex and GASNet-EX outputs of tests/fixtures) imported with
`commstack import DIR --benchmark FAMILY`: one record per output, marked imported with its path
and sha256, parameters read from the output, failed and cut-off outputs recorded as failed, files
that are not outputs skipped and named; importing again adds nothing; a campaign of another kind
is refused; `report` and `compare` read the imported campaign, against a real local IMB sweep."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import statistics
from pathlib import Path
from textwrap import dedent
from typing import Dict, List

import pytest

from commstack.store.record import RAW_OUTPUT
from tests.conftest import REPO
from tests.sweeps import commstack, records

FIXTURES = REPO / "tests" / "fixtures"
IMB_EXTERNAL = FIXTURES / "imb" / "external"
OSU_EXTERNAL = FIXTURES / "osu" / "external"
HPCX = "imb2018-hpcx-mofed-pingpong-np2.txt"
BARE_TABLES = "imb4.1-mpi1-juno-allreduce-reduce-tables-only-excerpt.txt"


def manifest(directory: Path) -> Dict[str, str]:
    """file -> what the parser tests expect of it (parse, warn, refused)."""
    with open(directory / "MANIFEST.tsv", newline="") as fh:
        return {row["file"]: row["expect"] for row in csv.DictReader(fh, delimiter="\t")}


def by_file(root: Path) -> Dict[str, List[dict]]:
    found: Dict[str, List[dict]] = {}
    for rec in records(root):  # checked against the record's JSON Schema
        found.setdefault(Path(rec["source"]["file"]).name, []).append(rec)
    return found


def attempt_dir(root: Path, rec: dict) -> Path:
    return root / "points" / rec["point_id"] / f"rep{rec['repeat']}.try{rec['attempt']}"


def tree(root: Path) -> Dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".import.lock"}


@pytest.fixture(scope="module")
def imb_import(tmp_path_factory):
    root = tmp_path_factory.mktemp("raw") / "results" / "elsewhere" / "imb-external"
    run = commstack("import", str(IMB_EXTERNAL), "--benchmark", "imb", "--out", str(root))
    assert run.returncode == 0, run.stderr
    return root, run.stdout


def test_every_imb_output_becomes_one_record_marked_imported(imb_import):
    root, out = imb_import
    found = by_file(root)
    expected = manifest(IMB_EXTERNAL)
    assert set(expected) <= set(found)
    for name, recs in found.items():
        assert len(recs) == 1, name
        rec = recs[0]
        path = IMB_EXTERNAL / name
        assert rec["imported"] is True and rec["source"]["kind"] == RAW_OUTPUT
        assert rec["source"]["file"] == str(path)  # as given on the command line
        assert rec["source"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert (attempt_dir(root, rec) / "stdout.txt").read_bytes() == path.read_bytes()
        assert rec["stdout"] == "stdout.txt" and not rec["argv"] and rec["command"] is None
    # Every file is accounted for: imported, or skipped with the reason printed.
    assert re.search(r"skipped: \S*MANIFEST\.tsv: nothing in it that imb prints", out)
    files = {p.name for p in IMB_EXTERNAL.iterdir()} - {"MANIFEST.tsv"}
    assert files == set(found) | {n for n in files if f"skipped: {IMB_EXTERNAL / n}:" in out}


def test_failed_and_cut_off_outputs_are_failed_records_with_the_reason(imb_import):
    root, _ = imb_import
    found = by_file(root)
    for name, expect in manifest(IMB_EXTERNAL).items():
        rec = found[name][0]
        if name == BARE_TABLES:
            # Two pasted tables without their headers: rows of Bcast and Reduce cannot be told
            # apart, so their numbers are not offered as results (they would read as repeats).
            assert rec["status"] == "parse-error"
            assert "cannot be told apart" in rec["parse_error"]
        elif expect == "refused":
            assert rec["status"] == "parse-error" and rec["parsed"] == []
            assert "Finalize" in rec["parse_error"]
        else:
            assert rec["status"] == "ok" and rec["parsed"], name


def test_parameters_come_from_the_output_only(imb_import):
    root, _ = imb_import
    found = by_file(root)
    hpcx = found[HPCX][0]
    assert hpcx["benchmark"] == "imb-mpi1"
    assert hpcx["params"] == {"executable": "/usr/mpi/gcc/openmpi-4.1.2a1/tests/imb/IMB-MPI1",
                              "msglog": "3:28", "benchmarks": "PingPong",
                              "imb_version": "2018", "ranks": 2}
    assert hpcx["ranks"] == 2 and hpcx["oversubscribed"] is None and hpcx["nodes"] is None
    # "./IMB-MPI1 pingpong": IMB's own list spells the name; no -msglog given, none recorded.
    azure = found["imb4.0u1-intelmpi-azure-pingpong-np2.txt"][0]
    assert azure["params"]["benchmarks"] == "PingPong" and "msglog" not in azure["params"]
    assert azure["params"]["imb_version"] == "4.0 Update 1"
    # No banner, no calling sequence: nothing is guessed; the file is a point of its own.
    bare = found[BARE_TABLES][0]
    assert bare["params"] == {"output": BARE_TABLES, "executable": None, "benchmarks": None,
                              "imb_version": None, "ranks": None}
    assert bare["benchmark"] == "imb"
    assert any("version not printed" in n or "no IMB banner" in n for n in bare["notes"])
    # A banner broken over two lines ("..., MPI-IO" / "part") is read as the parser reads it.
    split = found["imb2021.8-io-ompi506-siwriteindv-excerpt.txt"][0]
    assert split["params"]["imb_version"] == "2021.8"


def test_processes_waiting_in_mpi_barrier_count_as_the_jobs_ranks(tmp_path: Path):
    # Intel MPI, 3 ranks: IMB's PingPong tables run on 2, "( 1 additional process waiting in
    # MPI_Barrier)": the job had 3 processes and its tables are sub-runs of it.
    out = FIXTURES / "imb" / "intelmpi-2021.18" / "prebuilt-mpi1-pingpong-uniband-np3.out"
    root = tmp_path / "results" / "elsewhere" / "np3"
    run = commstack("import", str(out), "--benchmark", "imb", "--out", str(root))
    assert run.returncode == 0, run.stderr
    (rec,) = records(root)
    assert rec["ranks"] == 3 and rec["params"]["ranks"] == 3 and "npmin" not in rec["params"]
    assert {row["np"] for row in rec["parsed"]} == {2}


def test_importing_again_adds_nothing(imb_import):
    root, _ = imb_import
    before = tree(root)
    again = commstack("import", str(IMB_EXTERNAL), "--benchmark", "imb", "--out", str(root))
    assert again.returncode == 0, again.stderr
    assert re.search(r": 0 imb output\(s\) imported \(0 failed\), (\d+) already imported",
                     again.stdout)
    assert "nothing new" in again.stdout
    assert tree(root) == before


def test_a_campaign_of_another_kind_is_refused(imb_import, tmp_path):
    root, _ = imb_import
    other = commstack("import", str(OSU_EXTERNAL), "--benchmark", "osu", "--out", str(root))
    assert other.returncode == 2
    assert "is a campaign of imb raw outputs, not of imported osu outputs" in other.stderr
    not_campaign = tmp_path / "results" / "m" / "c"
    not_campaign.mkdir(parents=True)
    (not_campaign / "notes.txt").write_text("mine\n")
    refused = commstack("import", str(IMB_EXTERNAL), "--benchmark", "imb", "--out",
                        str(not_campaign))
    assert refused.returncode == 2 and "is not a campaign" in refused.stderr
    assert [p.name for p in not_campaign.iterdir()] == ["notes.txt"]
    # Published tables never go into a campaign of raw outputs.
    seed = REPO / "results" / "betzy" / "reference" / "imports" / "betzy_allcores_27nodes.json"
    published = tmp_path / "betzy_allcores_27nodes.md"
    published.write_text(json.loads(seed.read_text())["text"])
    before = tree(root)
    betzy = commstack("import", str(published), "--out", str(root))
    assert betzy.returncode == 2 and "not of published tables" in betzy.stderr
    assert tree(root) == before


def test_osu_outputs(tmp_path):
    root = tmp_path / "results" / "elsewhere" / "osu-external"
    run = commstack("import", str(OSU_EXTERNAL), "--benchmark", "osu", "--out", str(root))
    assert run.returncode == 0, run.stderr
    found = by_file(root)
    for name, expect in manifest(OSU_EXTERNAL).items():
        rec = found[name][0]
        assert rec["status"] == ("parse-error" if expect == "refused" else "ok"), name
        assert rec["benchmark"] == "osu" and rec["params"]["output"] == name
        if rec["parsed"]:  # the test's name as the title prints it, also the rows' benchmark
            assert rec["params"]["osu_test"] == rec["parsed"][0]["benchmark"]
        # Refused outputs too name their test when they print a title (one-sided ones included).
        titled = re.search(r"# OSU MPI", (OSU_EXTERNAL / name).read_text(errors="replace"))
        assert (rec["params"]["osu_test"] is not None) == bool(titled), name
    hang = found["osu5.6.2-get_acc_latency-tag-output-hang.txt"][0]
    assert hang["status"] == "parse-error"
    assert hang["params"]["osu_test"] == "MPI_Get_accumulate latency"
    assert hang["params"]["osu_version"] == "5.6.2"


def test_cartex_outputs_keep_their_stderr(tmp_path):
    source = FIXTURES / "cartex"
    root = tmp_path / "results" / "elsewhere" / "cartex"
    run = commstack("import", str(source), "--benchmark", "cartex", "--out", str(root))
    assert run.returncode == 0, run.stderr
    found = by_file(root)
    assert not any(name.endswith(".err") for name in found)  # each is its .out's stderr
    for name, (rec,) in found.items():
        err = (source / name).with_suffix(".err")
        assert (attempt_dir(root, rec) / "stderr.txt").read_bytes() == err.read_bytes()
        assert rec["source"]["stderr_sha256"] == hashlib.sha256(err.read_bytes()).hexdigest()
        assert rec["status"] == ("parse-error" if name.startswith("fail-") else "ok"), name
    unknown = found["fail-unknown-option-np2.out"][0]
    assert "empty output" in unknown["parse_error"]
    # A segfault trace names no cartex at all: skipped, and said so.
    assert re.search(r"skipped: \S*fail-no-decomposition-np2\.out: nothing in it that cartex",
                     run.stdout)
    ok = found["mpi_comm-mpicart221-np4.out"][0]
    assert ok["ranks"] == 4 and ok["params"]["runtime"] == "mpi_comm"


def test_gasnet_outputs(tmp_path):
    root = tmp_path / "results" / "elsewhere" / "gasnet"
    run = commstack("import", str(FIXTURES / "gasnet"), "--benchmark", "gasnet", "--out",
                    str(root))
    assert run.returncode == 0, run.stderr
    found = by_file(root)
    odd = found["fail-smp-testlarge-odd-np3.out"][0]
    assert odd["status"] == "parse-error" and "Test skipped" in odd["parse_error"]
    large = found["smp-testlarge-np4.out"][0]
    assert large["status"] == "ok" and large["benchmark"] == "gasnet-testlarge"
    assert large["ranks"] == 4 and large["params"]["conduit"] == "smp"
    assert large["build_config"].startswith("RELEASE=")


LOCAL = dedent("""
    benchmark: imb-mpi1
    repeats: 2
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      benchmarks: PingPong
      msglog: "0:12"
      ranks_per_node: 2
    """)


@pytest.mark.mpi
def test_report_and_compare_read_the_imported_campaign(imb_import, impi_root, tmp_path):
    imported, _ = imb_import
    matrix = tmp_path / "matrices" / "local" / "impi-pingpong.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(LOCAL)
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    assert run.returncode == 0, run.stderr[-3000:]
    local = tmp_path / "results" / "local" / "impi-pingpong"

    report = commstack("report", str(imported))
    assert report.returncode == 0, report.stderr
    text = (imported / "report" / "report.md").read_text()
    assert "## PingPong np=2" in text and "imported outputs" in text
    assert "## Runs that did not succeed" in text and "cannot be told apart" in text

    where = "executable=/usr/mpi/gcc/openmpi-4.1.2a1/tests/imb/IMB-MPI1"
    cmp = commstack("compare", str(imported), str(local), "--ignore", "msglog", "--where", where)
    assert cmp.returncode in (0, 1), cmp.stderr
    assert "- matched on: benchmarks" in cmp.stdout
    hpcx = by_file(imported)[HPCX][0]
    both = {r["bytes"] for r in hpcx["parsed"]} & {
        r["bytes"] for rec in records(local) for r in rec["parsed"]}
    assert int(re.search(r"matched figures: (\d+)", cmp.stdout).group(1)) == len(both)
    # The row for 4096 bytes: A is the HPC-X output's number, B the local sweep's median.
    a = next(r["t_us"] for r in hpcx["parsed"] if r["bytes"] == 4096)
    b = [r["t_us"] for rec in records(local) for r in rec["parsed"] if r["bytes"] == 4096]
    row = next(line for line in cmp.stdout.splitlines() if line.startswith("| bytes=4096 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == f"{a:.5g} (n=1)"
    assert float(cells[3].split()[0]) == pytest.approx(statistics.median(b), rel=1e-3)
    # One value on a side: beyond the threshold it is "untested", never a regression.
    assert cells[-1] in ("untested", "same") and cmp.returncode == 0


def test_outputs_printing_the_same_parameters_are_repeats_of_one_point(tmp_path):
    logs = tmp_path / "last-year"
    logs.mkdir()
    text = (IMB_EXTERNAL / HPCX).read_bytes()
    (logs / "run1.log").write_bytes(text)
    (logs / "run2.log").write_bytes(text + b"\n")  # the same run's log with a blank line more
    (logs / "copy-of-run1.log").write_bytes(text)  # the same bytes: the same import
    root = tmp_path / "results" / "elsewhere" / "hpcx"
    run = commstack("import", str(logs), "--benchmark", "imb", "--out", str(root))
    assert run.returncode == 0, run.stderr
    assert "2 imb output(s) imported (0 failed), 1 already imported" in run.stdout
    found = records(root)
    assert len({r["point_id"] for r in found}) == 1
    assert sorted(r["repeat"] for r in found) == [1, 2]


def test_status_of_an_imported_campaign_counts_what_it_holds(imb_import):
    root, _ = imb_import
    recs = records(root)
    ok = sum(r["status"] == "ok" for r in recs)
    done = commstack("status", str(root))
    assert done.returncode == (3 if ok < len(recs) else 0), done.stderr
    assert f"{ok} done, {len(recs) - ok} failed (of {len(recs)} runs recorded; no matrix" \
        in done.stdout


def test_an_import_leaves_the_campaigns_index_behind(tmp_path):
    """`import` builds the index of what it wrote, so the first reader does not (issue 37)."""
    pytest.importorskip("pyarrow", reason="skipped: pyarrow not installed (pip install 'commstack[index]')")
    from commstack.store import tidy_index

    root = tmp_path / "results" / "elsewhere" / "imb-external"
    run = commstack("import", str(IMB_EXTERNAL), "--benchmark", "imb", "--out", str(root))
    assert run.returncode == 0, run.stderr
    parts = sorted((root / "index").glob("*.parquet"))
    assert parts, "no index part after the import"
    indexed = tidy_index._indexed(parts)
    assert indexed == {(r["point_id"], r["repeat"], r["attempt"]) for r in records(root)}
