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


def jitter(center: float, n: int = 7, spread: float = 0.01) -> list:
    """n distinct samples evenly spread +-spread around center (a quiet machine)."""
    return [center * (1 + spread * (2 * i / (n - 1) - 1)) for i in range(n)]


def test_candidate_wins_only_where_the_corrected_test_and_threshold_say_so():
    data = m(default={8: jitter(10), 64: jitter(20)},
             tight={8: jitter(8), 64: jitter(15)},        # clearly faster at both sizes
             fuzzy={8: jitter(9.9), 64: jitter(20.3)})    # within 5 %: never a win
    out = rule.decide(data, "default")
    assert out.winner == "tight" and out.changed
    assert out.scores["tight"].wins == 2 and out.scores["fuzzy"].wins == 0
    assert out.calls["fuzzy"][8].call == rule.SAME


def test_default_stays_when_the_samples_cannot_tell_them_apart():
    data = m(default={1: [5, 6, 7, 5.5, 6.5]}, other={1: [4.9, 5.5, 6.5, 5.2, 6.1]})
    out = rule.decide(data, "default")
    assert out.winner == "default" and not out.changed


def test_one_lucky_size_among_many_is_not_a_win():
    """A candidate faster at one of 15 sizes by a margin that five samples a side allow (every
    candidate sample below every default sample: p = 0.008 before correction) is not a win once
    the 15 x 3 comparisons are corrected together."""
    sizes = {2 ** k: [10.0, 10.2, 10.4, 10.6, 10.8] for k in range(15)}
    data = {"default": sizes}
    for name in ("b", "c", "d"):
        data[name] = {s: [10.1, 10.3, 10.5, 10.7, 10.9] for s in sizes}
    data["c"][1024] = [9.0, 9.1, 9.2, 9.3, 9.4]
    out = rule.decide(data, "default")
    assert out.winner == "default"


def test_noise_where_a_candidate_equals_the_incumbent_does_not_void_its_win():
    """Equal at four of five sizes, their medians 2-3 % apart by chance (the rule's "same"),
    twice as fast at the fifth: the win counts. Typically slower by more than the threshold
    (10 % at four sizes, not significant), the same win does not make it the step's winner:
    it is left to the bands."""
    same = {s: jitter(10 * 1.03) for s in (1, 2, 4, 8)}
    data = m(default={**{s: jitter(10) for s in (1, 2, 4, 8)}, 16: jitter(20)},
             equal={**same, 16: jitter(10)})
    out = rule.decide(data, "default")
    assert out.scores["equal"].median_speedup < 1 and out.winner == "equal"
    data["equal"].update({s: [7.0, 8.0, 9.0, 11.0, 13.0, 14.0, 15.0] for s in (1, 2, 4, 8)})
    out = rule.decide(data, "default")
    assert out.scores["equal"].wins == 1 and out.scores["equal"].losses == 0
    assert out.winner == "default"
    assert [b.best for b in out.bands] == ["default", "equal"]


def test_a_loss_disqualifies_unless_allowed():
    data = m(default={1: jitter(10), 1024: jitter(100)},
             mixed={1: jitter(5), 1024: jitter(130)})
    assert rule.decide(data, "default").winner == "default"
    assert rule.decide(data, "default", rule.Rule(allow_losses=True)).winner == "default"  # 1 - 1
    data["mixed"][2] = jitter(5)
    data["default"][2] = jitter(10)
    assert rule.decide(data, "default", rule.Rule(allow_losses=True)).winner == "mixed"  # 2 - 1


def test_bands_name_the_best_setting_per_size_range():
    data = m(default={1: jitter(10), 2: jitter(10), 4: jitter(10), 8: jitter(10)},
             small={1: jitter(5), 2: jitter(5), 4: jitter(10), 8: jitter(12)},
             large={1: jitter(12), 2: jitter(11), 4: jitter(7), 8: jitter(6)})
    out = rule.decide(data, "default", rule.Rule(allow_losses=True))
    assert [(b.first, b.last, b.best) for b in out.bands] == [(1, 2, "small"), (4, 8, "large")]
    assert out.bands[0].gain == pytest.approx(0.5)


def test_the_threshold_is_the_least_gain_that_counts():
    data = m(default={1: jitter(100, spread=0.001)}, b={1: jitter(96, spread=0.001)})
    assert rule.decide(data, "default", rule.Rule(threshold=0.05)).winner == "default"
    assert rule.decide(data, "default", rule.Rule(threshold=0.03)).winner == "b"


def test_per_group_decides_each_component():
    axes = ["component", "mapping"]
    data = {("tuned", "block"): {1: jitter(10)}, ("tuned", "cyclic"): {1: jitter(8)},
            ("basic", "block"): {1: jitter(12)}, ("basic", "cyclic"): {1: jitter(14)}}
    overall, groups = rule.decide_per_group(data, ("tuned", "block"), axes, "component")
    assert groups["tuned"].winner == ("tuned", "cyclic")
    assert groups["basic"].winner == ("basic", "block")
    assert overall.winner == ("tuned", "cyclic")


def test_plans_with_the_old_noise_rule_are_refused_with_the_replacement(tmp_path):
    base = """
        base: {benchmark: imb-mpi1, stacks: {a: {flavour: openmpi}}}
        steps: [{name: a, product: {UCX_TLS: [all, "self,sm"]}}]
        """
    with pytest.raises(MatrixError, match="`noise` and `min_gain` are gone.*threshold"):
        load_plan(_plan(tmp_path, base + "decision: {noise: range}\n"))
    with pytest.raises(MatrixError, match="unknown key.*alpah"):
        load_plan(_plan(tmp_path, base + "decision: {alpah: 0.1}\n"))
    with pytest.raises(MatrixError, match="correction bh or holm"):
        load_plan(_plan(tmp_path, base + "decision: {correction: bonferroni}\n"))
    plan = load_plan(_plan(tmp_path, base + "decision: {threshold: 0.1, correction: holm}\n"))
    assert plan.decision == rule.Rule(threshold=0.1, correction="holm")


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


def test_bands_of_an_intel_algorithm_step_become_one_per_size_value():
    from commstack.tune.per_size import intel_ranges, per_size_settings

    data = m(**{"0": {1: jitter(10), 1024: jitter(10), 4096: jitter(10)},
                "7": {1: jitter(5), 1024: jitter(10), 4096: jitter(12)},
                "2": {1: jitter(12), 1024: jitter(7), 4096: jitter(6)}})
    out = rule.decide(data, "0", rule.Rule(allow_losses=True))
    bands = [{"from_bytes": b.first, "to_bytes": b.last, "best": {"I_MPI_ADJUST_ALLREDUCE": b.best}}
             for b in out.bands]
    value = intel_ranges(bands, "I_MPI_ADJUST_ALLREDUCE", "0")
    assert value == "7:0-1023;2:1024-2147483647"
    step = {"axes": ["I_MPI_ADJUST_ALLREDUCE"], "bands": bands,
            "incumbent": {"I_MPI_ADJUST_ALLREDUCE": ""}}
    tuned = per_size_settings([step], {"I_MPI_ADJUST_ALLREDUCE": "7", "mapping": "block"})
    assert tuned == {"I_MPI_ADJUST_ALLREDUCE": value, "mapping": "block"}
    # One band, or a variable without a per-size form: the value stays as chosen.
    assert intel_ranges(bands[:1], "I_MPI_ADJUST_ALLREDUCE", "0") is None
    assert intel_ranges(bands, "UCX_TLS", "all") is None


def test_bands_of_an_open_mpi_coll_tuned_step_become_one_per_size_value():
    from commstack.tune.per_size import ompi_ranges, per_size_settings

    axis = "mca.coll_tuned_allreduce_algorithm"
    data = m(**{"0": {1: jitter(10), 1024: jitter(10), 4096: jitter(10)},
                "3": {1: jitter(5), 1024: jitter(10), 4096: jitter(12)},
                "4": {1: jitter(12), 1024: jitter(7), 4096: jitter(6)}})
    out = rule.decide(data, "0", rule.Rule(allow_losses=True))
    bands = [{"from_bytes": b.first, "to_bytes": b.last, "best": {axis: b.best}} for b in out.bands]
    assert ompi_ranges(bands, axis, 0) == "3:0-1023;4:1024-"  # the last range open
    step = {"axes": [axis], "bands": bands, "incumbent": {axis: 0}}
    tuned = per_size_settings([step], {axis: "3", "mca.coll_tuned_use_dynamic_rules": 1})
    assert tuned == {axis: "3:0-1023;4:1024-", "mca.coll_tuned_use_dynamic_rules": 1}
    # An unset incumbent's band is algorithm 0 (coll/tuned's own decision).
    unset = [bands[0], dict(bands[1], best={axis: None})]
    assert ompi_ranges(unset, axis, None) == "3:0-1023;0:1024-"
    # Algorithms by name, a collective without a rules-file size, one band: no per-size value.
    named = [dict(b, best={axis: {"3": "recursive_doubling", "4": "ring"}[b["best"][axis]]})
             for b in bands]
    assert ompi_ranges(named, axis, "ignore") is None
    scan = [dict(b, best={"mca.coll_tuned_scan_algorithm": b["best"][axis]}) for b in bands]
    assert ompi_ranges(scan, "mca.coll_tuned_scan_algorithm", 0) is None
    assert ompi_ranges(bands[:1], axis, 0) is None


@pytest.mark.mpi
def test_intel_mpi_takes_the_per_size_value_and_refuses_a_broken_one(impi_root, write_matrix):
    """Swept as a tuner's verify sweeps it; Intel MPI's own startup lines (I_MPI_DEBUG=6) say
    whether it took the value."""
    import json

    from tests.sweeps import commstack

    matrix = write_matrix("""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 120
        stacks:
          impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
        parameters: {benchmarks: Allreduce, msglog: "0:2", iter: 10, ranks_per_node: 2,
                     I_MPI_DEBUG: 6}
        product:
          I_MPI_ADJUST_ALLREDUCE: ["7:0-1023;2:1024-2147483647", "7:0-1023;junk"]
        """)
    run = commstack("run", str(matrix), "--out", str(matrix.parents[2] / "results"))
    assert run.returncode in (0, 3), run.stderr[-3000:]  # 3: the broken value's run may crash
    seen = {}
    for path in (matrix.parents[2] / "results" / "local" / "m" / "points").glob("*/rep1.try1"):
        value = json.loads((path / "record.json").read_text())["params"]["I_MPI_ADJUST_ALLREDUCE"]
        text = (path / "stdout.txt").read_text() + (path / "stderr.txt").read_text()
        seen[value] = "Incorrect adjust value" in text
    assert seen == {"7:0-1023;2:1024-2147483647": False, "7:0-1023;junk": True}
