"""Must show: `commstack report` tells the truth at a glance for a plain local sweep (the
quickstart's shape: IMB-MPI1 with Intel MPI from PyPI, 2 and 4 ranks per node, block/cyclic,
repeats): every cell shows the median with its distribution-free 95 % interval and the count
of repeats at IMB's printed resolution; oversubscribed jobs and IMB's sub-runs (np=2 inside a
4-rank job) sit in tables of their own with every cell marked, never beside clean runs; a plain
sweep gets no tuning section and names no winner; plots have bands and plain tick labels; a
parent folder is refused with the campaigns it holds."""

from __future__ import annotations

import re
from textwrap import dedent
from typing import Dict, List

import pytest

from commstack import stats
from tests.sweeps import commstack, records

pytestmark = pytest.mark.mpi

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 6
    timeout: 120
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters:
      benchmarks: PingPong Allgather
      msglog: "0:6"
      iter: 50
    product:
      ranks_per_node: [2, 4]
      mapping: [block, cyclic]
    """)
# 4 significant digits, none finer than IMB's 0.01: 0.42, 3.20, 392.2, 1240
CELL = re.compile(r"^(\d+(?:\.\d\d?)?) \[(\d+(?:\.\d\d?)?)–(\d+(?:\.\d\d?)?)\] \((\d+)\)((?: ⚠\w+)*)$")


@pytest.fixture(scope="module")
def campaign(impi_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("truth")
    matrix = tmp / "matrices" / "local" / "quick.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX)
    run = commstack("run", str(matrix), "--out", str(tmp / "results"), "--report")
    assert run.returncode == 0, run.stderr[-3000:]
    root = tmp / "results" / "local" / "quick"
    return root, (root / "report" / "report.md").read_text()


def tables(report: str) -> Dict[str, List[Dict[str, str]]]:
    """Section title -> rows of its table (column label -> cell text)."""
    out: Dict[str, List[Dict[str, str]]] = {}
    title, header = None, None
    for line in report.splitlines():
        if line.startswith("## "):
            title, header = line[3:], None
        elif line.startswith("| ") and title:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            else:
                out.setdefault(title, []).append(dict(zip(header, cells)))
    return out


def samples(root, benchmark: str, np: int, ranks: int, mapping: str, size: int) -> List[float]:
    metric = "t_us" if benchmark == "PingPong" else "t_avg_us"
    return [row[metric] for rec in records(root) if rec["status"] == "ok"
            and rec["ranks"] == ranks and rec["params"]["mapping"] == mapping
            for row in rec["parsed"]
            if row["benchmark"] == benchmark and row["np"] == np and row["bytes"] == size]


def test_every_cell_shows_the_median_and_its_interval_at_the_printed_resolution(campaign):
    root, report = campaign
    found = tables(report)
    clean = found["Allgather np=2"]
    assert list(clean[0]) == ["bytes", "mapping=block", "mapping=cyclic"]
    for row in clean:
        for label in ("mapping=block", "mapping=cyclic"):
            median, low, high, n, markers = CELL.match(row[label]).groups()
            values = samples(root, "Allgather", 2, 2, label.split("=")[1], int(row["bytes"]))
            assert len(values) == 6 == int(n) and markers == ""
            center = stats.describe(values)
            for shown, value in ((median, center.median), (low, center.low),
                                 (high, center.high)):
                assert float(shown) == pytest.approx(value, rel=5e-4, abs=0.006), (shown, value)
    assert ("median [95 % interval] (repeats), at 4 significant digits, none finer than "
            "the printed resolution 0.01") in report
    assert "distribution-free 95 % confidence interval" in report
    assert "The min–max range of the repeats is in `summary.csv`" in report
    # No digits beyond what IMB printed anywhere in a table.
    assert not re.search(r"\| [^|]*\d\.\d{3,}", report)


def test_oversubscribed_and_subruns_are_apart_and_marked(campaign):
    root, report = campaign
    recs = [r for r in records(root) if r["status"] == "ok"]
    over = {r["ranks"] for r in recs if r["oversubscribed"]}
    found = tables(report)
    clean = {t: rows for t, rows in found.items() if "⚠" not in t}
    assert set(clean) == {"Allgather np=2", "PingPong np=2"} | (
        set() if 4 in over else {"Allgather np=4"})
    for rows in clean.values():
        assert all("⚠" not in c for row in rows for c in row.values())
    # IMB's np=2 sub-runs of the 4-rank jobs: apart, every cell marked.
    marks = " ⚠sub" + (" ⚠ov" if 4 in over else "")
    suffix = ", oversubscribed (more processes than cores)" if 4 in over else ""
    for bench in ("Allgather", "PingPong"):
        title = f"{bench} np=2 — ⚠ sub-runs inside 4-rank jobs{suffix}"
        rows = found[title]
        assert rows and all(CELL.match(c).group(5) == marks for row in rows
                            for k, c in row.items() if k != "bytes")
        # The clean np=2 table holds the 2-rank jobs' numbers, not the sub-runs'.
        cell = next(r for r in found[f"{bench} np=2"] if r["bytes"] == "4")["mapping=block"]
        assert float(CELL.match(cell).group(1)) == pytest.approx(
            stats.median(samples(root, bench, 2, 2, 'block', 4)), rel=5e-4, abs=0.006)
    if 4 in over:  # this 2-core machine: 4 ranks are oversubscribed
        rows = found["Allgather np=4 — ⚠ oversubscribed (more processes than cores)"]
        assert all(c.endswith(" ⚠ov") for row in rows for k, c in row.items() if k != "bytes")
        assert "- `⚠ov` oversubscribed:" in report and "- `⚠sub` sub-run:" in report
        assert report.index("## Allgather np=4 — ⚠") > report.index("## PingPong np=2\n")


def test_plain_sweep_names_no_winner(campaign):
    root, report = campaign
    assert "Tuning step" not in report and "Tuned vs default" not in report
    assert "OCI" not in report and "| ? |" not in report
    assert not (root / "report" / "oracle_images.csv").exists()
    assert not list((root / "report").glob("*_step*.png"))


def test_plots_are_written_for_clean_and_unclean_tables(campaign):
    root, report = campaign
    for name in ("allgather_np2.png", "allgather_np2_subrun_oversubscribed.png"
                 if "⚠ov" in report else "allgather_np2_subrun.png"):
        assert f"]({name})" in report
        assert (root / "report" / name).read_bytes()[:4] == b"\x89PNG"


def test_a_parent_folder_is_refused_with_its_campaigns(campaign):
    root, _ = campaign
    run = commstack("report", str(root.parent))
    assert run.returncode == 2
    message = run.stderr.strip()
    assert len(message.splitlines()) == 1
    assert f"{root.parent} is not a campaign but holds 1: quick;" in message
    assert f"commstack report --index {root.parent.parent}" in message
