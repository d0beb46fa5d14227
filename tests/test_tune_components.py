"""Must show: a tuning step over named settings (plan `settings:`) compares the collective
components for real, as the Oracle study's step 3 does: `plans/local/ompi-ucc-components.yaml`
on the Open MPI 4.1.4 + UCC stack Spack builds (view ompi-ucc of environments/local) measures `none` and
`ucc` (each launched with the parameters its setting names), skips `hcoll` before anything is
launched because the pre-flight's ompi_info has no coll/hcoll (the reason in the step's
decision.json and in decisions.md), and exports the winner's parameters, whichever the noise
rule picks. Bad named settings are refused before anything runs, naming the problem.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path
from textwrap import dedent

import pytest
import yaml

from tests import spack_support
from tests.sweeps import commstack, records

REPO = Path(__file__).resolve().parent.parent
PLAN = REPO / "plans" / "local" / "ompi-ucc-components.yaml"
CASES = ("allreduce", "alltoall", "allgather")
HCOLL_SKIPPED = ("hcoll: skipped — this Open MPI has no coll/hcoll (HCOLL ships with HPC-X / "
                 "MLNX OFED)")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    bindir = spack_support.ompi_ucc_bin()
    tmp = tmp_path_factory.mktemp("tune-ucc")
    plan = tmp / "plans" / "local" / PLAN.name
    plan.parent.mkdir(parents=True)
    shutil.copyfile(PLAN, plan)
    env = {**os.environ, "COMMSTACK_OMPI_UCC_BIN": str(bindir)}
    run = commstack("tune", str(plan), "--out", str(tmp / "results"), "--local", env=env,
                    timeout=1200)
    # 3: tuned slower than default at some size (4 ranks on 2 cores; said, not hidden)
    assert run.returncode in (0, 3), run.stdout[-3000:] + run.stderr[-3000:]
    return tmp / "results" / "local" / "ompi-ucc-components", run


@pytest.mark.spack
@pytest.mark.mpi
def test_none_and_ucc_are_measured_with_their_parameters_and_hcoll_is_skipped(tuned):
    root, run = tuned
    settings = yaml.safe_load(PLAN.read_text())["settings"]["component"]
    for case in CASES:
        step = root / case / "component-mapping"
        decision = json.loads((step / "decision.json").read_text())
        [skipped] = decision["skipped"]
        assert skipped["setting"] == "hcoll" and skipped["text"].startswith(HCOLL_SKIPPED)
        assert "coll: " in skipped["reason"] and "ucc" in skipped["reason"]  # ompi_info's list
        assert f"{case}: step component-mapping: {HCOLL_SKIPPED}" in run.stdout
        recs = [r for r in records(step) if r["status"] == "ok"]
        by_component = {}
        for rec in recs:
            by_component.setdefault(rec["params"]["component"], []).append(rec)
            assert rec["oversubscribed"] is True  # 4 ranks, 2 cores: marked
            assert "mca.coll_hcoll_enable" not in rec["params"]  # off already: left out
        assert set(by_component) == {"none", "ucc"}  # nothing launched for hcoll
        for name, found in by_component.items():
            launched = {k: v for k, v in settings[name].items() if k != "mca.coll_hcoll_enable"}
            for rec in found:
                assert {k: rec["params"][k] for k in launched} == launched
            assert {r["params"]["mapping"] for r in found} == {"block", "cyclic"}
        assert "coll_hcoll_enable" not in (step / "matrix.yaml").read_text()
        assert {tuple(sorted(s["setting"].items())) for s in decision["scores"]} <= {
            (("component", c), ("mapping", m)) for c in ("none", "ucc")
            for m in ("block", "cyclic")}
        assert set(decision["per_group"]) == {"none", "ucc"}


@pytest.mark.spack
@pytest.mark.mpi
def test_the_winner_is_exported_with_its_parameters(tuned):
    root, _ = tuned
    settings = yaml.safe_load(PLAN.read_text())["settings"]["component"]
    rows = list(csv.DictReader(open(root / "decisions.csv")))
    assert [r["benchmarks"] for r in rows] == ["Allreduce", "Alltoall", "Allgather"]
    table = (root / "decisions.md").read_text()
    assert table.count(HCOLL_SKIPPED) == 3
    for case, row in zip(CASES, rows):
        summary = json.loads((root / case / "tuned" / "decision.json").read_text())
        winner = summary["settings"]["component"]
        assert winner in ("none", "ucc") and row["component"] == winner
        assert row["mapping"] == summary["settings"]["mapping"]
        expanded = {k: v for k, v in settings[winner].items() if k != "mca.coll_hcoll_enable"}
        assert {k: summary["launched"][k] for k in expanded} == expanded
        conf = (root / case / "tuned" / "mca-params.conf").read_text()
        assert f"# component = {winner} (a named setting" in conf
        lines = {line for line in conf.splitlines() if not line.startswith("#")}
        assert lines == {f"{k[4:]} = {v}" for k, v in expanded.items()}
        # Verify: default and tuned side by side, as for any tuning.
        verify = {(r["params"]["component"], r["params"]["mapping"])
                  for r in records(root / case / "verify")}
        assert ("none", "block") in verify
        assert (winner, summary["settings"]["mapping"]) in verify
        check = summary["verify"]
        assert check["slower"] or check["faster"] or check["same"] or \
            verify == {("none", "block")}


# --- validation: before anything runs ------------------------------------------------------

BASE = dedent("""
    campaign: bad
    base:
      benchmark: imb-mpi1
      stacks: {o: {flavour: openmpi, bin: /nonexistent}}
      parameters: {stack: o, msglog: "2:4"}
    settings:
      component:
        none: {mca.coll_ucc_enable: 0}
        ucc: {mca.coll_ucc_enable: 1, mca.coll_ucc_priority: 100}
    defaults: {component: none, mapping: block}
    steps:
      - name: component-mapping
        per: component
        product: {component: [none, ucc], mapping: [block, cyclic]}
    """)


def _refused(tmp_path: Path, text: str) -> str:
    plan = tmp_path / "plans" / "local" / "bad.yaml"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(text)
    run = commstack("tune", str(plan), "--out", str(tmp_path / "results"), "--local")
    assert run.returncode == 2, run.stdout + run.stderr
    assert not (tmp_path / "results").exists()  # nothing was created, let alone launched
    return run.stderr + run.stdout


@pytest.mark.parametrize("old, new, expected", [
    ("[none, ucc], mapping", "[none, ucx], mapping",
     "steps.component-mapping.product.component: 'ucx' is not a named setting of component "
     "(settings.component has none, ucc)"),
    ("defaults: {component: none,", "defaults: {component: nccl,",
     "defaults.component: 'nccl' is not a named setting of component"),
    ("mca.coll_ucc_priority: 100", "ucx_tls: self",
     "settings.component.ucc.ucx_tls: unknown parameter"),
    ("ucc: {mca.coll_ucc_enable: 1,", "ucc: {mapping: cyclic, mca.coll_ucc_enable: 1,",
     "steps.component-mapping.mapping: also set by the named settings of component"),
    ("  component:\n", "  mapping:\n", "settings.mapping: already a parameter name"),
    ("defaults: {component: none,", "defaults: {componnet: none,", "componnet: unknown parameter"),
])
def test_bad_named_settings_are_refused_naming_the_problem(tmp_path, old, new, expected):
    assert old in BASE
    assert expected in _refused(tmp_path, BASE.replace(old, new, 1))
