"""Pivot aggregated results into tables: message size x parameter value, every cell the median
with its 95 % interval over the repeats and their count (:mod:`commstack.stats`).

Rows that are not clean runs never share a table with clean ones: rows of oversubscribed jobs
(more processes than cores) and IMB's sub-runs (a smaller process count measured inside a larger
job, whose other ranks still hold cores) get tables of their own, titled as such, and every cell
of those carries its marker (:data:`commstack.report.numbers.MARKERS`).

A column of simulated numbers (the summary's ``simulated``: the platform a simulator ran) says so
after its label, ``stack=sim (simulated)`` (:data:`commstack.simulated.MARK`), in the table and in
the plot's legend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

import numpy as np
import pandas as pd

from commstack.aggregate import SUMMARY_FIELDS
from commstack.benchmarks import registry
from commstack.markdown_table import table
from commstack.report.numbers import Resolution, cell, unclean_markers
from commstack.simulated import MARK
from commstack.store.record import Record

# A section's plot: at most MAX_LINES lines (more are not read; the rest go to the heat map);
# with more settings, the BEST few plus the defaults (up to MAX_LINES in all).
MAX_LINES = 12
BEST = 8

# Parameters that never label a line (constant by construction or not a knob).
_NOT_LABELS = {*SUMMARY_FIELDS, *registry.all_row_keys(), "subrun_of", "label"}


@dataclass(frozen=True)
class Condition:
    """How clean the runs of a table are."""

    oversubscribed: bool = False
    subrun_of: int = 0  # the job size these rows are IMB sub-runs of (0: not a sub-run)

    @property
    def clean(self) -> bool:
        return not self.oversubscribed and not self.subrun_of

    def markers(self) -> List[str]:
        return unclean_markers(self.oversubscribed, bool(self.subrun_of))

    def describe(self) -> str:
        parts = []
        if self.subrun_of:
            parts.append(f"sub-runs inside {self.subrun_of}-rank jobs")
        if self.oversubscribed:
            parts.append("oversubscribed (more processes than cores)")
        return ", ".join(parts)

    def slug(self) -> str:
        return "".join(f"_{s}" for s, on in (("subrun", self.subrun_of),
                                              ("oversubscribed", self.oversubscribed)) if on)


@dataclass
class Section:
    """One table/plot: a benchmark at one process count (and mode) under one condition."""

    title: str
    slug: str
    metric: str
    mean: pd.DataFrame  # the median; index: bytes (or configuration), columns: parameter labels
    low: pd.DataFrame   # the 95 % interval of the median, same shape (NaN below six repeats)
    high: pd.DataFrame
    n: pd.DataFrame     # repeats that succeeded
    resolution: Resolution
    repeats: int        # the most repeats any row of the campaign has
    condition: Condition = Condition()

    @property
    def table(self) -> pd.DataFrame:
        return self.mean

    def cell(self, index: object, column: object) -> str:
        def at(frame: pd.DataFrame):
            value = frame.at[index, column]
            return None if pd.isna(value) else value

        n = at(self.n)
        return cell(at(self.mean), at(self.low), at(self.high), None if n is None else int(n),
                    self.resolution, self.repeats, self.condition.markers())


def varying_parameters(summary: pd.DataFrame) -> List[str]:
    """Parameters whose values differ between points: these label the lines and columns."""
    params = [c for c in summary.columns if c not in _NOT_LABELS]
    return [c for c in params if summary[c].astype(str).nunique() > 1]


def label_column(summary: pd.DataFrame, names: List[str]) -> pd.Series:
    if not names:
        return pd.Series(["(all)"] * len(summary), index=summary.index)
    label = None
    for name in names:
        part = f"{name}=" + summary[name].map(str)
        label = part if label is None else label + ", " + part
    return label


def simulated_labels(part: pd.DataFrame, labels: pd.Series) -> pd.Series:
    """The labels of the rows whose numbers are simulated (``simulated`` set) marked
    ``(simulated)``; the others as they are."""
    if "simulated" not in part.columns:
        return labels
    simulated = part["simulated"].notna() & (part["simulated"].astype(str) != "")
    if not simulated.any():
        return labels
    return labels.where(~simulated, labels.astype(str) + " " + MARK)


def _conditions(summary: pd.DataFrame) -> pd.DataFrame:
    over = summary.get("oversubscribed", pd.Series(False, index=summary.index))
    subrun = summary.get("subrun", pd.Series(False, index=summary.index))
    ranks = pd.to_numeric(summary.get("job_ranks", pd.Series(0, index=summary.index)),
                          errors="coerce")
    subrun = subrun.astype("boolean").fillna(False).astype(bool) & ranks.notna()
    return summary.assign(oversubscribed=over.astype("boolean").fillna(False).astype(bool),
                          subrun_of=ranks.where(subrun, 0).fillna(0).astype(int))


def resolutions(summary: pd.DataFrame) -> Dict[str, Resolution]:
    """Per metric: the printed resolution (the summary's ``quantum``) at the metric's values."""
    out = {}
    for metric, part in summary.groupby("metric"):
        quantum = float(part["quantum"].min()) if "quantum" in part else 0.0
        top = pd.to_numeric(part["max"], errors="coerce").abs().to_numpy(dtype=float)
        top = top[np.isfinite(top)]  # Resolution.of needs only the largest finite value
        out[str(metric)] = Resolution.of(quantum, [float(top.max())] if len(top) else [])
    return out


def sections(summary: pd.DataFrame) -> List[Section]:
    """Clean tables first, then the oversubscribed and sub-run ones (each titled as such)."""
    if summary.empty:
        return []
    summary = _conditions(summary)
    res = resolutions(summary)
    repeats = int(summary["n"].max())
    group_keys = [k for k in ("benchmark", "np", "mode", "group") if k in summary.columns]
    keys = group_keys + ["oversubscribed", "subrun_of"]
    out: List[Section] = []
    for key, part in summary.groupby(keys, dropna=False, sort=True):
        # Lines are labelled by what varies within this table only.
        part = part.assign(label=simulated_labels(part, label_column(part, varying_parameters(part))))
        named = {k: v for k, v in zip(group_keys, key) if not _missing(v)}
        condition = Condition(bool(key[-2]), int(key[-1]))
        title = " ".join(_title_part(k, v) for k, v in named.items()) or "results"
        slug = ("_".join(_slug(k, v) for k, v in named.items()) or "results") + condition.slug()
        if not condition.clean:
            title += f" — ⚠ {condition.describe()}"
        metric = str(part["metric"].iloc[0])
        frames = _pivot(part)
        out.append(Section(title, slug, metric, *frames, res[metric], repeats, condition))
    return sorted(out, key=lambda s: not s.condition.clean)  # stable: groupby order within


def _pivot(part: pd.DataFrame) -> List[pd.DataFrame]:
    columns = ("median", "ci_low", "ci_high", "n")
    if "bytes" in part.columns and part["bytes"].notna().any():
        rows = part[part["bytes"].notna()]
        wide = (rows.assign(bytes=rows["bytes"].astype(int))
                .drop_duplicates(["bytes", "label"])
                .set_index(["bytes", "label"])[list(columns)].astype(float).unstack("label"))
        labels = sorted(rows["label"].unique().tolist())
        frames = [wide[c].reindex(columns=labels) for c in columns]
        for frame in frames:
            frame.columns.name = "label"
    else:
        frames = [part.set_index("label")[[c]].rename(columns={c: "value"}) for c in columns]
        for frame in frames:
            frame.index.name = "configuration"
    return [f.sort_index() for f in frames]


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _title_part(key: str, value: object) -> str:
    if key == "np":
        return f"np={int(value)}"
    if key == "group":
        return f"group {int(value)}"
    return str(value)


def _slug(key: str, value: object) -> str:
    text = f"np{int(value)}" if key == "np" else str(value)
    return "".join(c if c.isalnum() or c in "-." else "-" for c in text).strip("-").lower()


def to_markdown(section: Section) -> str:
    """A GitHub-flavoured Markdown table; every cell ``median [95 % interval] (n)`` (see
    :func:`cell`)."""
    frame = section.mean
    header = [frame.index.name or ""] + [str(c) for c in frame.columns]
    mean, low, high, n = (f.reindex(index=frame.index, columns=frame.columns).to_numpy(
        dtype=float) for f in (section.mean, section.low, section.high, section.n))
    fmt = section.resolution.format_many
    texts = [fmt(a) for a in (mean, low, high)]
    markers = " ".join(section.condition.markers())
    rows = []
    for i, idx in enumerate(frame.index):
        row = [str(idx)]
        for j in range(mean.shape[1]):
            if mean[i, j] != mean[i, j]:
                row.append("–")
                continue
            text = texts[0][i][j]
            k = n[i, j]
            if low[i, j] == low[i, j]:
                text += f" [{texts[1][i][j]}–{texts[2][i][j]}]"
            if k == k:
                text += f" ({int(k)})"
            row.append(f"{text} {markers}" if markers else text)
        rows.append(row)
    return "\n".join(table(header, rows, align="l" + "r" * len(frame.columns)))


def units(metric: str) -> str:
    return registry.label(metric)


def by_stack_summary(records: List[Record]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for rec in records:
        counts[rec.status] = counts.get(rec.status, 0) + 1
    return counts
