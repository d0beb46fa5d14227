"""Pivot aggregated results into tables: message size x parameter value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import pandas as pd

from commstack.aggregate import ROW_KEYS

# Parameters that never label a line (constant by construction or not a knob).
_NOT_LABELS = {"point_id", "metric", "lower_is_better", "n", "trimmed_mean", "median", "min",
               "max", *ROW_KEYS}


@dataclass
class Section:
    """One table/plot: a benchmark at one process count (and mode)."""

    title: str
    slug: str
    metric: str
    table: pd.DataFrame  # index: bytes (or label), columns: parameter labels


def varying_parameters(summary: pd.DataFrame) -> List[str]:
    """Parameters whose values differ between points: these label the lines and columns."""
    params = [c for c in summary.columns if c not in _NOT_LABELS]
    return [c for c in params if summary[c].astype(str).nunique() > 1]


def label_column(summary: pd.DataFrame, names: Sequence[str]) -> pd.Series:
    if not names:
        return pd.Series(["(all)"] * len(summary), index=summary.index)
    return summary[list(names)].astype(str).apply(
        lambda row: ", ".join(f"{k}={v}" for k, v in zip(names, row)), axis=1
    )


def sections(summary: pd.DataFrame) -> List[Section]:
    if summary.empty:
        return []
    group_keys = [k for k in ("benchmark", "np", "mode", "group") if k in summary.columns]
    out: List[Section] = []
    grouped = summary.groupby(group_keys, dropna=False, sort=True) if group_keys else [((), summary)]
    for key, part in grouped:
        # Lines are labelled by what varies within this table only.
        part = part.assign(label=label_column(part, varying_parameters(part)))
        key = key if isinstance(key, tuple) else (key,)
        named = {k: v for k, v in zip(group_keys, key) if not _missing(v)}
        title = " ".join(_title_part(k, v) for k, v in named.items()) or "results"
        slug = "_".join(_slug(k, v) for k, v in named.items()) or "results"
        metric = str(part["metric"].iloc[0])
        index = "bytes" if "bytes" in part.columns and part["bytes"].notna().any() else None
        if index:
            table = part.pivot_table(index=index, columns="label", values="trimmed_mean",
                                     aggfunc="first")
            table.index = table.index.astype(int)
        else:
            table = part.set_index("label")[["trimmed_mean", "median", "min", "max", "n"]]
        out.append(Section(title, slug, metric, table.sort_index()))
    return out


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


def to_markdown(table: pd.DataFrame, digits: int = 5) -> str:
    """A GitHub-flavoured Markdown table with `digits` significant digits."""
    index_name = table.index.name or ""
    header = [index_name] + [str(c) for c in table.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for idx, row in table.iterrows():
        cells = [str(idx)] + [_fmt(v, digits) for v in row.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(value: Optional[float], digits: int) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "NaN"
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return str(value)
    return f"{value:.{digits}g}"


def units(metric: str) -> str:
    return {"t_avg_us": "t_avg [usec]", "t_us": "t [usec]", "t_ovrl_us": "t_ovrl [usec]",
            "t_pure_us": "t_pure [usec]", "mbytes_per_s": "Mbytes/sec",
            "mean_s": "mean exchange time [s]"}.get(metric, metric)


def by_stack_summary(records: List[Dict[str, object]]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for rec in records:
        counts[str(rec.get("status"))] = counts.get(str(rec.get("status")), 0) + 1
    return counts
