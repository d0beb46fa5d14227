"""A figure over time: the chosen points of every campaign in a results store, one value per
campaign (the median of its repeats with a 95 % interval, ``commstack.stats.describe``), in the
order of the runs' dates, with changes of the stack (another MPI version, Spack hash or flavour in
the sessions' provenance) marked where they happen.

A simulated run's value (``commstack.simulated``: SimGrid SMPI) is never one of a measured
series: the platform it was simulated on (``simulated``) is part of what tells points apart, its
series' label says ``(simulated)``, its entries' origin names the platform, and its plot is drawn
dotted with square markers, titled as simulated.

Used by ``commstack history`` (table and plot) and ``commstack dashboard``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from commstack.errors import CampaignError
from commstack.simulated import WORD as SIMULATED
from commstack.simulated import marked
from commstack.stats import Center, describe

# Columns of the results view a point is told apart by (besides its parameters).
ROW_COLUMNS = ("machine", "stack", "benchmark", "test", "np", "bytes", "mode", "row_key",
               "metric", "simulated")
IDENTITY = ("flavour", "mpi_version", "spack_hash")
# Columns of the query --where can name (the others are parameters).
_ROW_KEYS = frozenset(ROW_COLUMNS) | {"unit", "lower_is_better", "campaign", "start", "value",
                                      "origin", "unclean"} | frozenset(IDENTITY)  # what a stack change is told by
_QUERY = """
    SELECT machine, stack, benchmark, test, np, bytes, mode, row_key, metric, simulated, unit,
           lower_is_better, params, campaign, start, value, flavour, mpi_version, spack_hash,
           origin, coalesce(oversubscribed, false) OR coalesce(placement = 'contradicts', false)
           AS unclean
    FROM results
    WHERE status = 'ok' AND coalesce(row_status, 'ok') = 'ok' AND value IS NOT NULL
"""


def summarize(samples: Sequence[float], lower_is_better: bool = True) -> Center:
    """The one summary of a point's repeats (a rate's median is averaged harmonically)."""
    return describe(samples, rate=not lower_is_better)


@dataclass
class Entry:
    """One campaign's value of one point."""

    campaign: str
    date: Optional[float]  # the earliest start of its runs (Unix time); None when not recorded
    samples: List[float]
    identity: Dict[str, Optional[str]]
    origin: str
    center: Optional[Center] = None
    change: Optional[str] = None  # what changed in the stack since the entry before
    # a run oversubscribed its cores, or its placement contradicted the mapping asked for
    unclean: bool = False
    simulated: Optional[str] = None  # the platform a simulator ran; None: measured

    @property
    def shown_origin(self) -> str:
        """``measured``, ``imported``, or ``simulated on <platform>``."""
        return f"{SIMULATED} on {self.simulated}" if self.simulated else self.origin


@dataclass
class Series:
    """One point over time."""

    key: Dict[str, Any]  # row columns and parameters
    unit: Optional[str]
    lower_is_better: bool
    entries: List[Entry] = field(default_factory=list)

    @property
    def simulated(self) -> Optional[str]:
        """The platform a simulator ran this point's values on; None: measured."""
        return self.key.get("simulated")

    def label(self, varying: Sequence[str]) -> str:
        shown = [f"{k}={self.key[k]}" for k in varying
                 if self.key.get(k) is not None and k != "simulated"]
        return marked(", ".join(shown) or "all", self.simulated)


def parse_where(items: Sequence[str]) -> Dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise CampaignError(f"--where {item!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        out[key] = value
    return out


def parse_date(text: str) -> float:
    """A date (YYYY-MM-DD, or ISO with a time; UTC unless a zone is given) as Unix time."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise CampaignError(f"{text!r}: expected a date as YYYY-MM-DD or YYYY-MM-DDTHH:MM") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def shown_date(when: Optional[float]) -> str:
    if when is None:
        return "not recorded"
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M")


def history(con, where: Dict[str, str], since: Optional[float] = None,
            until: Optional[float] = None, ignore: Sequence[str] = ()) -> List[Series]:
    """Every point matching ``where`` (row columns or parameters; a point without the key does
    not match) over the campaigns of the store ``con`` (``commstack.store.results.open_store``),
    entries dated from ``since`` (inclusive) to ``until`` (exclusive); undated entries (published
    tables) are kept only without ``since``/``until``."""
    result = con.execute(_QUERY)
    names = [d[0] for d in result.description]
    groups: Dict[Tuple, Series] = {}
    entries: Dict[Tuple, Dict[str, Entry]] = {}
    # 10,000s of rows share a few hundred parameter sets (stored as sorted-key JSON): each is
    # decoded, matched and keyed once.
    by_text: Dict[str, Tuple[Dict[str, Any], bool, str]] = {}
    for values in result.fetchall():
        row = dict(zip(names, values))
        text = row["params"] or "{}"
        known = by_text.get(text)
        if known is None:
            params = json.loads(text)
            kept = {k: v for k, v in params.items() if k not in ignore}
            known = by_text[text] = (params, _matches_params(params, where),
                                     json.dumps(kept, sort_keys=True, default=str))
        params, wanted, params_key = known
        if not wanted or not _matches_row(row, where):
            continue
        start = row["start"]
        if (since is not None or until is not None) and start is None:
            continue
        if since is not None and start < since or until is not None and start >= until:
            continue
        key = (tuple(row[c] for c in ROW_COLUMNS), params_key)
        series = groups.get(key)
        if series is None:
            key_items = {c: row[c] for c in ROW_COLUMNS}
            key_items.update({k: v for k, v in params.items() if k not in ignore})
            series = groups[key] = Series(key_items, row["unit"], bool(row["lower_is_better"]))
            entries[key] = {}
        entry = entries[key].get(row["campaign"])
        if entry is None:
            entry = entries[key][row["campaign"]] = Entry(
                row["campaign"], start, [], {c: row[c] for c in IDENTITY}, row["origin"],
                simulated=row["simulated"])
        entry.samples.append(float(row["value"]))
        entry.unclean = entry.unclean or bool(row["unclean"])
        if start is not None and (entry.date is None or start < entry.date):
            entry.date = start
        for c in IDENTITY:  # a campaign that mixes identities shows them all
            if row[c] is not None and row[c] != entry.identity[c] and \
                    row[c] not in str(entry.identity[c] or "").split(" | "):
                entry.identity[c] = " | ".join(filter(None, [entry.identity[c], row[c]]))
    out = []
    for key, series in groups.items():
        series.entries = sorted(entries[key].values(),
                                key=lambda e: (e.date is None, e.date or 0.0, e.campaign))
        for entry in series.entries:
            entry.center = summarize(entry.samples, series.lower_is_better)
        mark_changes(series.entries)
        out.append(series)
    return sorted(out, key=lambda s: [str(s.key.get(c)) for c in ROW_COLUMNS]
                  + [json.dumps(s.key, sort_keys=True, default=str)])


def _matches_row(row: Dict[str, Any], where: Dict[str, str]) -> bool:
    for k, v in where.items():
        if k in row and k != "params" and (row[k] is None or str(row[k]) != v):
            return False
    return True


def _matches_params(params: Dict[str, Any], where: Dict[str, str]) -> bool:
    """The parameter conditions (a key that is a row column is the row's to match)."""
    for k, v in where.items():
        if k in _ROW_KEYS:
            continue
        if k not in params or str(params[k]) != v:
            return False
    return True


def mark_changes(entries: List[Entry]) -> None:
    """Set ``change`` on each entry whose stack differs from the entry before it."""
    before: Optional[Entry] = None
    for entry in entries:
        if before is not None:
            changed = [f"{c} {before.identity[c] or '?'} -> {entry.identity[c] or '?'}"
                       for c in IDENTITY if before.identity[c] != entry.identity[c]
                       and (before.identity[c] or entry.identity[c])]
            entry.change = "; ".join(changed) or None
        before = entry


def varying(series: List[Series]) -> List[str]:
    """The keys that tell the series apart."""
    keys: List[str] = []
    for s in series:
        keys += [k for k in s.key if k not in keys]
    return [k for k in keys if len({repr(s.key.get(k)) for s in series}) > 1]


def table_rows(series: List[Series]) -> Tuple[List[str], List[List[Any]]]:
    """One row per series and campaign: the history as a table."""
    names = varying(series)
    headers = ["point", "date (UTC)", "campaign", "n", "median", "low", "high", "unit",
               "origin", "stack change"]
    rows = []
    for s in series:
        label = s.label(names)
        for e in s.entries:
            c = e.center
            rows.append([label, shown_date(e.date), e.campaign, c.n, _num(c.median),
                         _num(c.low), _num(c.high), s.unit or "", e.shown_origin, e.change or ""])
    return headers, rows


def _num(value: Optional[float]) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return float(f"{value:.4g}")


def plot(series: List[Series], path: Path, limit: int = 12) -> int:
    """One panel per series (up to ``limit``): the medians over time with their intervals as
    error bars and each stack change as a dashed line; returns the number of panels drawn."""
    from commstack.optional import require

    require("matplotlib", "report", "commstack history's plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dated = [s for s in series if any(e.date is not None for e in s.entries)][:limit]
    if not dated:
        raise CampaignError("no dated value to plot (published tables carry no run date)")
    names = varying(series)
    fig, axes = plt.subplots(len(dated), 1, figsize=(8, 2.6 * len(dated)), squeeze=False)
    for ax, s in zip(axes[:, 0], dated):
        points = [e for e in s.entries if e.date is not None]
        when = [datetime.fromtimestamp(e.date, timezone.utc) for e in points]
        med = [e.center.median for e in points]
        low = [e.center.median - e.center.low if e.center.low is not None else 0 for e in points]
        high = [e.center.high - e.center.median if e.center.high is not None else 0
                for e in points]
        ax.errorbar(when, med, yerr=[low, high], fmt="s:" if s.simulated else "o-", capsize=3,
                    lw=1, label=s.label(names))
        for e, t in zip(points, when):
            if e.change:
                ax.axvline(t, color="tab:red", ls="--", lw=1)
                ax.annotate("stack change", (t, ax.get_ylim()[1]), color="tab:red", fontsize=7,
                            va="top", rotation=90)
        ax.set_title(s.label(names) + (f"\n{SIMULATED} on {s.simulated}, not measured (dotted)"
                                       if s.simulated else ""), fontsize=9,
                     color="tab:purple" if s.simulated else "black")
        ax.set_ylabel(f"{s.key.get('metric')} [{s.unit or ''}]", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[-1, 0].set_xlabel("run date (UTC); bars: 95 % interval of the median")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return len(dated)
