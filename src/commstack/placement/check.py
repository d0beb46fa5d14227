"""Check the binding a run reported against the placement it asked for.

Rules, per node (ranks in the order of their global rank):
* every rank is bound, and to fewer than all of the node's processors;
* without oversubscription no two ranks share a core, and a node holds ranks_per_node ranks;
* with more than one NUMA domain and rank per node: each rank sits in one NUMA domain, and
  - block: each domain's ranks are consecutive, and a domain is full (its cores / the cores a
    rank takes) before the next one gets a rank;
  - cyclic: any D consecutive ranks are in D different domains (D: domains, or ranks if fewer);
* with a machine's CPU map (machine.yaml mapping.<m>.cpu_map) instead: each rank on the core of
  its CPU in the map, by its index on the node (the study's exact placement, e.g. an even split
  over sockets that the block rule above would reject).
A contradiction makes the run's status ``placement-mismatch``. Where the topology cannot tell
block from cyclic (one NUMA domain, one rank per node, no topology, oversubscribed) the binding
is still checked and the verdict says "not verifiable" with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple

from commstack.benchmarks.base import ParseError
from commstack.placement.model import Binding, Expected
from commstack.placement.reports import LABELS, OLD_HYDRA_NOTE, PARSERS
from commstack.placement.topology import Topology, load_topology

VERIFIED = "verified"
CONTRADICTS = "contradicts"
NOT_VERIFIABLE = "not verifiable"
NOT_REPORTED = "not reported"
NOT_CHECKED = "not checked"
MISMATCH_STATUS = "placement-mismatch"


def verify(expected: Expected, output: str, topology: Optional[Topology]) -> dict:
    """The record's ``placement``: the parsed binding of every rank and the verdict."""
    result = {"mapping": expected.mapping, "verdict": NOT_REPORTED, "reasons": [], "checked": [],
              "source": None, "numa_domains": len(topology.numa) if topology else None,
              "ranks": [], "notes": []}
    if not expected.reports:
        return _done(result, NOT_REPORTED, ["this launch asks for no binding report"])
    said: List[str] = []
    for name in expected.reports:
        try:
            bindings, notes = PARSERS[name](output)
        except ParseError as exc:  # a value no machine has (rank 10^22): not read, not checked
            return _done(result, NOT_VERIFIABLE, [f"the {LABELS[name]} cannot be read: {exc}"])
        if bindings:
            break
        said += notes
    else:
        wanted = " or ".join(LABELS[n] for n in expected.reports)
        return _done(result, NOT_REPORTED, [f"no {wanted} in the run's output", *said])
    result["source"], result["notes"] = LABELS[name], notes
    if expected.hosts is not None:
        return _simulated(result, expected, bindings)
    nodes, limits = _nodes(bindings, topology)
    result["ranks"] = [r for ranks in nodes.values() for r in ranks]
    if not expected.mapping:
        return _done(result, NOT_CHECKED, ["no mapping requested"] + limits)
    contradictions = [OLD_HYDRA_NOTE] if OLD_HYDRA_NOTE in notes else []
    reported = len(result["ranks"])
    if reported < expected.nodes * expected.ranks_per_node:
        limits.append(f"the report names {reported} of {expected.nodes * expected.ranks_per_node}"
                      " ranks")
    contradictions += _node_order(nodes, expected)
    by_map = expected.cpus is not None and not expected.oversubscribed
    for where, ranks in nodes.items():
        contradictions += _binding(where, ranks, expected, topology)
        if not contradictions:
            problem, limit = (_cpu_map(where, ranks, expected.cpus or (), topology,
                                       expected.cpu_span) if by_map
                              else _numa_order(where, ranks, expected, topology))
            contradictions += problem
            if limit and limit not in limits:
                limits.append(limit)
    if contradictions:
        return _done(result, CONTRADICTS, contradictions)
    result["checked"] = ["every rank is bound to part of its node"] + (
        [] if expected.oversubscribed else ["no two ranks of a node share a core",
                                            f"{expected.ranks_per_node} rank(s) per node"]) + (
        [f"ranks {expected.node_order} over nodes"] if expected.node_order and len(nodes) > 1
        else [])
    if limits:
        return _done(result, NOT_VERIFIABLE, limits)
    if by_map:
        within = (f", holding at most {expected.cpu_span} cores from it"
                  if expected.cpu_span > 1 else "")
        return _done(result, VERIFIED, [f"{expected.mapping}: every rank on its CPU of the "
                                        f"machine's map ({', '.join(map(str, expected.cpus or ()))})"
                                        f"{within}"])
    domains = len(topology.numa) if topology else 0
    return _done(result, VERIFIED, [f"{expected.mapping} over {domains} NUMA domains"])


def _simulated(result: dict, expected: Expected, bindings: List[Binding]) -> dict:
    """A simulated launch: every rank on the simulated host its host file names (the host file
    realises the mapping over the simulated nodes' NUMA domains; commstack.flavours.smpi_platform)."""
    hosts = expected.hosts or ()
    reported = {b.rank: b.host for b in bindings if b.rank is not None}
    result["ranks"] = [{"rank": r, "host": h} for r, h in sorted(reported.items())]
    result["numa_domains"] = len({h for h in hosts})
    for rank, host in sorted(reported.items()):
        if rank >= len(hosts):
            return _done(result, CONTRADICTS, [f"rank {rank} reported; the launch has "
                                               f"{len(hosts)} ranks"])
        if host != hosts[rank]:
            return _done(result, CONTRADICTS, [f"rank {rank} on simulated host {host}; the host "
                                               f"file puts it on {hosts[rank]}"])
    if len(reported) < len(hosts):
        return _done(result, NOT_VERIFIABLE, [f"the rank map names {len(reported)} of "
                                              f"{len(hosts)} ranks"])
    nodes = len({h.rsplit("-", 1)[0] for h in hosts})
    result["checked"] = [f"{expected.ranks_per_node} rank(s) per simulated node, nodes filled "
                         "in order", "every rank on its host of the host file"]
    what = f"{expected.mapping} over" if expected.mapping else "no mapping asked; ranks over"
    return _done(result, VERIFIED, [f"{what} {result['numa_domains']} simulated NUMA domain "
                                    f"host(s) of {nodes} simulated node(s), as SMPI's rank map "
                                    "shows"])


def record_placement(expected: Optional[Expected], output: str, topology_xml: Path
                     ) -> Optional[dict]:
    """The record's ``placement`` for a run whose output is ``output``, with the topology saved
    at ``topology_xml`` (a session's topology.xml); None for a command without expectations."""
    if expected is None:
        return None
    return verify(expected, output, load_topology(topology_xml))


def _done(result: dict, verdict: str, reasons: List[str]) -> dict:
    result["verdict"], result["reasons"] = verdict, reasons
    result["summary"] = f"{verdict}: {'; '.join(reasons)}" if reasons else verdict
    return result


def _nodes(bindings: List[Binding], topology: Optional[Topology]
           ) -> Tuple[Dict[str, List[dict]], List[str]]:
    """Rank entries grouped by node, each group in local order; limits met on the way."""
    limits: List[str] = []
    groups: Dict[str, List[Tuple[int, dict]]] = {}
    for b in bindings:
        cpus = b.cpus
        if cpus is None and (b.logical_pus is not None or b.logical_cores is not None):
            if topology is None:
                limits.append("the report names logical processors and no topology maps them")
            elif b.logical_pus is not None:
                cpus = topology.cpus_of_logical_pus(b.logical_pus)
            else:
                cpus = topology.cpus_of_logical_cores(b.logical_cores or ())
        entry = {"rank": b.rank, "host": b.host, "local": b.local, "bound": b.bound,
                 "node": (b.node or 0) + 1 if b.host is None else None,
                 "cpus": sorted(cpus) if cpus is not None else None,
                 "cores": topology.cores_of(cpus) if topology and cpus else None,
                 "numa": topology.numa_of(cpus) if topology and cpus else None}
        where = b.host if b.host is not None else f"node {(b.node or 0) + 1}"
        order = b.local if b.local is not None else (b.rank if b.rank is not None else 0)
        groups.setdefault(where, []).append((order, entry))
    nodes = {}
    for where, items in groups.items():
        ranks = [e for _, e in sorted(items, key=lambda item: (item[0], item[1]["rank"] or 0))]
        for i, entry in enumerate(ranks):
            entry["local"] = i if entry["local"] is None else entry["local"]
        nodes[where] = ranks
    return nodes, sorted(set(limits))


def _name(entry: dict) -> str:
    return f"rank {entry['rank']}" if entry["rank"] is not None else f"process {entry['local']}"


def _node_order(nodes: Dict[str, List[dict]], expected: Expected) -> List[str]:
    """srun's --distribution=<block|cyclic>:...: consecutive ranks on one node, or round-robin."""
    if expected.node_order not in ("block", "cyclic") or len(nodes) < 2:
        return []
    host_of = {e["rank"]: where for where, ranks in nodes.items() for e in ranks
               if e["rank"] is not None}
    if len(host_of) < 2:
        return []
    for where, ranks in nodes.items():
        own = sorted(e["rank"] for e in ranks if e["rank"] is not None)
        if expected.node_order == "block" and own and own != list(range(own[0], own[-1] + 1)):
            return [f"block over nodes: {where} holds ranks {', '.join(map(str, own))}, which are "
                    "not consecutive"]
    if expected.node_order == "cyclic":
        for rank in sorted(host_of):
            if rank + 1 in host_of and host_of[rank] == host_of[rank + 1]:
                return [f"cyclic over nodes: ranks {rank} and {rank + 1} are both on "
                        f"{host_of[rank]}"]
    return []


def _binding(where: str, ranks: List[dict], expected: Expected,
             topology: Optional[Topology]) -> List[str]:
    problems: List[str] = []
    whole_node = topology.all_cpus if topology and len(topology.cores) > 1 else None
    if whole_node is not None and (expected.cpus_per_rank or 0) >= len(whole_node):
        whole_node = None  # --cpus-per-task gives each rank the whole node: binding to it is right
    for entry in ranks:
        if not entry["bound"]:
            problems.append(f"{_name(entry)} on {where} is not bound")
        elif whole_node is not None and entry["cpus"] is not None \
                and set(entry["cpus"]) >= whole_node:
            problems.append(f"{_name(entry)} on {where} is bound to every processor of the node")
    if expected.oversubscribed:
        return problems
    if len(ranks) > expected.ranks_per_node:
        problems.append(f"{where} holds {len(ranks)} ranks; ranks_per_node is "
                        f"{expected.ranks_per_node}")
    for i, a in enumerate(ranks):
        for b in ranks[i + 1:]:
            shared = _shared(a, b)
            if shared:
                problems.append(f"{_name(a)} and {_name(b)} on {where} share {shared}")
    return problems


def _shared(a: dict, b: dict) -> Optional[str]:
    if a["cores"] is not None and b["cores"] is not None:
        common = sorted(set(a["cores"]) & set(b["cores"]))
        return f"core {', '.join(map(str, common))}" if common else None
    if a["cpus"] is not None and b["cpus"] is not None:
        common = sorted(set(a["cpus"]) & set(b["cpus"]))
        return f"processor {', '.join(map(str, common))}" if common else None
    return None


def _numa_order(where: str, ranks: List[dict], expected: Expected,
                topology: Optional[Topology]) -> Tuple[List[str], Optional[str]]:
    """(contradictions, why block and cyclic cannot be told apart here)."""
    if topology is None:
        return [], "no topology of the node to find NUMA domains"
    if len(topology.numa) == 1:
        return [], "one NUMA domain"
    if expected.ranks_per_node == 1 or len(ranks) == 1:
        return [], "one rank per node"
    if expected.oversubscribed:
        return [], "oversubscribed"
    seq: List[int] = []
    for entry in ranks:
        if not entry["numa"]:
            return [], f"{_name(entry)} on {where} has no NUMA domain in the topology"
        if len(entry["numa"]) > 1:
            return [f"{_name(entry)} on {where} spans NUMA domains "
                    f"{', '.join(map(str, entry['numa']))}"], None
        seq.append(entry["numa"][0])
    if expected.mapping == "block":
        return _block(where, ranks, seq, topology), None
    return _cyclic(where, ranks, seq, topology), None


def _cpu_map(where: str, ranks: List[dict], cpus: Tuple[int, ...], topology: Optional[Topology],
             span: int = 1) -> Tuple[List[str], Optional[str]]:
    """Each rank on the core of its CPU in the machine's map (machine.yaml mapping.<m>.cpu_map),
    or with ``span`` > 1 on that core and at most the span - 1 cores after it (Open MPI's
    ppr:N:socket:pe=M): (contradictions, why it cannot be compared)."""
    for entry in ranks:
        i = entry["local"]
        if i is None or i >= len(cpus):
            return [f"{_name(entry)} on {where} has no CPU in the map"], None
        if entry["cpus"] is None:
            return [], f"{_name(entry)} on {where}: the report's processors are not mapped"
        want = cpus[i]
        if topology is not None:
            wanted, got = topology.cores_of([want]), entry["cores"] or []
            if not wanted:
                return [], f"CPU {want} of the map is not in the node's topology"
            share = set(topology.cores_of(list(range(want, want + span)))) if span > 1 else None
            if share is not None and wanted[0] in got and set(got) <= share:
                continue
            if got != wanted:
                return [f"{_name(entry)} on {where} is on CPU(s) "
                        f"{', '.join(map(str, entry['cpus']))}; the map puts it on CPU {want}"], None
        elif want not in entry["cpus"]:
            return [f"{_name(entry)} on {where} is on CPU(s) "
                    f"{', '.join(map(str, entry['cpus']))}; the map puts it on CPU {want}"], None
    return [], None if topology is not None else "no topology: cores not compared, only CPUs"


def _block(where: str, ranks: List[dict], seq: List[int], topology: Topology) -> List[str]:
    runs: List[Tuple[int, int, int]] = []  # domain, first index, length
    for i, domain in enumerate(seq):
        if runs and runs[-1][0] == domain:
            runs[-1] = (domain, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((domain, i, 1))
    problems: List[str] = []
    seen = set()
    for domain, first, _length in runs:
        if domain in seen:
            problems.append(f"block: {_name(ranks[first])} on {where} is back in NUMA domain "
                            f"{domain} after other domains: {_sequence(seq)}")
        seen.add(domain)
    for domain, first, length in runs[:-1]:
        per_rank = max(1, len(ranks[first]["cores"] or [1]))
        room = topology.cores_in_numa(domain) // per_rank
        if length < room:
            problems.append(f"block: NUMA domain {domain} on {where} holds {length} rank(s) with "
                            f"room for {room} before the next domain gets one: {_sequence(seq)}")
            break
    return problems[:2]


def _cyclic(where: str, ranks: List[dict], seq: List[int], topology: Topology) -> List[str]:
    width = min(len(seq), len(topology.numa))
    for start in range(0, len(seq) - width + 1):
        window = seq[start:start + width]
        if len(set(window)) < width:
            return [f"cyclic: {width} consecutive ranks from {_name(ranks[start])} on {where} use "
                    f"{len(set(window))} of {len(topology.numa)} NUMA domains: {_sequence(seq)}"]
    return []


def _sequence(seq: List[int]) -> str:
    return "domains by rank " + " ".join(map(str, seq))
