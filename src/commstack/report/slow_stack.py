"""A stack an order of magnitude slower than the others of its campaign, with what its records
hold about its transport: the finding a report must not leave to the reader (e.g. MPICH at 79 s
against Open MPI at 0.29 s per 10,000 halo exchanges).

For every result measured with more than one stack under otherwise equal parameters (benchmark,
row, figure of merit), each stack's median over the repeats is set against the best stack's; a
stack whose median factor over all such results is at least :data:`FACTOR` is named, with its
worst results, and with the transport evidence of its records: flavour and launcher, the
transport variables set (UCX, libfabric, Open MPI's pml/btl/mtl, MPICH's and Intel MPI's), what
UCX confirmed or why it could not (``ucx``), the collective components the MPI reported
(``components_used``), oversubscription and the placement check."""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from typing import Dict, List, Sequence, Tuple

from commstack.benchmarks import registry
from commstack.report.load import Samples
from commstack.store.record import Record

FACTOR = 10.0
SHOWN = 3  # worst results named per stack
_TRANSPORT = re.compile(r"^(UCX_|FI_|OMPI_MCA_(pml|btl|mtl|osc|coll)|I_MPI_(FABRICS|OFI|SHM)|"
                        r"MPIR_CVAR_(CH4|NETMOD|OFI|UCX)|MPICH_|GASNET_)")


def factors(samples: Samples) -> Dict[str, List[Tuple[float, str]]]:
    """Per stack: (its median / the best stack's, what was measured) for every result that more
    than one stack measured (rates inverted, so a factor > 1 is always slower)."""
    groups: Dict[Tuple, Dict[str, List[float]]] = defaultdict(lambda: defaultdict(list))
    rests: Dict[str, str] = {}  # per point: its other parameters, as sorted JSON
    for pid, names, keys, metric, value in zip(samples.point_ids, samples.key_names,
                                               samples.keys, samples.metrics, samples.values):
        params, benchmark, _ = samples.points[pid]
        stack = params.get("stack")
        if stack is None:
            continue
        rest = rests.get(pid)
        if rest is None:
            rest = rests[pid] = json.dumps({k: v for k, v in params.items() if k != "stack"},
                                           sort_keys=True, default=str)
        groups[(benchmark, rest, names, keys, metric)][str(stack)].append(value)
    out: Dict[str, List[Tuple[float, str]]] = defaultdict(list)
    for (benchmark, _rest, names, keys, metric), by_stack in groups.items():
        if len(by_stack) < 2:
            continue
        lower = registry.lower_is_better(metric)
        medians = {s: statistics.median(v) for s, v in by_stack.items()}
        best = min(medians.values()) if lower else max(medians.values())
        what = f"{benchmark} " + " ".join(f"{n}={k}" for n, k in zip(names, keys)) + f" {metric}"
        for stack, m in medians.items():
            if best <= 0 or m <= 0:
                continue
            factor = m / best if lower else best / m
            out[stack].append((factor, f"{what}: {m:.4g} against {best:.4g}"))
    return out


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
    found = factors(samples)
    slow = {s: f for s, f in found.items() if f and statistics.median(x for x, _ in f) >= FACTOR}
    if not slow:
        return []
    out = ["", "## A stack an order of magnitude slower", ""]
    for stack, fs in sorted(slow.items()):
        median = statistics.median(x for x, _ in fs)
        worst = sorted(fs, reverse=True)[:SHOWN]
        out.append(f"- **{stack}**: {median:.0f}x the best stack (median over {len(fs)} results "
                   "measured by more than one stack); worst: "
                   + "; ".join(f"{x:.0f}x ({what})" for x, what in worst) + ".")
        for line in evidence([r for r in records if r.stack == stack and r.ok]):
            out.append(f"  - {line}")
    out += ["", "A factor this large is rarely the algorithm: check the transport the stack "
            "really used (above: what its records hold; a stack given UCX variables with no "
            "evidence that it used UCX may have fallen back to another transport)."]
    return out
