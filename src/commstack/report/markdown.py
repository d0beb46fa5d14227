"""report.md for one campaign: what ran, what failed, tables and plots of the aggregates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pandas as pd

from commstack.aggregate import aggregate
from commstack.errors import CampaignError
from commstack.report.plots import plot_section
from commstack.report.tables import by_stack_summary, sections, to_markdown, units
from commstack.store.campaign import Campaign
from commstack.store.files import replace
from commstack.store.table import write_records_csv


def write_report(campaign_root: Path) -> Path:
    campaign = Campaign(Path(campaign_root))
    records = list(campaign.records())
    if not records:
        raise CampaignError(f"{campaign.root}: no records yet; run the matrix first")
    write_records_csv(campaign.root, records)
    out_dir = campaign.root / "report"
    out_dir.mkdir(exist_ok=True)
    summary = pd.DataFrame(aggregate(records))
    if not summary.empty:
        replace(campaign.root / "summary.csv", summary.to_csv(index=False).encode())

    lines: List[str] = [f"# {campaign.name} ({campaign.machine})", ""]
    lines += _overview(campaign, records)
    for section in sections(summary):
        lines += ["", f"## {section.title}", "",
                  f"{units(section.metric)}, trimmed mean over repeats (min and max dropped).", ""]
        if section.table.index.name == "bytes":
            png = plot_section(section, out_dir / f"{section.slug}.png")
            lines += [f"![{section.title}]({png.name})", ""]
        lines.append(to_markdown(section.table))
    lines += _problems(records)
    report = out_dir / "report.md"
    replace(report, ("\n".join(lines) + "\n").encode())
    return report


def _overview(campaign: Campaign, records: List[dict]) -> List[str]:
    counts = by_stack_summary(records)
    sessions = sorted((campaign.root / "sessions").glob("*/provenance.json"))
    lines = [f"- records: {len(records)} ({', '.join(f'{v} {k}' for k, v in counts.items())})",
             f"- points: {len({r['point_id'] for r in records})}, repeats up to "
             f"{max(r['repeat'] for r in records)}"]
    if sessions:
        prov = json.loads(sessions[-1].read_text())
        lines += [f"- host: {prov.get('hostname')}, CPU: {prov.get('cpu_model')}, "
                  f"{prov.get('cpus_available')} CPUs available",
                  f"- commstack {prov.get('commstack_version')}, git {prov.get('git_commit')}",
                  f"- sessions: {len(sessions)} (provenance under sessions/)"]
    for stack in sorted({r["stack"] for r in records}):
        example = next(r for r in records if r["stack"] == stack)
        lines.append(f"- stack `{stack}` ({example['stack_info']['flavour']}): "
                     f"`{example['command']}`")
    return lines


def _problems(records: List[dict]) -> List[str]:
    lines: List[str] = []
    bad = [r for r in records if r["status"] != "ok"]
    if bad:
        lines += ["", "## Runs that did not succeed", "", "| point | repeat | try | status | exit |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['point_id']} | {r['repeat']} | {r['attempt']} | {r['status']} | "
                  f"{r['exit_code']} |" for r in bad]
    flagged = sorted({(r["point_id"], v) for r in records for v in r["ucx"]["unrecognised"]})
    if flagged:
        lines += ["", "## UCX variables UCX did not recognise", ""]
        lines += [f"- point {pid}: `{name}`" for pid, name in flagged]
    over = sorted({r["point_id"] for r in records if r.get("oversubscribed")})
    if over:
        lines += ["", f"Oversubscribed (more ranks than cores): {', '.join(over)}."]
    return lines
