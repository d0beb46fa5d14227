"""A stack an order of magnitude slower than the others of its campaign, with what its records
hold about its transport: the finding a report must not leave to the reader (e.g. MPICH at 79 s
against Open MPI at 0.29 s per 10,000 halo exchanges).

For every result measured with more than one stack under otherwise equal parameters (benchmark,
row, figure of merit), each stack's median over the repeats is set against the best stack's; a
stack whose median factor over all such results is at least :data:`FACTOR` is named, with its
worst results, and with the transport evidence of its records: flavour and launcher, the
transport variables set (UCX, libfabric, Open MPI's pml/btl/mtl, MPICH's and Intel MPI's), what
UCX confirmed or why it could not (``ucx``), the collective components the MPI reported
(``components_used``), oversubscription and the placement check.

A simulated stack (:mod:`commstack.simulated`) is set only against stacks simulated on its own
platform, never against measured ones, and is named ``(simulated)``."""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from commstack.benchmarks import registry
from commstack.report.load import Samples
from commstack.simulated import marked, platform
from commstack.store.record import Record

FACTOR = 10.0
SHOWN = 3  # worst results named per stack
_TRANSPORT = re.compile(r"^(UCX_|FI_|OMPI_MCA_(pml|btl|mtl|osc|coll)|I_MPI_(FABRICS|OFI|SHM)|"
                        r"MPIR_CVAR_(CH4|NETMOD|OFI|UCX)|MPICH_|GASNET_)")


def factors(samples: Samples, simulated: Optional[Dict[str, str]] = None
            ) -> Dict[str, List[Tuple[float, str]]]:
    """Per stack: (its median / the best stack's, what was measured) for every result that more
    than one stack measured (rates inverted, so a factor > 1 is always slower); ``simulated``:
    the platform of each simulated stack (set only against stacks of its own kind)."""
    found = _factors(samples, simulated)
    return {stack: [(x, found.what(i)) for x, i in zip(fs, at)]
            for stack, (fs, at) in found.by_stack.items()}


@dataclass
class _Found:
    """Each stack's factors and, for each, where to describe it from (:meth:`what`): per factor
    its result, median and the best stack's (NumPy arrays); a result's benchmark, row and
    figure are decoded only for the factors a section names."""

    by_stack: Dict[str, Tuple[List[float], List[int]]]  # factors, and their positions
    result: Any = None  # per factor: its result's code (benchmark, row, figure)
    median: Any = None
    best: Any = None
    decode: Callable[[int], Tuple[object, Tuple[str, ...], tuple, str]] = lambda code: (
        None, (), (), "")

    def what(self, i: int) -> str:
        benchmark, names, keys, metric = self.decode(int(self.result[i]))
        m, best = float(self.median[i]), float(self.best[i])
        what = f"{benchmark} " + " ".join(f"{n}={k}" for n, k in zip(names, keys)) + f" {metric}"
        return f"{what}: {m:.4g} against {best:.4g}"


def _factors(samples: Samples, simulated: Optional[Dict[str, str]] = None) -> _Found:
    """:func:`factors` with NumPy: the samples grouped by (benchmark, the other parameters, the
    stack's kind, row keys, figure) and stack, each group's median as
    :func:`statistics.median` gives it; the texts are made only for the results a section
    names."""
    import numpy as np

    from commstack.sample_codes import renumber

    points: Dict[str, Tuple[int, int]] = {}  # per point: (its parameters but the stack, stack)
    bases: Dict[Tuple[object, str], int] = {}
    stacks: Dict[str, int] = {}
    for pid, (params, benchmark, _) in samples.points.items():
        stack = params.get("stack")
        if stack is None:
            continue
        rest = json.dumps({k: v for k, v in params.items() if k != "stack"}, sort_keys=True,
                          default=str)
        kind = (simulated or {}).get(str(stack))  # a simulated stack: its platform's group
        points[pid] = (bases.setdefault((benchmark, rest, kind), len(bases)),
                       stacks.setdefault(str(stack), len(stacks)))
    empty = _Found({})
    if not points or len(stacks) < 2:
        return empty
    # Per sample: its point's (parameters but the stack, stack), its row and figure, as codes
    # (the samples' own, :mod:`commstack.sample_codes`, numbered again among those kept).
    coded = samples.coded()
    where = {pid: i for i, pid in enumerate(points)}
    at_name = np.array([where.get(pid, -1) for pid in coded.point_names], dtype=np.int64)
    # (Each array of millions of samples is let go once used: they set this report's peak.)
    at_point = at_name[coded.point]
    kept = np.flatnonzero(at_point >= 0)
    if not len(kept):
        return empty
    point_codes = np.asarray(list(points.values()), dtype=np.int64).reshape(len(points), 2)
    at_point = at_point[kept]
    base, stack = point_codes[at_point, 0], point_codes[at_point, 1]
    del at_point
    row, row_was = renumber(coded.names[kept].astype(np.int64) * len(coded.keys)
                             + coded.key[kept])
    rows = [(coded.names_seen[c // len(coded.keys)], coded.keys[c % len(coded.keys)])
            for c in row_was.tolist()]
    metric, metric_was = renumber(coded.metric[kept])
    metric_names = [coded.metric_names[c] for c in metric_was.tolist()]
    code = (base * len(rows) + row) * len(metric_names) + metric
    del base, row, metric
    groups, group = np.unique(code, return_inverse=True)
    del code
    group = group.reshape(-1)
    values = coded.value[kept]
    del kept
    order = np.lexsort((values, stack, group))
    g, s, v = group[order], stack[order], values[order]
    del order, group, stack, values
    starts = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (s[1:] != s[:-1])])
    counts = np.diff(np.r_[starts, len(v)])
    low, high = v[starts + (counts - 1) // 2], v[starts + counts // 2]
    median = np.where(counts % 2 == 1, low, (low + high) / 2)  # statistics.median's
    block_group, block_stack = g[starts], s[starts]
    # Per result (a group of blocks, one per stack): the best stack's median; results that
    # more than one stack measured count.
    first = np.flatnonzero(np.r_[True, block_group[1:] != block_group[:-1]])
    per_group = np.diff(np.r_[first, len(block_group)])
    lower_of = np.array([registry.lower_is_better(m) for m in metric_names], dtype=bool)
    lower = np.repeat(lower_of[groups[block_group[first]] % len(metric_names)], per_group)
    best = np.repeat(np.where(lower[first], np.fmin.reduceat(median, first),
                              np.fmax.reduceat(median, first)), per_group)
    shared = np.repeat(per_group >= 2, per_group) & (best > 0) & (median > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(lower, median / best, best / median)[shared]
    result = groups[block_group][shared]
    stack_of = block_stack[shared]
    stack_names = list(stacks)
    by_stack: Dict[str, Tuple[List[float], List[int]]] = {}
    seen, first_at = np.unique(stack_of, return_index=True)
    for st in seen[np.argsort(first_at)].tolist():  # stacks in the order they first count
        at = np.flatnonzero(stack_of == st)
        by_stack[stack_names[st]] = (factor[at].tolist(), at.tolist())
    base_keys = list(bases)

    def decode(c: int) -> Tuple[object, Tuple[str, ...], tuple, str]:
        metric_name = metric_names[c % len(metric_names)]
        c //= len(metric_names)
        row_names, row_keys = rows[c % len(rows)]
        return base_keys[c // len(rows)][0], row_names, row_keys, metric_name

    return _Found(by_stack, result, median[shared], best[shared], decode)


def evidence(records: Sequence[Record]) -> List[str]:
    """What a stack's records hold about the transport it ran over."""
    out = []
    flavours = sorted({str(r.flavour) for r in records if r.flavour})
    launchers = sorted({str(r.stack_info.launcher) for r in records if r.stack_info.launcher})
    if flavours or launchers:
        out.append(f"flavour {', '.join(flavours) or 'unknown'}, launcher "
                   f"{', '.join(launchers) or 'unknown'}")
    env = sorted({f"{k}={v}" for r in records for k, v in r.env.items() if _TRANSPORT.match(k)})
    out.append("transport variables set: " + (", ".join(env) if env else "none"))
    ucx = [r.ucx for r in records if r.ucx]
    used = sorted({u.uses_ucx for u in ucx if u.uses_ucx})
    why = sorted({u.unchecked_reason for u in ucx if u.unchecked_reason})
    if used:
        out.append("UCX: " + "; ".join(used))
    elif why:
        out.append("UCX: " + "; ".join(why))
    components = sorted({f"{c}: {'/'.join(v)}" for r in records if r.components_used
                         for c, v in (r.components_used.get("collectives") or {}).items()})
    if components:
        out.append("collective components reported: " + ", ".join(components))
    over = sum(1 for r in records if r.oversubscribed)
    if over:
        out.append(f"{over} of {len(records)} runs oversubscribed (more processes than cores)")
    verdicts = sorted({r.placement.verdict for r in records if r.placement})
    if verdicts:
        out.append("placement check: " + ", ".join(verdicts))
    return out


def section(samples: Samples, records: Sequence[Record]) -> List[str]:
    simulated = {str(r.stack): platform(r.simulation) for r in records if r.simulation}
    found = _factors(samples, simulated)
    slow = {s: f for s, f in found.by_stack.items()
            if f[0] and statistics.median(f[0]) >= FACTOR}
    if not slow:
        return []
    out = ["", "## A stack an order of magnitude slower", ""]
    for stack, (xs, at) in sorted(slow.items()):
        median = statistics.median(xs)
        fs = xs
        # The worst SHOWN, ties ordered by their texts (as sorting every (factor, text) would).
        edge = sorted(xs, reverse=True)[:SHOWN][-1]
        worst = sorted(((x, found.what(i)) for x, i in zip(xs, at) if x >= edge),
                       reverse=True)[:SHOWN]
        out.append(f"- **{marked(stack, simulated.get(stack))}**: {median:.0f}x the best stack "
                   f"(median over {len(fs)} results "
                   + ("simulated by more than one stack on its platform" if stack in simulated
                      else "measured by more than one stack") + "); worst: "
                   + "; ".join(f"{x:.0f}x ({what})" for x, what in worst) + ".")
        for line in evidence([r for r in records if r.stack == stack and r.ok]):
            out.append(f"  - {line}")
    out += ["", "A factor this large is rarely the algorithm: check the transport the stack "
            "really used (above: what its records hold; a stack given UCX variables with no "
            "evidence that it used UCX may have fallen back to another transport)."]
    return out
