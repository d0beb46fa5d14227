"""A stack an order of magnitude slower than the others of its campaign is named in the report
with what its records hold about its transport (commstack.report.slow_stack), on real ReproMPI
runs: one stack's per-call times planted 50 times slower."""

from __future__ import annotations

import re
from pathlib import Path

from commstack import provenance
from commstack.benchmarks.reprompi import parse_reprompi
from commstack.report import slow_stack
from commstack.report.load import Samples, add_samples
from commstack.store.record import Record, StackInfo, UcxReport

FIXTURE = Path(__file__).parent / "fixtures" / "reprompi" / "openmpi-4.1.4" / \
    "barrier-bcast-allreduce-np2.out"


def _slower(text: str, factor: float) -> str:
    return re.sub(r"^(\s+MPI_\w+\s+\d+\s+\d+\s+)([\d.]+)$",
                  lambda m: f"{m[1]}{float(m[2]) * factor:.10f}", text, flags=re.M)


def _records(factor: float):
    text = FIXTURE.read_text()
    env = {"UCX_TLS": "self,sm"}
    out = []
    for stack, body, flavour in (("ompi", text, "openmpi"),
                                 ("slow", _slower(text, factor), "openmpi")):
        for repeat in (1, 2):
            out.append(Record(
                campaign="c", machine="local", benchmark="reprompi", point_id=stack,
                repeat=repeat, attempt=1, params={"stack": stack, "nrep": 20}, status="ok",
                stack=stack, stack_info=StackInfo(flavour=flavour, launcher="mpirun.openmpi"),
                ranks=2, parsed=parse_reprompi(body).rows, env=env,
                ucx=UcxReport(**provenance.ucx_report(env, body, None, flavour=flavour))))
    samples = Samples()
    for rec in out:
        add_samples(samples, rec)
    return samples, out


def test_a_stack_fifty_times_slower_is_named_with_its_transport_evidence():
    samples, records = _records(50)
    lines = slow_stack.section(samples, records)
    named = [line for line in lines if line.startswith("- **")]
    assert len(named) == 1 and named[0].startswith("- **slow**: 50x the best stack")
    assert "(median over 9 results" in named[0]
    text = "\n".join(lines)
    assert "transport variables set: UCX_TLS=self,sm" in text
    assert "UCX: no evidence that this run used UCX" in text
    assert "launcher mpirun.openmpi" in text


def test_a_stack_three_times_slower_is_not():
    samples, records = _records(3)
    assert slow_stack.section(samples, records) == []
