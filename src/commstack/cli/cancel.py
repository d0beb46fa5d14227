"""Cancel a campaign's submitted jobs that are still queued or running, each by the scheduler that
took it (scancel, flux cancel); every run they recorded stays, and `commstack submit --resume`
submits what is left.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from commstack.cli.common import existing_campaign
from commstack.errors import CampaignError
from commstack.schedulers import campaign_jobs
from commstack.store.campaign import Campaign


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", type=Path, help="results/<machine>/<campaign>")
    p.add_argument("--job", action="append", default=[], metavar="ID",
                   help="only this job (as `commstack status` lists it); repeatable")


def execute(args: argparse.Namespace) -> int:
    campaign = Campaign(existing_campaign(args.campaign))
    jobs = [j for j in campaign_jobs.submitted_jobs(campaign)
            if not args.job or j["job_id"] in args.job]
    unknown = sorted(set(args.job) - {j["job_id"] for j in jobs})
    if unknown:
        raise CampaignError(f"{campaign.root}: no submitted job {', '.join(unknown)} "
                         "(jobs/submitted.jsonl; `commstack status` lists them)")
    cancelled = 0
    for scheduler, ids in campaign_jobs.by_scheduler(jobs):
        active = scheduler.queue_states(ids)
        if active:
            scheduler.cancel(sorted(active))
            for job_id in sorted(active):
                print(f"{scheduler.name} job {job_id}: {active[job_id]} -> cancelled")
            cancelled += len(active)
    print(f"{campaign.root}: {cancelled} job(s) cancelled; what they recorded stays "
          f"(resume with: commstack submit <matrix> --resume)")
    return 0
