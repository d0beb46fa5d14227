"""How much ReproMPI's process synchronisation moves a collective's time: for every stack and
setting measured with more than one ``proc_sync``, each method's per-call run-times against
those of ``MPI_Barrier`` (the way IMB and OSU start a call), call by call and size by size, and
the start skew (last process's start minus the first's, on the synchronised clock; ``-v``)
that shows how well each method lined the processes up. Verdicts: :mod:`commstack.stats`
(Mann-Whitney U, Holm-corrected over the section, 5 % threshold). A simulated stack
(:mod:`commstack.simulated`) is named ``(simulated)``."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from commstack import stats
from commstack.benchmarks import reprompi
from commstack.markdown_table import table
from commstack.simulated import marked
from commstack.store.record import Record

REFERENCE = "MPI_Barrier"
_METHOD_KEYS = {"proc_sync", "window_size", "wait_time"}
_SELECTING = {"calls", "msizes", "msize_interval", "nrep", "summary", "verbose", "shuffle_jobs",
              "stack", "nodes"}

Key = Tuple[str, str]  # (stack, other parameters as JSON)
Cell = Tuple[str, int]  # (call, bytes)


def applies(record: Record) -> bool:
    """The record is a ReproMPI run (this section reads their per-call samples)."""
    return record.benchmark == reprompi.NAME


def _gather(records: Sequence[Record], output: Callable[[Record], Optional[str]]):
    times: Dict[Key, Dict[str, Dict[Cell, List[float]]]] = defaultdict(lambda: defaultdict(dict))
    skews: Dict[Key, Dict[str, Dict[Cell, List[float]]]] = defaultdict(lambda: defaultdict(dict))
    for rec in records:
        if not applies(rec) or not rec.ok or rec.published:
            continue
        text = output(rec)
        try:
            found = reprompi.samples(text) if text else {}
        except ValueError:
            continue
        method = str(rec.params.get("proc_sync", REFERENCE))
        if rec.params.get("window_size") not in (None, ""):
            method += f" ({rec.params['window_size']} us)"
        other = {k: v for k, v in sorted(rec.params.items())
                 if k not in _METHOD_KEYS | _SELECTING}
        key = (rec.stack or "", json.dumps(other, default=str))
        for cell, s in found.items():
            times[key][method].setdefault(cell, []).extend(t * 1e6 for t in s.local)
            if s.start_skew:
                skews[key][method].setdefault(cell, []).extend(t * 1e6 for t in s.start_skew)
    return times, skews


def section(records: Sequence[Record], output: Callable[[Record], Optional[str]]) -> List[str]:
    times, skews = _gather(records, output)
    rows = []  # (stack, method, call, bytes, ref Center, Center, Shift, skew ref, skew method)
    for key, methods in times.items():
        ref = next((m for m in methods if m.startswith(REFERENCE)), None)
        if ref is None or len(methods) < 2:
            continue
        for method, cells in sorted(methods.items()):
            if method == ref:
                continue
            for cell in sorted(cells):
                a, b = methods[ref].get(cell), cells[cell]
                if not a or not b:
                    continue
                rows.append((key[0], method, cell, stats.describe(a), stats.describe(b),
                             stats.shift(a, b), _skew(skews[key][ref].get(cell)),
                             _skew(skews[key][method].get(cell))))
    if not rows:
        return []
    simulated = {r.stack or "" for r in records if r.simulation}
    rows = [(marked(r[0], r[0] in simulated), *r[1:]) for r in rows]
    calls = stats.verdicts([r[5] for r in rows], method="holm")
    out = ["", "## Process synchronisation (ReproMPI)", "",
           f"Per-call run-times of each synchronisation against {REFERENCE} (ratio > 1: the "
           f"method measures the call slower). Verdicts: {stats.rule_text(method='holm')}. "
           "Times in usec: median [95 % interval] (n calls); start skew: median over the calls "
           "of the last process's start minus the first's.", ""]
    summary: Dict[Tuple[str, str], Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r, verdict in zip(rows, calls):
        summary[(r[0], r[1])][verdict] += 1
    for (stack, method), counts in sorted(summary.items()):
        ratios = sorted(r[5].ratio for r in rows if r[0] == stack and r[1] == method)
        out.append(f"- {stack}, {method} vs {REFERENCE}: median ratio "
                   f"{stats.median(ratios):.2f} (range {ratios[0]:.2f}–{ratios[-1]:.2f}) over "
                   f"{len(ratios)} call/size cells; " + ", ".join(
                       f"{counts[v]} {v}" for v in (stats.WORSE, stats.BETTER, stats.SAME,
                                                    stats.UNTESTED) if counts[v]))
    out.append("")
    out += table(["stack", "method", "call", "bytes", REFERENCE, "method's", "ratio [interval]",
                  "verdict", "start skew (barrier / method)"],
                 [[r[0], r[1], r[2][0], r[2][1], _center(r[3]), _center(r[4]),
                   f"{r[5].ratio:.2f} [{r[5].low:.2f}–{r[5].high:.2f}]", verdict,
                   f"{r[6]} / {r[7]}"] for r, verdict in zip(rows, calls)], align="lllr")
    return out


def _center(c: stats.Center) -> str:
    if c.low is None:
        return f"{c.median:.3g} (n={c.n})"
    return f"{c.median:.3g} [{c.low:.3g}–{c.high:.3g}] (n={c.n})"


def _skew(values: Optional[List[float]]) -> str:
    return f"{stats.median(values):.3g}" if values else "–"
