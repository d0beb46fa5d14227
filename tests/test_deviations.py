"""A campaign that reproduces a published study lists its deviations from the published setup:
the matrix's `deviations` and a stack's own go into every record's notes, and the study's report
section prints them under its table (real Intel MPI runs from PyPI, IMB Uniband)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from commstack.matrix.load import MatrixError, load_matrix
from commstack.matrix.model import DEVIATION, deviation_notes
from commstack.report.studies.deviations import deviation_lines
from tests.sweeps import commstack, typed_records

REPO = Path(__file__).resolve().parents[1]

MATRIX = dedent("""
    benchmark: imb-mpi1
    repeats: 1
    timeout: 120
    deviations: ["IMB 2021.x of the wheel; published: IMB 2021.3"]
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
      impi-tcp:
        flavour: intelmpi
        prefix: "${I_MPI_ROOT}"
        env: {FI_PROVIDER: tcp}
        deviations: ["libfabric tcp provider; published: cxi"]
    parameters: {benchmarks: Uniband, msglog: "0:4", iter: 20, ranks_per_node: 2}
    product: {stack: [impi, impi-tcp]}
    """)


@pytest.mark.mpi
def test_every_record_lists_its_deviations_and_the_report_prints_them(impi_root, tmp_path):
    matrix = tmp_path / "matrices" / "local" / "dev.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX)
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"), "--report")
    assert run.returncode == 0, run.stderr[-3000:]
    root = tmp_path / "results" / "local" / "dev"
    records = {r.stack: r for r in typed_records(root)}
    assert set(records) == {"impi", "impi-tcp"} and all(r.status == "ok" for r in records.values())
    devs = {s: [n[len(DEVIATION):] for n in r.notes if n.startswith(DEVIATION)]
            for s, r in records.items()}
    assert devs == {"impi": ["IMB 2021.x of the wheel; published: IMB 2021.3"],
                    "impi-tcp": ["IMB 2021.x of the wheel; published: IMB 2021.3",
                                 "libfabric tcp provider; published: cxi"]}
    lines = deviation_lines(list(records.values()))
    assert lines[1] == "### Deviations from the published setup"
    assert lines[-2:] == ["- IMB 2021.x of the wheel; published: IMB 2021.3",
                          "- libfabric tcp provider; published: cxi (1 of 2 records)"]
    report = (root / "report" / "report.md").read_text()
    tables, deviations = report.split("### Deviations from the published setup")
    assert "Uniband" in tables  # the deviations come under the tables
    assert "- libfabric tcp provider; published: cxi (1 of 2 records)" in report
    # compare names them too, under its verdicts (here the campaign against itself: PASS)
    compared = commstack("compare", str(root), str(root))
    assert compared.returncode == 0, compared.stderr
    head, tail = compared.stdout.split(f"### Deviations from the published setup: {root}")
    assert "PASS" in head and tail.count("### Deviations") == 0
    assert "- libfabric tcp provider; published: cxi (1 of 2 records)" in tail


def test_a_deviation_must_be_text(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX.replace('deviations: ["IMB 2021.x of the wheel; published: IMB 2021.3"]',
                                   "deviations: [\"\"]"))
    with pytest.raises(MatrixError, match="deviations"):
        load_matrix(path)


def test_the_study_matrices_list_their_deviations():
    half = load_matrix(REPO / "matrices" / "betzy" / "halfcores.yaml")
    notes = deviation_notes(half, "ompi-ghex-ucx")
    assert any("OpenMPI/4.0.5-GCC-10.2.0" in n and "HPC-X 2.7.0" in n for n in notes)
    assert any("ppr:32:socket:pe=2" in n for n in notes)
    every = load_matrix(REPO / "matrices" / "betzy" / "allcores.yaml")
    impi = deviation_notes(every, "impi")
    assert any("intel/2020b" in n for n in impi) and not any("OpenMPI/4.0.5" in n for n in impi)
    assert any("ppr:64:socket:pe=1" in n for n in deviation_notes(every, "ompi"))
    for name in ("gasnet-bandwidth-testlarge", "gasnet-latency-rma"):
        perl = load_matrix(REPO / "matrices" / "perlmutter" / f"{name}.yaml")
        assert any("libfabric 1.15.0.0" in n for n in deviation_notes(perl, next(iter(perl.stacks))))
