"""Must show: plans/bm-optimized3-36/oci-study.yaml is Oracle's BM.Optimized3.36 collective-tuning
study as one tuning plan. Its 48 cases, each case's steps, axes and value sets, and its IMB command
line are checked against the study as the shared research reads it (oci_tuning.md, sections 3-9)
and against the study's 144 published decisions (each has its case and its NPS run); and
`commstack tune --compare-reference` compares a real tuning of the plan's 1-node step with them.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from commstack.machine import find_machine
from commstack.tune import reference
from commstack.tune.plan import load_plan
from tests import spack_support
from tests.sweeps import commstack

REPO = Path(__file__).resolve().parent.parent
PLAN = REPO / "plans" / "bm-optimized3-36" / "oci-study.yaml"
PUBLISHED = REPO / "results" / "bm-optimized3-36" / "reference-tuning" / "decisions.csv"
RESEARCH = REPO.parent / "shared" / "research"
CSV_COLLECTIVE = {"alltoall": "Alltoall", "allgather": "Allgather", "allreduce": "Allreduce"}


def _study_text() -> str:
    path = RESEARCH / "oci_tuning.md"
    if not path.exists():
        pytest.skip(f"skipped: the study's summary is not here ({path})")
    return path.read_text()


def _published_csv() -> list:
    path = RESEARCH / "oci_tuning_decisions.csv"
    if not path.exists():
        pytest.skip(f"skipped: the study's decisions are not here ({path})")
    return list(csv.DictReader(path.open()))


def _ticked(cell: str) -> list:
    return re.findall(r"`([^`]+)`", cell)


def _table_row(text: str, first: str) -> list:
    """The cells of the markdown table row whose first cell is ``first``."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no table row {first!r} in oci_tuning.md")


class Study:
    """The study's value sets, as oci_tuning.md states them."""

    def __init__(self, text: str):
        self.tls = _ticked(_table_row(text, "`UCX_TLS`")[2])
        self.rndv = _ticked(_table_row(text, "`UCX_RNDV_THRESH`")[2])
        self.zcopy = _ticked(_table_row(text, "`UCX_ZCOPY_THRESH`")[2])
        single = re.search(r"`UCX_RNDV_THRESH` ∈ \{([^}]*)\}", text)
        self.rndv_single = [v.strip() for v in single.group(1).split(",")]
        self.pairs = re.findall(r"^\d\. `(intra:[^`]+)`$", text, re.M)
        self.msglog = {}
        for name in CSV_COLLECTIVE.values():
            cells = _table_row(text, name)
            self.msglog[name] = {n: int(c.split()[0]) for n, c in zip((1, 2, 4, 8), cells[1:5])}
        line = re.search(r"^numactl -l IMB-MPI1 .*$", text, re.M).group(0)
        self.command = line.split()


@pytest.fixture(scope="module")
def study() -> Study:
    found = Study(_study_text())
    assert len(found.tls) == 4 and len(found.rndv) == 7 and len(found.zcopy) == 7
    assert len(found.rndv_single) == 5 and len(found.pairs) == 8
    return found


@pytest.fixture(scope="module")
def plan():
    return load_plan(PLAN)


def _cases_of(rows) -> set:
    return {(int(r["nodes"]), int(r["ppn"]), CSV_COLLECTIVE[r["collective"]]) for r in rows}


def _key(case) -> tuple:
    return (case["nodes"], case["ranks_per_node"], case["benchmarks"])


def test_the_plan_has_the_studys_48_cases(plan):
    rows = _published_csv()
    cases = [_key(c) for c in plan.case_list()]
    assert len(cases) == 48 == len(set(cases))
    assert set(cases) == _cases_of(rows)


def test_each_cases_steps_axes_and_values_are_the_studys(plan, study):
    rows = _published_csv()
    components = sorted({r["component"] for r in rows})
    mappings = sorted({r["mapping"] for r in rows})
    intra = {}  # the published multi-node intra value per case (one for its three components)
    hcoll_single = {}
    for r in rows:
        case = (int(r["nodes"]), int(r["ppn"]), CSV_COLLECTIVE[r["collective"]])
        if case[0] > 1:
            intra.setdefault(case, set()).add(r["rndv_thresh_intra"])
        elif r["component"] == "hcoll":
            hcoll_single[case[1:]] = r["rndv_thresh_intra"]
    for case in plan.case_list():
        key = _key(case)
        steps = {s.name: s for s in plan.steps_for(case)}
        got = {name: {tuple(sorted(c.items())) for c in plan.candidates(s, case)}
               for name, s in steps.items()}
        defaults = plan.defaults_for(case)
        assert (defaults["component"], defaults["mapping"]) == ("hcoll", "block")  # section 9
        assert defaults["UCX_ZCOPY_THRESH"] == "auto" and defaults["UCX_TLS"] == "all"
        if key[0] == 1:  # section 7.1: RNDV x component x mapping; TLS and ZCOPY not swept
            assert list(steps) == ["rndv-component-mapping"], key
            assert steps["rndv-component-mapping"].per == "component"
            want = {tuple(sorted({"UCX_RNDV_THRESH": r, "component": c, "mapping": m}.items()))
                    for r, c, m in itertools.product(study.rndv_single, components, mappings)}
            assert got["rndv-component-mapping"] == want, key
            assert defaults["UCX_RNDV_THRESH"] == "auto"
            continue
        # section 7.2: the intra value is the 1-node HCOLL optimum of the same ppn and collective
        (published_intra,) = intra[key]
        assert published_intra == hcoll_single[key[1:]], key
        assert list(steps) == ["tls-rndv", "zcopy", "component-mapping"], key
        pairs = [p.replace("optimal_value", published_intra) for p in study.pairs]
        assert [p.split("inter:")[1] for p in pairs[1:]] == study.rndv  # the 7 inter values
        want = {tuple(sorted({"UCX_TLS": t, "UCX_RNDV_THRESH": p}.items()))
                for t, p in itertools.product(study.tls, pairs)}
        assert got["tls-rndv"] == want and len(want) == 32, key
        assert got["zcopy"] == {(("UCX_ZCOPY_THRESH", z),) for z in study.zcopy}, key
        want = {tuple(sorted({"component": c, "mapping": m}.items()))
                for c, m in itertools.product(components, mappings)}
        assert got["component-mapping"] == want, key
        assert steps["component-mapping"].per == "component"
        # steps 1-2 ran with HCOLL, block mapping and NPS1 only; step 3 on both NPS settings
        assert steps["tls-rndv"].node_type == steps["zcopy"].node_type == "nps1"
        assert steps["component-mapping"].node_type is None
        assert defaults["UCX_RNDV_THRESH"] == study.pairs[0]  # intra:auto,inter:auto = auto


def test_every_published_decision_has_its_case_and_nps_run(plan):
    rows = reference.read_reference(PUBLISHED)
    assert len(rows) == 144
    machine = find_machine("bm-optimized3-36", PLAN.parent)
    nps_run = {int(machine.with_node_type(t).node["nps"]): t for t in machine.node_types}
    assert sorted(nps_run) == sorted({r["nps"] for r in rows}) == [1, 2]
    assert plan.base["node_type"] in machine.node_types
    cases = {_key(c): c for c in plan.case_list()}
    for row in rows:
        case = cases[(row["nodes"], row["ranks_per_node"], row["benchmarks"])]
        run = nps_run[row["nps"]]
        # the component is chosen, with its mapping, by a step that runs on that NPS run
        (chooser,) = [s for s in plan.steps_for(case) if s.per == "component"]
        assert chooser.node_type in (None, run)
        chosen = {(c["component"], c["mapping"]) for c in plan.candidates(chooser, case)}
        assert (row["component"], row["mapping"]) in chosen
        if row["nodes"] == 1:
            values = {c["UCX_RNDV_THRESH"] for c in plan.candidates(chooser, case)}
        else:
            (tls,) = [s for s in plan.steps_for(case) if s.name == "tls-rndv"]
            values = {c["UCX_RNDV_THRESH"] for c in plan.candidates(tls, case)}
            assert row["UCX_TLS"] in {c["UCX_TLS"] for c in plan.candidates(tls, case)}
        assert row["UCX_RNDV_THRESH"] in values, row


def test_every_planned_imb_command_is_the_studys(study):
    out = commstack("plan", str(PLAN), "--json", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    points = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    counts: dict = {}
    for p in points:
        counts[p["step"]] = counts.get(p["step"], 0) + 1
    # 12 one-node cases x 30; 36 multi-node cases x (32 + 7 + 6), each as if earlier steps kept
    # their defaults
    assert counts == {"rndv-component-mapping": 360, "tls-rndv": 1152, "zcopy": 252,
                      "component-mapping": 216}
    wrapper, exe, options = study.command[:2], study.command[2], study.command[3:-1]
    for p in points:
        case = p["case"]
        procs = case["nodes"] * case["ranks_per_node"]
        want = {}
        for flag, value in zip(options[::2], options[1::2]):
            want[flag] = (value.replace("xx", str(study.msglog[case["benchmarks"]][case["nodes"]]))
                          .replace("num_of_procs", str(procs)))
        bench = p["benchmark_argv"]
        assert Path(bench[0]).name == exe
        names = [a for a in bench[1:] if not a.startswith("-") and a not in want.values()]
        assert [n.lower() for n in names] == [case["benchmarks"].lower()], bench
        given = {a: b for a, b in zip(bench[1:], bench[2:]) if a.startswith("-")}
        assert given == want, bench
        at = len(p["argv"]) - len(bench)
        assert p["argv"][at:] == bench and p["argv"][at - 2:at] == wrapper, p["argv"]
        assert (p["nodes"], p["ranks_per_node"], p["ranks"]) == (
            case["nodes"], case["ranks_per_node"], procs)
        for name, value in p["candidate"].items():
            if name.startswith("UCX_"):
                assert p["env"][name] == value
        flags = reference.COMPONENT_FLAGS[p["params"]["component"]]
        assert {k: int(p["env"]["OMPI_MCA_" + k[4:]]) for k in flags} == flags


def test_a_bad_case_value_is_refused_naming_it(tmp_path):
    data = yaml.safe_load(PLAN.read_text())
    data["case_values"]["rndv_intra"] = data["case_values"]["rndv_intra"][1:]  # no 8 x Alltoall
    path = tmp_path / "bm-optimized3-36" / "oci-study.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    from commstack.matrix.model import MatrixError

    with pytest.raises(MatrixError, match=r"case_values\.rndv_intra: 0 entries match the case "
                                          r"nodes=2, ranks_per_node=8, benchmarks=Alltoall"):
        load_plan(path)


@pytest.mark.spack
@pytest.mark.mpi
def test_compare_reference_lines_a_tuning_up_with_the_published_decisions(tmp_path):
    """The plan's 1-node step, shrunk to this machine (1 case, 8 ranks oversubscribed, small
    sizes, Open MPI 4.1.4 + UCC: none and ucc measured, hcoll skipped), tuned for real; its
    decisions are compared per component with the study's, each at the study's NPS."""
    bindir = spack_support.ompi_ucc_bin()
    data = yaml.safe_load(PLAN.read_text())
    data["campaign"] = "oci-study-local"
    base = data["base"]
    base.pop("node_type")
    base["repeats"], base["timeout"] = 3, 300
    base["stacks"] = {"ompi": {"flavour": "openmpi", "bin": str(bindir), "launcher": "mpirun",
                               "env": {"OMPI_MCA_pml": "ucx", "OMPI_MCA_pml_ucx_tls": "any",
                                       "OMPI_MCA_pml_ucx_devices": "any"}}}
    base["parameters"] = {"stack": "ompi", "msglog": "2:8", "iter": 20, "npmin": "{procs}",
                          "oversubscribe": "auto"}
    data["cases"] = {"nodes": [1], "ranks_per_node": [8], "benchmarks": ["Alltoall"]}
    data["defaults"]["component"] = "none"  # hcoll, the study's default, is not in this Open MPI
    data["defaults"]["UCX_TLS"] = "self,sm"
    first = data["steps"][0]
    first["product"]["UCX_RNDV_THRESH"] = ["auto", "32kb"]
    plan = tmp_path / "plans" / "local" / "oci-study-local.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(yaml.safe_dump(data, sort_keys=False))
    run = commstack("tune", str(plan), "--out", str(tmp_path / "results"), "--local",
                    "--compare-reference", str(PUBLISHED), env=dict(os.environ), timeout=1800)
    assert run.returncode in (0, 3), run.stdout[-3000:] + run.stderr[-3000:]
    root = tmp_path / "results" / "local" / "oci-study-local"
    (ours,) = list(csv.DictReader((root / "decisions.csv").open()))
    published = {r["component"]: r for r in reference.read_reference(PUBLISHED)
                 if (r["nodes"], r["ranks_per_node"], r["benchmarks"]) == (1, 8, "Alltoall")}
    table = (root / "reference-comparison.md").read_text().splitlines()
    lines = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    found = [dict(zip(header, cells)) for cells in lines]
    machine = find_machine("local", plan.parent)
    nps = str(machine.node["nps"])
    assert ours["nps"] == nps
    for component in ("none", "ucc"):
        mine = [f for f in found if f["component"] == component]
        ref = published[component]
        if str(ref["nps"]) != nps:  # decided at the other NPS: said, not compared
            assert [(f["parameter"], f["agree"]) for f in mine] == [("nps", "None")], mine
            assert f"compared in the NPS{ref['nps']} run" in mine[0]["reference"]
            continue
        got = {f["parameter"]: f for f in mine}
        assert set(got) == {"UCX_RNDV_THRESH", "mapping", "nps"}, mine
        for name, column in (("UCX_RNDV_THRESH", f"UCX_RNDV_THRESH [component={component}]"),
                             ("mapping", f"mapping [component={component}]")):
            assert got[name]["ours"] == ours[column] and got[name]["reference"] == ref[name]
            assert got[name]["agree"] == str(ours[column] == ref[name])
    assert not [f for f in found if f["component"] == "hcoll"]  # skipped: nothing to compare
    assert "hcoll: skipped" in ours["skipped"]


def test_the_nps2_run_takes_the_nps1_steps_decisions_and_refuses_without_them(plan, tmp_path):
    from commstack.matrix.model import MatrixError
    from commstack.store.files import write_new_json
    from commstack.tune.step import decision_from, measured_elsewhere

    machine = find_machine("bm-optimized3-36", PLAN.parent)
    nps2 = machine.with_node_type("nps2")
    steps = {s.name: s for s in plan.steps}
    assert measured_elsewhere(steps["tls-rndv"], machine) is None  # nps1 measures it
    assert measured_elsewhere(steps["tls-rndv"], nps2) == "nps1"
    assert measured_elsewhere(steps["component-mapping"], nps2) is None
    case_dir = tmp_path / "oci-study-nps2" / "n2_ppn8_alltoall"
    elsewhere = {"nps1": tmp_path / "oci-study-nps1"}.__getitem__
    with pytest.raises(MatrixError, match=r"measured on node type 'nps1' only; tune there first "
                                          r"\(--node-type nps1\)"):
        decision_from(steps["tls-rndv"], "nps1", case_dir, elsewhere)
    source = tmp_path / "oci-study-nps1" / "n2_ppn8_alltoall" / "tls-rndv" / "decision.json"
    source.parent.mkdir(parents=True)
    winner = {"UCX_TLS": "self,sm,rc", "UCX_RNDV_THRESH": "intra:32kb,inter:128kb"}
    write_new_json(source, {"step": "tls-rndv", "winner": winner, "changed": True})
    taken = decision_from(steps["tls-rndv"], "nps1", case_dir, elsewhere)
    assert taken["winner"] == winner and taken["measured_on"] == "nps1"
    assert taken["from"] == str(source)
