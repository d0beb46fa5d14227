"""The self-consistent performance guidelines section (:mod:`commstack.report.guidelines`)
for every campaign that timed collectives with IMB, OSU or ReproMPI, and for ReproMPI campaigns
that vary the process synchronisation, how much it moves the result
(:mod:`commstack.report.sync_method`); and a stack an order of magnitude slower than the others of
its campaign, with its transport evidence (:mod:`commstack.report.slow_stack`)."""

from __future__ import annotations

from typing import List, Optional

from commstack.report import guidelines, slow_stack, sync_method
from commstack.report.studies.base import Context, Study
from commstack.store.record import Record


def _output(context: Context, record: Record) -> Optional[str]:
    return guidelines.stored_output(context.campaign, record)


def _section(context: Context) -> List[str]:
    samples = context.samples
    if samples is None:
        return guidelines.campaign_section(context.campaign, context.swept)

    def entries(record: Record) -> List[guidelines.Entry]:
        """From the samples; from record.json only for a record that added none."""
        found = samples.entries(record, ("benchmark", "bytes", "np"))
        if found is None:
            return guidelines.row_entries(record, guidelines.stored_rows(context.campaign, record))
        return found

    return guidelines.section(context.swept, lambda r: _output(context, r), entries=entries,
                              layout=samples.layout)


def _sync_section(context: Context) -> List[str]:
    return sync_method.section(context.swept, lambda r: _output(context, r))


SLOW = Study("slow-stack", applies=lambda c: c.samples is not None and len(
    {r.stack for r in c.swept if r.stack}) > 1,
    section=lambda c: slow_stack.section(c.samples, c.swept))
SYNC = Study("sync-method", applies=lambda c: any(map(sync_method.applies, c.swept)),
             section=_sync_section)
STUDY = Study("guidelines", applies=lambda c: any(guidelines.applies(r) for r in c.swept),
              section=_section)
