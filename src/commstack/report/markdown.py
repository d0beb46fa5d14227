"""report.md for one campaign: what ran, what failed, tables and plots of the aggregates, and the
study-style parts that apply:

* every table cell: trimmed mean [min–max over the repeats] at the benchmark's printed
  resolution; oversubscribed runs and IMB sub-runs in tables of their own, every cell marked;
* cartex campaigns: pivot tables in the published Betzy layout (``pivot``, ``published``); an
  imported file is printed again as ``report/<file stem>.md``;
* campaigns of a staged tuning (``commstack tune``): the step's candidates and its decision by
  the tuner's noise rule, or tuned vs default (``oracle``); never for a plain sweep;
* IMB-RMA Unidir_put/get (and Uniband): flood bandwidth and latency table (``gasnet``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence

import pandas as pd

from commstack.aggregate import aggregate
from commstack.errors import CampaignError
from commstack.report.gasnet import gasnet_section
from commstack.report.oracle import TuneStep, images_csv, matrix_axes, oracle_section
from commstack.report.plots import plot_section
from commstack.report.tables import (
    MARKERS,
    OVERSUBSCRIBED,
    Section,
    by_stack_summary,
    sections,
    to_markdown,
    units,
)
from commstack.store.campaign import Campaign
from commstack.store.files import read_json, replace
from commstack.store.table import write_records_csv


def write_report(campaign_root: Path, others: Sequence[Path] = ()) -> Path:
    """Write report/report.md (+ PNGs, summary.csv, records.csv).

    ``others``: campaigns whose records join this one's in the study sections that compare
    benchmarks (the GASNet-EX paper's figure: testlarge, IMB-RMA and IMB-MPI1 side by side);
    the tables of this report stay this campaign's own."""
    campaign = Campaign(Path(campaign_root))
    records = list(campaign.records())
    if not records:
        raise CampaignError(f"{campaign.root}: no records yet; run the matrix first")
    write_records_csv(campaign.root, records)
    out_dir = campaign.root / "report"
    out_dir.mkdir(exist_ok=True)
    summary_rows = aggregate(records)
    summary = pd.DataFrame(summary_rows)
    if not summary.empty:
        replace(campaign.root / "summary.csv", summary.to_csv(index=False).encode())

    lines: List[str] = [f"# {campaign.name} ({campaign.machine})", ""]
    lines += _overview(campaign, records)
    swept = [r for r in records if not r.get("imported")]
    if any(r.get("imported") for r in records):
        lines += _imported_tables(campaign, records)
    if any(r.get("benchmark") == "cartex" for r in swept):
        lines += _cartex_tables(swept)
    if swept:
        swept_summary = aggregate(swept) if len(swept) < len(records) else summary_rows
        lines += _generic_sections(pd.DataFrame(swept_summary), out_dir, _cores(campaign))
        tune = TuneStep.from_campaign(read_json(campaign.root / "campaign.json"))
        if tune is not None:
            study, plots = oracle_section(aggregate(swept, with_samples=True),
                                          matrix_axes(_last_matrix(campaign)), out_dir, tune)
            lines += study
            if plots:
                replace(out_dir / "oracle_images.csv", images_csv(plots).encode())
    joined_campaigns = [Campaign(Path(other)) for other in others]
    joined = [r for other in joined_campaigns for r in other.records() if not r.get("imported")]
    if joined_campaigns:
        lines += ["", "Study sections below also use " + ", ".join(
            f"`{c.name}` ({c.machine})" for c in joined_campaigns) + "."]
    if swept or joined:
        lines += gasnet_section(swept + joined, out_dir)[0]
    lines += _problems(records)
    _remove_stale(out_dir, lines)
    report = out_dir / "report.md"
    replace(report, ("\n".join(lines) + "\n").encode())
    return report


def _remove_stale(out_dir: Path, lines: List[str]) -> None:
    """Plots an earlier report wrote that this one does not show (a plot of a section that no
    longer exists must not sit beside the report as if it were current)."""
    text = "\n".join(lines)
    for path in out_dir.glob("*.png"):
        if f"({path.name})" not in text:
            path.unlink()
    images = out_dir / "oracle_images.csv"
    if images.exists() and "oracle_images.csv" not in text:
        images.unlink()


def _generic_sections(summary: pd.DataFrame, out_dir: Path, cores: Optional[int]) -> List[str]:
    found = sections(summary)
    if not found:
        return []
    lines = _legend(found, cores)
    unclean_started = False
    for section in found:
        if not section.condition.clean and not unclean_started:
            unclean_started = True
            lines += ["", "---", "", "**⚠ Below: runs that are not clean. Their numbers measure "
                      "the condition as much as the configuration; do not compare them with the "
                      "tables above.**"]
        lines += ["", f"## {section.title}", "", _caption(section, cores), ""]
        if section.mean.index.name == "bytes":
            png = plot_section(section, out_dir / f"{section.slug}.png")
            lines += [f"![{section.title}]({png.name})", ""]
        lines.append(to_markdown(section))
    return lines


def _legend(found: List[Section], cores: Optional[int]) -> List[str]:
    repeats = max(s.repeats for s in found)
    lines = ["", "## How to read the tables", "",
             f"Each cell: the trimmed mean over the repeats (one min and one max dropped; up to "
             f"{repeats} repeats) and, in brackets, the range [min–max] of the repeats; `n=k` "
             "where only k repeats succeeded. Numbers are printed at the resolution the "
             "benchmark printed (each caption says which). Plots: the line is the trimmed mean, "
             "the band the range. A difference whose ranges overlap is within the noise of "
             "these runs, not a finding."]
    markers = sorted({m for s in found for m in s.condition.markers()})
    if markers:
        lines += ["", "Markers (such cells are in tables of their own, after the clean ones):"]
        for m in markers:
            text = MARKERS[m]
            if m == OVERSUBSCRIBED and cores:
                text += f" (this machine: {cores} CPUs available)"
            lines.append(f"- `{m}` {text}")
    return lines


def _caption(section: Section, cores: Optional[int]) -> str:
    text = (f"{units(section.metric)}: trimmed mean [min–max] over the repeats, at "
            f"{section.resolution.describe()}.")
    if not section.condition.clean:
        cells = " ".join(f"`{m}`" for m in section.condition.markers())
        text += (f" ⚠ Not clean ({cells} in every cell): {section.condition.describe()}"
                 + (f", on {cores} CPUs" if cores and section.condition.oversubscribed else "")
                 + ".")
    return text


def _cores(campaign: Campaign) -> Optional[int]:
    sessions = sorted((campaign.root / "sessions").glob("*/provenance.json"))
    if not sessions:
        return None
    value = json.loads(sessions[-1].read_text()).get("cpus_available")
    return int(value) if isinstance(value, int) else None


def _imported_tables(campaign: Campaign, records: List[dict]) -> List[str]:
    """Each imported file's tables printed from the records: as published in report/<stem>.md,
    with corrected labels and notes here."""
    from commstack.report.published import imported_layouts, render_layout

    lines: List[str] = []
    for item in imported_layouts(campaign.root):
        source = item.layout.source
        text = render_layout(item.layout, records, as_published=True)
        replace(campaign.root / "report" / f"{item.stem}.md",
                (f"<!-- printed by commstack from the records of {campaign.machine}/"
                 f"{campaign.name}, in the layout of {source.get('file')} -->\n\n"
                 + text).encode())
        lines += ["", f"## Published tables: {source.get('file')}", "",
                  f"{item.info.get('numbers')} numbers ({item.layout.unit}) imported from "
                  f"`{source.get('file')}` (sha256 {str(source.get('sha256'))[:12]}); "
                  f"{item.info.get('nan_cells')} cells printed as NaN. Printed again from the "
                  f"records in the published layout: [{item.stem}.md]({item.stem}.md).", ""]
        lines += [f"- {n}" for n in item.info.get("notes", [])]
        lines += [f"- corrected: {n}" for n in item.info.get("corrections", [])]
        lines += ["", render_layout(item.layout, records, markdown=True, as_published=False)]
    return lines


def _cartex_tables(records: List[dict]) -> List[str]:
    """Swept cartex results as "chosen results"-style tables (rows executables, columns hXfY)."""
    from commstack.report.pivot import AmbiguousCell, auto_layout
    from commstack.report.published import render_layout

    layout = auto_layout(records)
    if layout is None:
        return []
    try:
        text = render_layout(layout, records)
    except AmbiguousCell as exc:
        return ["", "## Halo exchange tables", "", f"Not printed: {exc}."]
    return ["", "## Halo exchange tables (Betzy layout)", "",
            f"{layout.unit}, trimmed mean over repeats (the range of the repeats is in the "
            "tables per configuration below); rows executables, columns hXfY = halo X, "
            "fields Y.", "", text]


def _last_matrix(campaign: Campaign) -> Optional[dict]:
    import yaml

    copies = sorted((campaign.root / "sessions").glob("*/matrix.yaml"))
    return yaml.safe_load(copies[-1].read_text()) if copies else None


def _overview(campaign: Campaign, records: List[dict]) -> List[str]:
    counts = by_stack_summary(records)
    sessions = sorted((campaign.root / "sessions").glob("*/provenance.json"))
    lines = [f"- records: {len(records)} ({', '.join(f'{v} {k}' for k, v in counts.items())})",
             f"- points: {len({r['point_id'] for r in records})}, repeats up to "
             f"{max(r['repeat'] for r in records)}"]
    imported = sorted({r["source"]["file"] for r in records if r.get("imported")})
    if imported:
        lines.append(f"- imported (published values, not runs): {', '.join(imported)}")
    if sessions:
        prov = json.loads(sessions[-1].read_text())
        lines += [f"- host: {prov.get('hostname')}, CPU: {prov.get('cpu_model')}, "
                  f"{prov.get('cpus_available')} CPUs available",
                  f"- commstack {prov.get('commstack_version')}, git {prov.get('git_commit')}",
                  f"- sessions: {len(sessions)} (provenance under sessions/)"]
    swept = [r for r in records if not r.get("imported")]
    for stack in sorted({str(r["stack"]) for r in swept}):
        example = next(r for r in swept if str(r["stack"]) == stack)
        lines.append(f"- stack `{stack}` ({example['stack_info']['flavour']}): "
                     f"`{example['command']}`")
    return lines


def _problems(records: List[dict]) -> List[str]:
    lines: List[str] = []
    bad = [r for r in records if r["status"] != "ok"]
    if bad:
        lines += ["", "## Runs that did not succeed", "", "| point | repeat | try | status | exit | why |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r['point_id']} | {r['repeat']} | {r['attempt']} | {r['status']} | "
                  f"{r.get('exit_code')} | {_why(r)} |" for r in bad]
    flagged = sorted({(r["point_id"], v) for r in records
                      for v in (r.get("ucx") or {}).get("unrecognised", [])})
    if flagged:
        lines += ["", "## UCX variables UCX did not recognise", ""]
        lines += [f"- point {pid}: `{name}`" for pid, name in flagged]
    unchecked = sorted({(name, (r.get("ucx") or {}).get("unchecked_reason") or "")
                        for r in records for name in (r.get("ucx") or {}).get("unchecked", {})})
    if unchecked:
        lines += ["", "## UCX variables set but not confirmed", ""]
        lines += [f"- `{name}`: {why}" for name, why in unchecked]
    return lines


def _why(record: dict) -> str:
    """The reason a run did not succeed, short enough for a table cell."""
    placement = record.get("placement") or {}
    text = record.get("parse_error") or (
        placement.get("summary") if record.get("status") == "placement-mismatch" else None) or (
        record.get("notes") or [""])[-1]
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= 160 else text[:157] + "..."
