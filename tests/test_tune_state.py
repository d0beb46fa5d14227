"""What a step campaign's campaign.json says about the tuning it belongs to (``tune``,
commstack.tune.state): written by a real `commstack tune`, read back as it was written by the
report's side, and a damaged one ends the report in one sentence naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.errors import CampaignError
from commstack.store.files import dump_json
from commstack.tune.decide import Rule
from commstack.tune.state import KEY, TuneState, of_campaign
from tests.recorded_imb import TWO_STEPS, local_plan, recorded_imb, recorded_plan
from tests.sweeps import commstack

PLAN = recorded_plan("state", 2, "I_MPI_ADJUST_BCAST: 1, I_MPI_ADJUST_ALLREDUCE: 1", TWO_STEPS,
                     "decision: {threshold: 0.1, alpha: 0.1, correction: holm}\n"
                     "carry_incumbent: true\n")


@pytest.fixture(scope="module")
def case(impi_root, tmp_path_factory) -> Path:
    """A real two-step tune whose second step carries its incumbent: its case's folder."""
    tmp = tmp_path_factory.mktemp("state")
    plan = local_plan(tmp, "state", dedent(PLAN).replace("EXE", str(recorded_imb(tmp))))
    out = tmp / "results"
    done = commstack("tune", str(plan), "--out", str(out), "--local")
    assert done.returncode in (0, 3), done.stdout[-3000:] + done.stderr[-3000:]
    return next(out.glob("local/state/*/allreduce")).parent


def _written(campaign: Path) -> dict:
    return json.loads((campaign / "campaign.json").read_text())[KEY]


def test_every_campaign_of_a_tune_reads_back_as_it_was_written(case):
    names = sorted(p.parent.name for p in case.glob("*/campaign.json"))
    assert names == ["allreduce", "bcast", "verify"]
    for name in names:
        raw = _written(case / name)
        state = TuneState.from_dict(raw, case / name / "campaign.json")
        assert dump_json(state.as_dict()) == dump_json(raw)
        assert state.steps == ["allreduce", "bcast"] and state.verify == (name == "verify")
        assert state.rule == Rule(0.1, 0.1, "holm")
    verify = TuneState.from_dict(_written(case / "verify"), case / "verify")
    assert (verify.index, verify.skipped, verify.incumbent_from) == (3, None, None)
    # The file sorts its keys; the state gives the incumbent back in the plan's order.
    assert list(verify.incumbent) == verify.axes == ["I_MPI_ADJUST_ALLREDUCE",
                                                     "I_MPI_ADJUST_BCAST"]
    second = TuneState.from_dict(_written(case / "bcast"), case / "bcast")
    assert second.skipped == [] and second.incumbent_from["step"] == "allreduce"


def test_a_damaged_state_ends_the_report_in_one_sentence_naming_the_file(case, tmp_path):
    campaign = tmp_path / "bcast"
    shutil.copytree(case / "bcast", campaign)
    info = json.loads((campaign / "campaign.json").read_text())
    info[KEY]["incumbent"] = ["I_MPI_ADJUST_BCAST", 1]
    (campaign / "campaign.json").write_text(json.dumps(info))
    done = commstack("report", str(campaign))
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert f"{campaign / 'campaign.json'}: tune.incumbent: expected a mapping" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_older_state_is_read_by_todays_rule_and_others_are_no_tune():
    older = {"step": "tls", "incumbent": {"UCX_TLS": "all"},
             "decision": {"noise": 0.02, "min_gain": 0.05, "alpha": 0.01}}
    state = of_campaign({KEY: older}, Path("campaign.json"))
    assert state is not None and state.rule == Rule(alpha=0.01) and state.index == 1
    assert of_campaign({"campaign": "plain"}, Path("campaign.json")) is None
    for damaged in ({"step": "tls"}, {"step": "tls", "incumbent": {}, "index": "first"},
                    {"step": "tls", "incumbent": {}, "decision": {"threshold": "5 %"}}, []):
        with pytest.raises(CampaignError, match=r"^results/x/campaign.json: tune"):
            of_campaign({KEY: damaged}, Path("results/x/campaign.json"))
