"""Must show: `commstack rehearse` runs another machine's campaign at small scale on the 3-node
test cluster. Without a cluster: the rehearsal's matrix and plan keep every point shape (each
source point has its rehearsal point; decompositions stay consistent with the cut-down rank
counts; hardware names are replaced by what runs here; builds that cannot exist here are named
in the notes). On the cluster: Betzy's allcores and Perlmutter's IMB matrices run with 0 failed
points and a report under the rehearsal banner."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
import yaml

from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix
from commstack.rehearsal.build import matrix_rehearsal, plan_rehearsal, write
from commstack.rehearsal.counterparts import DROP, Counterparts
from commstack.rehearsal.scale import Budget
from commstack.tune.plan import load_plan
from tests.conftest import REPO
from tests.sweeps import commstack, records

BUDGET = Budget(nodes=3, cores=2)
ALLCORES = REPO / "matrices" / "betzy" / "allcores.yaml"
OCI = REPO / "plans" / "bm-optimized3-36" / "oci-study.yaml"
PERLMUTTER_IMB = sorted(p for p in (REPO / "matrices" / "perlmutter").glob("*.yaml")
                        if "imb" in yaml.safe_load(p.read_text())["benchmark"])


@pytest.fixture(autouse=True)
def local_environments(monkeypatch):
    """Rehearsal files lie outside the checkout here; `commstack rehearse` sets the same."""
    monkeypatch.setenv("COMMSTACK_ENVIRONMENTS", str(REPO / "environments"))


@pytest.mark.parametrize("name, value, expected", [
    ("UCX_TLS", "ud,sm,self", "tcp,self"),
    ("UCX_TLS", "self,sm,rc", "self,tcp"),
    ("UCX_TLS", "all", "self,tcp"),
    ("UCX_RNDV_THRESH", "intra:32kb,inter:8kb", "8kb"),
    ("UCX_RNDV_THRESH", "64kb", "64kb"),
    ("FI_PROVIDER", "cxi", "tcp"),
    ("UCX_NET_DEVICES", "mlx5_0:1", DROP),
    ("I_MPI_FABRICS", "shm:ofi", "shm:ofi"),
])
def test_hardware_names_become_what_runs_here(name, value, expected):
    assert Counterparts.load().value(name, value) == expected


def _rehearsal_points(rehearsal, tmp_path: Path):
    path = write(rehearsal, tmp_path / "r")
    return load_matrix(path), list(expand(load_matrix(path)))


def test_betzy_allcores_keeps_every_point_shape(tmp_path):
    source = list(expand(load_matrix(ALLCORES)))
    rehearsal = matrix_rehearsal(ALLCORES, BUDGET)
    matrix, points = _rehearsal_points(rehearsal, tmp_path)
    # Every source point stands behind exactly one rehearsal point.
    assert sorted(i for ids in rehearsal.points.values() for i in ids) == sorted(p.id for p in source)
    assert {p.id for p in points} == set(rehearsal.points)
    for point in points:
        params = dict(point.params)
        for axis, named in matrix.settings.items():
            params.update(named.get(str(params.get(axis)), {}) or {})
        ranks = params["nodes"] * params["ranks_per_node"]
        assert params["nodes"] <= BUDGET.nodes
        assert params["ranks_per_node"] == BUDGET.ranks_per_node(params["nodes"])
        grid = params.get("node") or params.get("mpicart")
        assert math.prod(int(x) for x in str(grid).split()) == ranks
        assert not {"socket", "numa", "l3", "core"} & set(params)
        assert "xpmem" not in str(params.get("executable", ""))
    stacks = matrix.stacks
    assert all(s.view and "/environments/local/views/" in s.view for s in stacks.values())
    assert stacks["ompi"].env and dict(stacks["ompi"].env)["UCX_TLS"] == "tcp,self"
    assert any("no xpmem here" in n for n in rehearsal.notes)
    assert any("no cartex build against Intel MPI here" in n for n in rehearsal.notes)
    # The campaign's deviations from the published setup stay with it (each record lists them).
    remote = load_matrix(ALLCORES)
    assert matrix.deviations == remote.deviations and remote.deviations
    assert stacks["impi"].deviations == remote.stacks["impi"].deviations
    assert stacks["ompi-ghex-ucx"].deviations == remote.stacks["ompi"].deviations


def test_the_oci_plan_is_cut_down_case_by_case(tmp_path):
    rehearsal = plan_rehearsal(OCI, BUDGET)
    path = write(rehearsal, tmp_path / "r")
    plan = load_plan(path)
    cases = plan.case_list()
    assert {(c["nodes"], c["ranks_per_node"]) for c in cases} == {(1, 2), (2, 1), (3, 1)}
    assert len(cases) == 9
    for case in cases:
        params = {k: plan.fill(v, case) for k, v in plan.base["parameters"].items()}
        assert int(params["npmin"]) <= case["nodes"] * case["ranks_per_node"]
        assert int(str(params["msglog"]).split(":")[1]) <= 10
        assert str(params["mem"]).endswith("G") and float(str(params["mem"])[:-1]) <= 0.5
        for step in plan.steps_for(case):
            for candidate in plan.candidates(step, case):
                assert "intra:" not in str(candidate.get("UCX_RNDV_THRESH", ""))
                assert not re.search(r"\b(rc|ud|dc|sm)\b", str(candidate.get("UCX_TLS", "")))
    review = commstack("plan", str(path), "--machine", "slurm-ci", "--review", "--json")
    assert review.returncode == 0, review.stderr
    objects = [json.loads(line) for line in review.stdout.splitlines()]
    assert objects and all(o["nodes"] <= 3 and o["ranks"] <= max(2, o["nodes"]) for o in objects)


def _rehearse(tmp_path: Path, *sources: Path):
    out = commstack("rehearse", *map(str, sources), "--out", str(tmp_path / "results"),
                    cwd=REPO, timeout=3000)
    return out


@pytest.mark.slurm
@pytest.mark.mpi
def test_perlmutter_imb_matrices_rehearse_with_zero_failures(cluster, tmp_path):
    from tests.spack_support import spack_skip_reason

    if not (REPO / "environments" / "local" / "views" / "mpich" / "bin" / "IMB-RMA").exists():
        pytest.skip(f"skipped: environments/local is not installed here ({spack_skip_reason()})")
    out = _rehearse(tmp_path, *PERLMUTTER_IMB)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"0 failed runs in {len(PERLMUTTER_IMB)} campaign(s)" in out.stdout
    for source in PERLMUTTER_IMB:
        root = tmp_path / "results" / "slurm-ci" / f"rehearse-perlmutter-{source.stem}"
        assert records(root) and all(r["status"] == "ok" for r in records(root))
        report = (root / "report" / "report.md").read_text()
        assert "> **Rehearsal, not a measurement of perlmutter.**" in report


@pytest.mark.slurm
@pytest.mark.mpi
def test_betzy_allcores_rehearses_with_zero_failures(cluster, tmp_path):
    views = REPO / "environments" / "local" / "views"
    if not (views / "ompi-ghex-ucx" / "bin" / "benchmark_ghex_comm_ucx").exists():
        pytest.skip("skipped: environments/local is not installed here (spack -e "
                    "environments/local install)")
    out = _rehearse(tmp_path, ALLCORES)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    root = tmp_path / "results" / "slurm-ci" / "rehearse-betzy-allcores"
    done = records(root)
    assert len({r["point_id"] for r in done}) == len(json.loads(
        (root / "rehearsal.json").read_text())["points"])
    assert all(r["status"] == "ok" for r in done)
    report = (root / "report" / "report.md").read_text()
    assert "> **Rehearsal, not a measurement of betzy.**" in report
    assert "## Halo exchange tables (Betzy layout)" in report


@pytest.mark.slurm
@pytest.mark.mpi
def test_betzy_study_stack_rehearses_with_its_own_mpirun(cluster, tmp_path):
    """allcores-study.yaml: the published runs' own stack (Open MPI's own mpirun inside the
    allocation, allocation_launcher: own), its counterparts launched the same way here."""
    views = REPO / "environments" / "local" / "views"
    if not (views / "ompi-ghex-ucx" / "bin" / "benchmark_ghex_comm_ucx").exists():
        pytest.skip("skipped: environments/local is not installed here (spack -e "
                    "environments/local install)")
    out = _rehearse(tmp_path, ALLCORES.with_name("allcores-study.yaml"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    root = tmp_path / "results" / "slurm-ci" / "rehearse-betzy-allcores-study"
    done = records(root)
    assert done and all(r["status"] == "ok" for r in done), [r["status"] for r in done]
    ompi = [r for r in done if r["stack_info"]["flavour"] == "openmpi"]
    assert ompi and all(os.path.basename(r["argv"][0]).startswith("mpirun") for r in ompi), \
        ompi[0]["argv"][:4]
    assert all(r["placement"]["source"] for r in ompi)  # Open MPI's own binding report
    report = (root / "report" / "report.md").read_text()
    assert "its own mpirun in the allocation, as the study's" in report


def test_shapes_keep_one_point_per_combination_of_non_numeric_parameters(tmp_path):
    halfcores = REPO / "matrices" / "betzy" / "halfcores.yaml"
    source = list(expand(load_matrix(halfcores)))
    rehearsal = matrix_rehearsal(halfcores, BUDGET, shapes=True)
    # The source's shapes, counted independently: stack, executable, named settings (not the
    # numbers halo and nfields, whose values only change numbers on the command line).
    shapes = {(p.get("stack"), p.get("executable"), p.get("decomposition"), p.get("numbering"),
               p.get("algorithm")) for p in source}
    assert len(rehearsal.points) == len(shapes) < len(source)
    assert sorted(i for ids in rehearsal.points.values() for i in ids) == sorted(p.id for p in source)
    assert any("one per point shape" in n for n in rehearsal.notes)
