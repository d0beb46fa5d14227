"""report.md for one campaign: what ran, what failed, tables and plots of the aggregates, and the
sections of the studies that apply (:mod:`commstack.report.studies`).

Every table cell: median [its 95 % interval] (repeats) at the benchmark's printed resolution
(:mod:`~commstack.report.tables`); oversubscribed runs and IMB sub-runs in tables of their own,
every cell marked. Order: overview, layouts of published tables, the tables and plots per
benchmark, the other studies, the runs that did not succeed.

Simulated records (SimGrid SMPI, :mod:`commstack.simulated`): a banner over the report names the
simulator, the platform, its model and placeholders (and, when the campaign also has measured
stacks, which stacks are which); the host line says the simulation ran there, not that the
numbers were measured there; every column, plot line and study setting of simulated numbers says
"(simulated)", and summary.csv has their platform in ``simulated``. A campaign without simulated
records reads exactly as before.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import BinaryIO, Dict, List, Optional, Sequence, Set

import pandas as pd

from commstack import simulated as sim
from commstack import stats
from commstack.aggregate import coded_summary_frame
from commstack.errors import CampaignError
from commstack.markdown_table import table
from commstack.matrix.model import DEVIATION
from commstack.report import from_index
from commstack.report.beside import Beside
from commstack.report.drawing import Drawer
from commstack.report.freed_memory import return_large_frees
from commstack.report.load import Loaded, Samples, load
from commstack.report.numbers import MARKERS, OVERSUBSCRIBED
from commstack.report.rehearsal_banner import banner
from commstack.report.repeats import how_repeats_were_taken
from commstack.report.studies import STUDIES, Context, Study
from commstack.report.tables import (
    MAX_LINES,
    Section,
    by_stack_summary,
    sections,
    to_markdown,
    units,
)
from commstack.store import table as records_csv
from commstack.store.campaign import Campaign
from commstack.store.files import replace
from commstack.store.record import Record


def write_report(campaign_root: Path, others: Sequence[Path] = ()) -> Path:
    """Write report/report.md (+ PNGs, summary.csv).

    ``others``: campaigns whose records join this one's in the study sections that compare
    benchmarks (the GASNet-EX paper's figure: testlarge, IMB-RMA and IMB-MPI1 side by side);
    the tables of this report stay this campaign's own."""
    campaign = Campaign(Path(campaign_root))
    out_dir = campaign.root / "report"
    return_large_frees()
    # Drawing workers start now, from this still small process, and import matplotlib while
    # the records are read; the plots are drawn there while this process writes the rest.
    drawer = Drawer(out_dir)
    beside = Beside()  # summary.csv, written by a child meanwhile
    try:
        lines = _lines(campaign, others, drawer, beside)
    except BaseException:
        drawer.close()
        beside.close()
        raise
    try:
        beside.finish()
    finally:
        drawer.finish()
    _remove_stale(out_dir, lines)
    report = out_dir / "report.md"
    replace(report, ("\n".join(lines) + "\n").encode())
    return report


def _lines(campaign: Campaign, others: Sequence[Path], drawer: Drawer,
           beside: Beside) -> List[str]:
    info = _info(campaign)
    def keep_rows(record: Record) -> bool:
        return any(s.needs_rows(record, info) for s in STUDIES)

    # From the Parquet index (complete from the records first); every record.json without pyarrow.
    loaded = from_index.load(campaign.root, keep_rows) or load(campaign.root, keep_rows)
    records = [r for r in loaded.records if r is not None]
    if not records:
        raise CampaignError(f"{campaign.root}: no records yet; run the matrix first")
    out_dir = campaign.root / "report"
    out_dir.mkdir(exist_ok=True)
    platforms = {r.point_id: sim.platform(r.simulation) for r in records if r.simulation}
    summary = _summary(loaded.samples, platforms=platforms)
    joined_campaigns = [Campaign(Path(other)) for other in others]
    context = Context(campaign, records, out_dir, joined_campaigns,
                      [r for other in joined_campaigns for r in other.records() if not r.published],
                      samples=loaded.samples)
    studies = [s for s in STUDIES if s.applies(context)]
    swept_summary = summary
    if len(context.swept) < len(records) and not summary.empty:
        # Their own summary: the printed resolution is the swept records' alone.
        swept_summary = _summary(loaded.samples, {r.point_id for r in context.swept}, platforms)
    found = sections(swept_summary.reset_index(drop=True)) \
        if context.swept and not swept_summary.empty else []
    for section in found:
        if section.mean.index.name == "bytes":
            drawer.add(section, out_dir / _png(section))
    if not summary.empty:
        # summary.csv by a child (:mod:`~commstack.report.beside`).
        beside.write(campaign.root / "summary.csv", functools.partial(_write_summary, summary))
    tables = _generic_sections(found, _cores(campaign))
    # Made before the studies' sections (placed between them): the summary and the tables'
    # frames, half this process's memory at 100,000 records, are then freed for the studies.
    del summary, swept_summary, found
    return _write_rest(campaign, loaded, tables, studies, context)


def _write_rest(campaign: Campaign, loaded: Loaded, tables: List[str],
                studies: List[Study], context: Context) -> List[str]:
    """The report's lines (``tables``: the tables' own); a stale records.csv is removed."""
    retired = records_csv.retire(campaign.root)
    if retired:
        print(retired, file=sys.stderr)

    lines: List[str] = [f"# {campaign.name} ({campaign.machine})", ""]
    lines += banner(campaign.root)
    lines += sim.banner(context.records, _host(campaign))
    lines += _overview(campaign, context.records)
    lines += _studies([s for s in studies if s.before_tables], context)
    lines += tables
    lines += _studies([s for s in studies if not s.before_tables], context)
    if context.joined_campaigns and not _named(lines):
        lines += ["", "No study section shows the campaigns given with `--with` ("
                  + _names(context.joined_campaigns) + "): they hold no results those studies "
                  "use."]
    lines += _problems(context.records)
    return lines


def _info(campaign: Campaign) -> dict:
    path = campaign.root / "campaign.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _summary(samples: Samples, points: Optional[Set[str]] = None,
             platforms: Optional[Dict[str, str]] = None) -> pd.DataFrame:
    """The summary of every sample, or of the samples of ``points``; ``simulated``: the
    platform of each simulated point (``platforms``), empty for a measured one."""
    import numpy as np

    coded = samples.coded()
    if points is not None:
        wanted = np.array([p in points for p in coded.point_names], dtype=bool)
        coded = coded.take(np.flatnonzero(wanted[coded.point]))
    summary = coded_summary_frame(coded, samples.points)
    if not summary.empty:
        summary["simulated"] = summary["point_id"].map(platforms or {}).astype(object)
    return summary


def _write_summary(summary: pd.DataFrame, handle: BinaryIO) -> None:
    summary.to_csv(handle, index=False, encoding="utf-8")


def _studies(studies: List[Study], context: Context) -> List[str]:
    """The studies' sections; before the first that shows the ``--with`` campaigns, a line
    naming them."""
    lines: List[str] = []
    for study in studies:
        section = study.section(context)
        if section and study.uses_joined and context.joined_campaigns and not _named(lines):
            lines += ["", _JOINED + _names(context.joined_campaigns) + "."]
        lines += section
    return lines


_JOINED = "Study sections below also use "


def _names(campaigns: List[Campaign]) -> str:
    return ", ".join(f"`{c.name}` ({c.machine})" for c in campaigns)


def _named(lines: List[str]) -> bool:
    return any(line.startswith(_JOINED) for line in lines)


def _remove_stale(out_dir: Path, lines: List[str]) -> None:
    """Plots an earlier report wrote that this one does not show (a plot of a section that no
    longer exists must not sit beside the report as if it were current)."""
    text = "\n".join(lines)
    for path in out_dir.glob("*.png"):
        if f"({path.name})" not in text:
            path.unlink()
    for name in {f for study in STUDIES for f in study.files}:
        if (out_dir / name).exists() and name not in text:
            (out_dir / name).unlink()


def _png(section: Section) -> str:
    return f"{section.slug}.png"


def _generic_sections(found: List[Section], cores: Optional[int]) -> List[str]:
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
            lines += [f"![{section.title}]({_png(section)})", ""]
            if len(section.mean.columns) > MAX_LINES:
                lines += [f"The plot draws {MAX_LINES} or fewer of the {len(section.mean.columns)}"
                          " settings (the best by the median over the message sizes of the ratio "
                          "to the best at each size, and the defaults); the heat map "
                          "below it and the table show every one.", ""]
        lines.append(to_markdown(section))
    return lines


def _legend(found: List[Section], cores: Optional[int]) -> List[str]:
    repeats = max(s.repeats for s in found)
    lines = ["", "## How to read the tables", "",
             f"Each cell: `median [low–high] (n)`: the median over the n repeats that succeeded "
             f"(up to {repeats}), and in brackets its distribution-free 95 % confidence interval "
             "(order statistics of the repeats; no normality assumed). Below 6 repeats no such "
             "interval exists and none is shown: such a median is a single estimate, not a "
             "finding. The min–max range of the repeats is in `summary.csv`. Numbers are printed "
             "at the resolution the benchmark printed (each caption says which). Plots: the line "
             "is the median, the band its 95 % interval.",
             "",
             "What a difference means: two cells whose intervals overlap may well be the same; "
             "and intervals that do not overlap are still one comparison among the many a table "
             "invites. This report names no winner: whether B is faster than A is said only by "
             "`commstack compare` (or `tune`), which tests the repeats with a rank test corrected "
             f"for every comparison made at once and a practical threshold of "
             f"{stats.THRESHOLD:.0%}."]
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
    text = (f"{units(section.metric)}: median [95 % interval] (repeats), at "
            f"{section.resolution.describe()}.")
    if not section.condition.clean:
        cells = " ".join(f"`{m}`" for m in section.condition.markers())
        text += (f" ⚠ Not clean ({cells} in every cell): {section.condition.describe()}"
                 + (f", on {cores} CPUs" if cores and section.condition.oversubscribed else "")
                 + ".")
    return text


def _host(campaign: Campaign) -> Optional[str]:
    """The host of the campaign's last session (where a simulation ran)."""
    sessions = sorted((campaign.root / "sessions").glob("*/provenance.json"))
    if not sessions:
        return None
    value = json.loads(sessions[-1].read_text()).get("hostname")
    return str(value) if value else None


def _cores(campaign: Campaign) -> Optional[int]:
    sessions = sorted((campaign.root / "sessions").glob("*/provenance.json"))
    if not sessions:
        return None
    value = json.loads(sessions[-1].read_text()).get("cpus_available")
    return int(value) if isinstance(value, int) else None


def _overview(campaign: Campaign, records: List[Record]) -> List[str]:
    counts = by_stack_summary(records)
    sessions = sorted((campaign.root / "sessions").glob("*/provenance.json"))
    lines = [f"- records: {len(records)} ({', '.join(f'{v} {k}' for k, v in counts.items())})",
             f"- points: {len({r.point_id for r in records})}, repeats up to "
             f"{max(r.repeat for r in records)}",
             f"- repeats taken: {how_repeats_were_taken(records)}"]
    imported = sorted({(r.source or {}).get("file", "?") for r in records if r.published})
    if imported:
        lines.append(f"- imported (published values, not runs): {', '.join(imported)}")
    outputs = [r for r in records if r.imported and not r.published]
    if outputs:
        lines.append(f"- imported outputs (runs made elsewhere, `commstack import --benchmark`): "
                     f"{len(outputs)}, parameters as the outputs print them; files under "
                     "`source.file` of each record")
    if sessions:
        prov = json.loads(sessions[-1].read_text())
        host = (f"{prov.get('hostname')}, CPU: {prov.get('cpu_model')}, "
                f"{prov.get('cpus_available')} CPUs available")
        kind = sim.kind_of_records(records)
        if kind.simulated and not kind.measured:
            host = (f"- simulation host (where the simulator ran; no number below was measured "
                    f"on it): {host}; the numbers are those of the simulated platform "
                    f"{' and '.join(kind.platforms)}")
        elif kind.simulated:
            host = (f"- host: {host} (the measured stacks ran here; the simulated ones ran here "
                    f"as a simulation of {' and '.join(kind.platforms)}, not measured on it)")
        else:
            host = f"- host: {host}"
        lines += [host,
                  f"- commstack {prov.get('commstack_version')}, git {prov.get('git_commit')}",
                  f"- sessions: {len(sessions)} (provenance under sessions/)"]
    swept = [r for r in records if not r.imported]
    for stack in sorted({str(r.stack) for r in swept}):
        example = next(r for r in swept if str(r.stack) == stack)
        what = example.flavour if example.simulation is None else (
            f"{example.flavour}, {sim.label(example.simulation)}")
        lines.append(f"- stack `{stack}` ({what}): `{example.command}`")
    return lines


def _problems(records: List[Record]) -> List[str]:
    lines: List[str] = []
    bad = [r for r in records if not r.ok]
    if bad:
        lines += ["", "## Runs that did not succeed", ""]
        lines += table(["point", "repeat", "try", "status", "exit", "why"],
                       [[r.point_id, r.repeat, r.attempt, r.status, r.exit_code, _why(r)]
                        for r in bad])
    flagged = sorted({(r.point_id, v) for r in records if r.ucx for v in r.ucx.unrecognised})
    if flagged:
        lines += ["", "## UCX variables UCX did not recognise", ""]
        lines += [f"- point {pid}: `{name}`" for pid, name in flagged]
    served = _components_served(records)
    if served:
        lines += ["", "## Components used (the MPI's own evidence)", "",
                  "Runs that asked for a collective component, and what the MPI's own output "
                  "(`components_used` of each record: Open MPI's coll_ucc_verbose=3 lines) says "
                  "served their collectives: calls per collective summed over the point's "
                  "successful repeats, and the calls that fell back to the component below.", ""]
        lines += table(["point", "repeats", "asked", "served by the component (calls)",
                        "fell back (calls)", "parameters"], served)
    unused = _components_not_used(records)
    if unused:
        lines += ["", "## Components asked for but not used", "",
                  "Runs that enabled a collective component which, by the MPI's own output "
                  "(`components_used`), served no call of these collectives. Their numbers "
                  "are of the component below it, not of the one asked for.", ""]
        lines += table(["point", "repeats", "asked", "not used", "fallbacks", "parameters"], unused)
    unchecked = sorted({(name, r.ucx.unchecked_reason or "")
                        for r in records if r.ucx for name in r.ucx.unchecked})
    if unchecked:
        lines += ["", "## UCX variables set but not confirmed", ""]
        lines += [f"- `{name}`: {why}" for name, why in unchecked]
    return lines


def _components_served(records: List[Record]) -> List[List[object]]:
    """One row per point whose records name calls a component asked for served."""
    rows: dict = {}
    for r in records:
        used = r.components_used or {}
        if not r.ok or not used.get("asked") or not used.get("source"):
            continue
        row = rows.setdefault(r.point_id, {"repeats": [], "asked": used["asked"], "calls": {},
                                           "fallbacks": {}, "params": r.params})
        row["repeats"].append(r.repeat)
        for coll, by in (used.get("calls") or {}).items():
            for component, n in by.items():
                key = f"{coll}: {component}"
                row["calls"][key] = row["calls"].get(key, 0) + int(n)
        for coll, n in (used.get("fallbacks") or {}).items():
            row["fallbacks"][coll] = row["fallbacks"].get(coll, 0) + int(n)
    out = []
    for pid, row in rows.items():
        out.append([pid, " ".join(map(str, sorted(row["repeats"]))), ", ".join(row["asked"]),
                    ", ".join(f"{k} {n}" for k, n in sorted(row["calls"].items())) or "none",
                    ", ".join(f"{k} {n}" for k, n in sorted(row["fallbacks"].items())) or "none",
                    " ".join(f"{k}={v}" for k, v in row["params"].items() if k != "benchmarks")])
    return out


def _components_not_used(records: List[Record]) -> List[List[object]]:
    """One row per point whose records say a component asked for did not serve its collectives."""
    rows: dict = {}
    for r in records:
        used = r.components_used or {}
        if not used.get("not_used"):
            continue
        row = rows.setdefault(r.point_id, [r.point_id, [], ", ".join(used.get("asked") or []),
                                           ", ".join(used["not_used"]), used.get("fallbacks") or {},
                                           " ".join(f"{k}={v}" for k, v in r.params.items()
                                                    if k != "benchmarks")])
        row[1].append(r.repeat)
    out = []
    for row in rows.values():
        fallbacks = ", ".join(f"{k}: {n}" for k, n in row[4].items()) or "none"
        out.append([row[0], " ".join(map(str, sorted(row[1]))), row[2], row[3], fallbacks, row[5]])
    return out


def _why(record: Record) -> str:
    """The reason a run did not succeed, short enough for a table cell."""
    mismatch = record.placement.summary if (
        record.placement and record.status == "placement-mismatch") else None
    notes = [n for n in record.notes if not n.startswith(DEVIATION)]  # of the campaign, not the run
    text = record.parse_error or mismatch or (notes or [""])[-1]
    text = " ".join(str(text).split())
    return text if len(text) <= 160 else text[:157] + "..."
