"""The tuner's decision rule, plan checks, exports and the published reference."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from commstack.benchmarks import registry
from commstack.matrix.model import MatrixError
from commstack.tune import decide as rule
from commstack.tune import export, reference
from commstack.tune.plan import load_plan

REPO = Path(__file__).resolve().parents[1]


def m(**candidates):
    """candidate -> size -> samples."""
    return {name: {size: list(samples) for size, samples in sizes.items()}
            for name, sizes in candidates.items()}


def test_candidate_wins_only_beyond_noise():
    data = m(default={8: [10, 10.5, 11], 64: [20, 21, 22]},
             tight={8: [8, 8.1, 8.2], 64: [15, 15.2, 15.1]},     # clearly faster
             fuzzy={8: [9.8, 10.2, 10.1], 64: [20.5, 21.5, 20.2]})  # within noise
    out = rule.decide(data, "default")
    assert out.winner == "tight" and out.changed
    assert out.scores["fuzzy"] == 0.0
    assert out.scores["tight"] == pytest.approx(
        __import__("math").log(10.5 / 8.1) + __import__("math").log(21 / 15.1))


def test_default_stays_when_differences_are_within_noise():
    data = m(default={1: [5, 6, 7]}, other={1: [4.9, 5.5, 6.5]})
    out = rule.decide(data, "default")
    assert out.winner == "default" and not out.changed


def test_a_loss_beyond_noise_disqualifies_unless_allowed():
    data = m(default={1: [10, 10, 10], 1024: [100, 100, 100]},
             mixed={1: [5, 5, 5], 1024: [130, 130, 130]})
    assert rule.decide(data, "default").winner == "default"
    assert rule.decide(data, "default", allow_losses=True).winner == "mixed"  # log 2 > log 1.3


def test_bands_name_the_best_setting_per_size_range():
    data = m(default={1: [10] * 3, 2: [10] * 3, 4: [10] * 3, 8: [10] * 3},
             small={1: [5] * 3, 2: [5] * 3, 4: [10] * 3, 8: [12] * 3},
             large={1: [12] * 3, 2: [11] * 3, 4: [7] * 3, 8: [6] * 3})
    out = rule.decide(data, "default", allow_losses=True)
    assert [(b.first, b.last, b.best) for b in out.bands] == [(1, 2, "small"), (4, 8, "large")]
    assert out.bands[0].gain == pytest.approx(0.5)


def test_relative_noise_rule():
    data = m(default={1: [100, 100, 100]}, b={1: [96, 96, 96]})
    assert rule.decide(data, "default", rule=0.05).winner == "default"
    assert rule.decide(data, "default", rule=0.03).winner == "b"


def test_per_group_decides_each_component():
    axes = ["component", "mapping"]
    data = {("tuned", "block"): {1: [10] * 3}, ("tuned", "cyclic"): {1: [8] * 3},
            ("basic", "block"): {1: [12] * 3}, ("basic", "cyclic"): {1: [14] * 3}}
    overall, groups = rule.decide_per_group(data, ("tuned", "block"), axes, "component", "range", 0)
    assert groups["tuned"].winner == ("tuned", "cyclic")
    assert groups["basic"].winner == ("basic", "block")
    assert overall.winner == ("tuned", "cyclic")


def _plan(tmp_path, text):
    path = tmp_path / "plan.yaml"
    path.write_text(dedent(text))
    return path


def test_plan_errors_name_the_problem(tmp_path):
    base = """
        base: {benchmark: imb-mpi1, stacks: {a: {flavour: openmpi}}}
        """
    with pytest.raises(MatrixError, match="steps: at least one step"):
        load_plan(_plan(tmp_path, base))
    with pytest.raises(MatrixError, match="UCX_TSL.*|unknown"):
        load_plan(_plan(tmp_path, base + "steps: [{name: a, product: {ucx_tls: [1]}}]\n"))
    with pytest.raises(MatrixError, match="per: 'mapping' is not an axis"):
        load_plan(_plan(tmp_path, base + "steps: [{name: a, per: mapping, product: {UCX_TLS: [a]}}]\n"))
    with pytest.raises(MatrixError, match="unknown key"):
        load_plan(_plan(tmp_path, base + "stepz: []\n"))


def test_exported_files_can_be_sourced_and_read(tmp_path):
    bench = registry.get("imb-mpi1")
    settings = {"UCX_TLS": "self,sm,rc", "UCX_RNDV_THRESH": "intra:16kb,inter:128kb",
                "mca.coll_hcoll_enable": 1, "mapping": "cyclic"}
    env = export.env_file(settings, bench, {"nodes": 2})
    (tmp_path / "ucx.env").write_text(env)
    import subprocess

    out = subprocess.run(["bash", "-c", f". {tmp_path}/ucx.env && echo $UCX_TLS/$UCX_RNDV_THRESH"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "self,sm,rc/intra:16kb,inter:128kb"
    assert "# mapping = cyclic" in env and "hcoll" not in env
    mca = export.mca_file(settings, bench, {"nodes": 2})
    assert "coll_hcoll_enable = 1" in mca.splitlines()


def test_published_reference_imports_and_compares():
    rows = reference.read_reference(REPO / "results" / "bm-optimized3-36" / "reference-tuning"
                                    / "decisions.csv")
    assert len(rows) == 144
    ref = next(r for r in rows if (r["nodes"], r["ranks_per_node"], r["benchmarks"],
                                   r["component"]) == (2, 8, "Alltoall", "hcoll"))
    assert ref["UCX_TLS"] == "self,sm,rc" and ref["UCX_ZCOPY_THRESH"] == "128kb"
    ours = {"nodes": 2, "ranks_per_node": 8, "benchmarks": "Alltoall", "mca.coll_hcoll_enable": 1,
            "mca.coll_ucc_enable": 0, "UCX_TLS": "self,sm,ud", "UCX_ZCOPY_THRESH": "128kb"}
    lines = {r["parameter"]: r["agree"] for r in reference.compare([ours], rows)}
    assert lines == {"UCX_TLS": False, "UCX_ZCOPY_THRESH": True}
    shared = REPO.parent / "shared" / "research" / "oci_tuning_decisions.csv"
    if shared.exists():  # the committed copy is exactly the import of the published CSV
        assert reference.import_reference(shared.read_text())[0]["source"].startswith("1-1-1")
        assert len(reference.import_reference(shared.read_text())) == 144
