"""A campaign of a case (a step's, the verify's, a step's refined sizes'): its matrix written
once, its campaign.json with the tuning's state, and its sweep run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import commstack
from commstack.matrix import settings as S
from commstack.matrix.load import load_matrix
from commstack.matrix.model import MatrixError
from commstack.plan import Plan, prepare
from commstack.store.campaign import Campaign
from commstack.store.files import write_new
from commstack.sweep import SweepResult, run_sweep
from commstack.tune.case_run import CaseRun
from commstack.tune.state import KEY, TuneState
from commstack.tune.step_matrix import step_matrix_text


class TuneInterrupted(Exception):
    """A step's sweep was interrupted; rerun the same command to continue."""


@dataclass(frozen=True)
class StepCampaign:
    run: CaseRun
    settings: Dict[str, Any]  # the settings held (its own axes take the candidates' values)
    axes: List[str]  # the parameters its candidates vary
    directory: Path
    state: TuneState  # what its campaign.json says of the tuning
    block: Optional[S.Settings] = None  # the matrix's `settings:` (the names used, as launched)
    repeats: Optional[int] = None  # when not the base's (a race's most)
    sizes: Optional[List[int]] = None  # the message sizes measured, when not msglog's range

    def sweep(self, candidates: List[Dict[str, Any]]) -> int:
        """Every candidate swept; the runs launched."""
        return self.launch(self.prepare(candidates))

    def prepare(self, candidates: List[Dict[str, Any]]) -> Plan:
        """The campaign of ``candidates`` (its matrix written once, campaign.json with the state)
        and its sweep prepared."""
        run = self.run
        self.directory.mkdir(parents=True, exist_ok=True)
        text = step_matrix_text(run.plan, run.case, self.settings, self.axes, candidates,
                                self.block, self.repeats, self.sizes)
        matrix_path = self.directory / "matrix.yaml"
        if matrix_path.exists():
            if matrix_path.read_text() != text:
                raise MatrixError(f"{matrix_path}: the plan or an earlier decision changed since "
                                  "this step started; tune into a new campaign (--campaign) or "
                                  "remove it")
        else:
            write_new(matrix_path, text.encode())
        matrix = load_matrix(matrix_path)
        campaign = Campaign(self.directory)  # written before run_sweep's, so it carries the marker
        campaign.ensure({"campaign": campaign.name, "machine": campaign.machine,
                         "benchmark": matrix.benchmark.name, "created": time.time(),
                         "matrix": str(matrix.path), "commstack_version": commstack.__version__,
                         KEY: self.state.as_dict()})
        return prepare(matrix, run.machine, run.allocation)

    def launch(self, prepared: Plan, repeat: Optional[int] = None) -> int:
        """One sweep of the prepared campaign (of one repeat when given); the runs it launched."""
        result: SweepResult = run_sweep(prepared, self.directory, log=self.run.log,
                                        retry_failed=self.run.retry_failed, only_repeat=repeat)
        if result.interrupted:
            raise TuneInterrupted(f"{self.directory}: interrupted; run the same command to "
                                  "continue")
        if result.deferred:
            raise TuneInterrupted(f"{self.directory}: {result.deferred} runs left for a longer "
                                  "allocation")
        return result.ran
