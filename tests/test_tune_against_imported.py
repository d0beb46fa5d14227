"""`commstack tune --compare-reference CAMPAIGN`: a tuning's tuned setting measured against
outputs made before commstack, imported with `commstack import` (real Intel MPI runs)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from textwrap import dedent

import pytest

from tests.sweeps import commstack

pytestmark = pytest.mark.mpi

OLD_RUNS = dedent("""
    benchmark: imb-mpi1
    repeats: 2
    timeout: 60
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters: {stack: impi, benchmarks: Allreduce, msglog: "0:4", iter: 50, npmin: 2,
                 ranks_per_node: 2}
    """)

PLAN = dedent("""
    campaign: mini
    base:
      benchmark: imb-mpi1
      repeats: 2
      timeout: 60
      stacks:
        impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
      parameters: {stack: impi, msglog: "0:4", iter: 50, npmin: 2, nodes: 1, ranks_per_node: 2}
    cases:
      benchmarks: [Allreduce]
    defaults:
      I_MPI_ADJUST_ALLREDUCE: 0
    steps:
      - name: algorithms
        product: {I_MPI_ADJUST_ALLREDUCE: [0, 1]}
    decision: {threshold: 0.05}
    """)


def _old_logs(tmp: Path) -> Path:
    """Raw IMB outputs as a user keeps them: plain files, no commstack records."""
    matrix = tmp / "matrices" / "local" / "old.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(OLD_RUNS)
    run = commstack("run", str(matrix), "--out", str(tmp / "made"))
    assert run.returncode == 0, run.stderr
    logs = tmp / "logs"
    logs.mkdir()
    for n, out in enumerate(sorted((tmp / "made").rglob("stdout.txt"))):
        shutil.copy(out, logs / f"allreduce-{n}.out")
    assert len(list(logs.iterdir())) == 2
    return logs


def test_tuned_setting_against_an_imported_campaign(impi_root, tmp_path: Path):
    imported = tmp_path / "results" / "elsewhere" / "last-year"
    done = commstack("import", str(_old_logs(tmp_path)), "--benchmark", "imb", "--out", str(imported))
    assert done.returncode == 0, done.stderr
    plan = tmp_path / "plans" / "local" / "mini.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(PLAN)
    tune = commstack("tune", str(plan), "--out", str(tmp_path / "results"),
                     "--compare-reference", str(imported))
    assert tune.returncode in (0, 3), tune.stderr
    text = (tmp_path / "results" / "local" / "mini" / "reference-comparison.md").read_text()
    assert "## benchmarks=Allreduce" in text
    # every tuned row (Allreduce of floats: 0, 4, 8, 16 bytes) matched one imported row
    matched = re.search(r"matched figures: (\d+); only in A: 0; only in B: 0; ambiguous[^:]*: 0", text)
    assert matched and int(matched[1]) == 4
    # two imported outputs, two verify repeats of the tuned setting, in each of the 4 rows
    rows = [line for line in text.splitlines() if line.startswith("| bytes=")]
    assert len(rows) == 4 and all(line.count("(n=2)") == 2 for line in rows), rows


def test_a_reference_that_is_neither_csv_nor_campaign_is_refused_before_running(tmp_path: Path):
    plan = tmp_path / "plans" / "local" / "mini.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(PLAN)
    (tmp_path / "not-a-campaign").mkdir()
    for ref in ("not-a-campaign", "missing.csv"):
        tune = commstack("tune", str(plan), "--out", str(tmp_path / "results"),
                         "--compare-reference", str(tmp_path / ref))
        assert tune.returncode == 2 and ref in tune.stderr
        assert not (tmp_path / "results").exists()
