"""The SimGrid platform of a machine: its ``simulation:`` facts (machine.yaml) made into the
platform file and host file ``smpirun`` reads (the flavour ``smpi``).

What the file models (docs/explanation/simulation.md):

* one host per NUMA domain (``node<n>-numa<d>``, as many cores as the domain has), the hosts of
  a node in one ``<cluster>`` zone: two ranks of one domain talk over its loopback
  (``node.latency``, ``node.bandwidth``); ranks of two domains over the domains' private links
  (``node.numa_latency``, half on each side, ``node.numa_bandwidth``);
* the node's NIC as a link between the node's zone and the network (``network.bandwidth``);
  two nodes on one switch are ``network.latency`` apart, one way, whatever domains they use
  (the NIC links take that latency less the private links' part);
* the network between the nodes (``network.topology``): ``cluster`` (one non-blocking switch),
  ``fat_tree`` (leaf switches of ``nodes_per_leaf`` nodes, each linked to every one of
  ``spines`` spine switches; a route goes up to spine ``destination leaf mod spines``),
  ``dragonfly`` (groups of ``switches_per_group`` switches, all linked to each other, each with
  ``nodes_per_switch`` nodes; ``global_links`` links between two groups, on switch ``other
  group mod switches_per_group`` of each) and ``dragonfly_plus`` (groups that are two-level fat
  trees of ``leaves_per_group`` leaves and ``spines_per_group`` spines; ``global_links`` between
  spine ``other group mod spines_per_group`` of each group); every switch-to-switch link has
  ``network.bandwidth`` and ``network.hop_latency``; a pair of nodes always takes the same
  global link (``(a + b) mod global_links``): minimal routing, never adaptive.

A run on N nodes uses the machine's nodes 0 .. N-1, filling switches in order, as an allocation
of consecutive nodes does. Routes are written out (``routing="Full"``): the file is the whole
model, kept with the run. Every number is a machine fact with its source; a VERIFY value runs
with its placeholder and the run's record names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import quoteattr

from commstack.flavours.base import FlavourError

TOPOLOGIES = {
    "cluster": (),
    "fat_tree": ("nodes_per_leaf", "spines"),
    "dragonfly": ("nodes_per_switch", "switches_per_group", "global_links"),
    "dragonfly_plus": ("nodes_per_leaf", "leaves_per_group", "spines_per_group", "global_links"),
}
OPTIONAL_SIZES = {"global_links": 1}  # links between two groups, each its own
VERIFY = "VERIFY"
# Host speed: computation is not simulated (smpi/simulate-computation:no), any value does.
HOST_SPEED = "1Gf"

_BANDWIDTH = re.compile(r"^(?P<n>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<p>Ki|Mi|Gi|Ti|k|M|G|T)?(?P<u>Bps|bps)$")
_TIME = re.compile(r"^(?P<n>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<u>s|ms|us|ns|ps)$")
_PREFIX = {None: 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40}
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}
_FACTORS = re.compile(r"^\d+:\d+(?:\.\d+)?(?:;\d+:\d+(?:\.\d+)?)*$")


def bandwidth(text: str, where: str) -> float:
    """A SimGrid bandwidth ("12.5GBps", "100Gbps": bits) in bytes per second."""
    m = _BANDWIDTH.match(str(text).strip())
    if not m:
        raise FlavourError(f"{where}: {text!r} is not a bandwidth such as 12.5GBps or 100Gbps")
    value = float(m["n"]) * _PREFIX[m["p"]] / (8.0 if m["u"] == "bps" else 1.0)
    if not 0 < value < 1e15:
        raise FlavourError(f"{where}: {text!r} is not a bandwidth a link can have")
    return value


def seconds(text: str, where: str) -> float:
    """A SimGrid time ("1.5us") in seconds."""
    m = _TIME.match(str(text).strip())
    if not m:
        raise FlavourError(f"{where}: {text!r} is not a time such as 1.5us or 200ns")
    value = float(m["n"]) * _SECONDS[m["u"]]
    if not 0 <= value < 1.0:
        raise FlavourError(f"{where}: {text!r} is not a link latency (0 to 1 s)")
    return value


@dataclass(frozen=True)
class Fact:
    """One number of the model as machine.yaml gives it."""

    name: str  # e.g. network.latency
    text: str  # the value used (a VERIFY fact's placeholder)
    source: str
    placeholder: bool = False


@dataclass(frozen=True)
class Model:
    """A machine's simulation facts, read and checked."""

    machine: str
    node_type: Optional[str]
    sockets: int
    numa_per_socket: int
    cores_per_socket: int
    topology: str
    shape: Tuple[Tuple[str, int], ...]  # the topology's sizes, e.g. (("nodes_per_leaf", 20),)
    facts: Tuple[Fact, ...]
    lat_factor: Optional[str] = None  # smpi/lat-factor, None: 1 at every size
    bw_factor: Optional[str] = None
    sources: Tuple[Tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def domains(self) -> int:
        return self.sockets * self.numa_per_socket

    @property
    def cores_per_domain(self) -> int:
        return self.cores_per_socket // self.numa_per_socket

    @property
    def cores_per_node(self) -> int:
        return self.sockets * self.cores_per_socket

    def value(self, name: str) -> str:
        return next(f.text for f in self.facts if f.name == name)

    def size(self, name: str) -> int:
        return dict(self.shape)[name]

    @property
    def placeholders(self) -> List[str]:
        return [f"{f.name} {f.text}" for f in self.facts if f.placeholder]

    @property
    def label(self) -> str:
        """"bm-optimized3-36 (node type nps1)": what a record names as its platform."""
        return self.machine + (f" (node type {self.node_type})" if self.node_type else "")


_NETWORK = ("bandwidth", "latency")
_NODE = ("latency", "bandwidth", "numa_latency", "numa_bandwidth")


def model(facts: Dict[str, Any]) -> Model:
    """The simulation model of a machine's facts (one node type's), or FlavourError naming the
    missing or wrong key."""
    name = str(facts.get("machine", "?"))
    sim = facts.get("simulation")
    if not isinstance(sim, dict):
        which = f" for node type {facts['node_type']!r}" if facts.get("node_type") else ""
        raise FlavourError(f"machine {name!r} has no simulation: facts{which} in its machine.yaml "
                           "(the network and node numbers SimGrid needs; "
                           "docs/reference/simulation.md)")
    node = facts.get("node") or {}
    sources = {str(k): str((v or {}).get("cites", "")) for k, v in (sim.get("sources") or {}).items()}
    network, inside = sim.get("network") or {}, sim.get("node") or {}
    topo = network.get("topology") or {}
    kind = str(topo.get("kind", ""))
    if kind not in TOPOLOGIES:
        raise FlavourError(f"machine {name!r}: simulation.network.topology.kind {kind!r} is not "
                           f"one of {', '.join(TOPOLOGIES)}")
    shape, out = [], []
    for key in TOPOLOGIES[kind]:
        if key not in topo and key in OPTIONAL_SIZES:
            shape.append((key, OPTIONAL_SIZES[key]))
            continue
        fact = _fact(name, f"network.topology.{key}", topo.get(key), sources)
        if not fact.text.isdigit() or not 0 < int(fact.text) < 1 << 20:
            raise FlavourError(f"machine {name!r}: simulation.network.topology.{key} must be a "
                               f"positive whole number for a {kind}")
        shape.append((key, int(fact.text)))
        out.append(fact)
    wanted = [(f"network.{k}", network) for k in _NETWORK] + [(f"node.{k}", inside) for k in _NODE]
    if kind != "cluster":
        wanted.append(("network.hop_latency", network))
    out += [_fact(name, key, table.get(key.split(".")[-1]), sources) for key, table in wanted]
    factors = sim.get("factors") or {}
    lat = _factor(name, "lat", factors.get("lat"), sources, out)
    bw = _factor(name, "bw", factors.get("bw"), sources, out)
    sockets, cores = int(node.get("sockets", 0)), int(node.get("cores_per_socket", 0))
    numa = int(node.get("numa_per_socket", 1))
    if sockets < 1 or cores < 1 or numa < 1 or cores % numa:
        raise FlavourError(f"machine {name!r}: node: sockets, cores_per_socket and "
                           "numa_per_socket must describe whole NUMA domains")
    made = Model(name, facts.get("node_type"), sockets, numa, cores, kind, tuple(shape),
                 tuple(out), lat, bw, tuple(sorted(sources.items())))
    _check_numbers(made)
    return made


def _fact(machine: str, key: str, declared: Any, sources: Dict[str, str]) -> Fact:
    where = f"machine {machine!r}: simulation.{key}"
    if not isinstance(declared, dict) or "value" not in declared:
        raise FlavourError(f"{where} is missing (a {{value, source}} pair, or value VERIFY with a "
                           "placeholder)")
    source = str(declared.get("source", ""))
    if source not in sources:
        raise FlavourError(f"{where}: source {source!r} is not a key of simulation.sources")
    text, placeholder = str(declared["value"]), False
    if text == VERIFY:
        if "placeholder" not in declared:
            raise FlavourError(f"{where}: a VERIFY value needs a placeholder to simulate with")
        text, placeholder = str(declared["placeholder"]), True
    return Fact(key, text, source, placeholder)


def _factor(machine: str, which: str, declared: Any, sources: Dict[str, str],
            out: List[Fact]) -> Optional[str]:
    if declared is None:
        return None
    fact = _fact(machine, f"factors.{which}", declared, sources)
    if not _FACTORS.match(fact.text.replace(" ", "")):
        raise FlavourError(f"machine {machine!r}: simulation.factors.{which}: {fact.text!r} is not "
                           "SMPI's size:factor;size:factor list")
    out.append(fact)
    return fact.text.replace(" ", "")


def _check_numbers(m: Model) -> None:
    for fact in m.facts:
        where = f"machine {m.machine!r}: simulation.{fact.name}"
        if fact.name.startswith(("factors.", "network.topology.")):
            continue
        if fact.name.endswith("bandwidth"):
            bandwidth(fact.text, where)
        else:
            seconds(fact.text, where)


# --- the platform file --------------------------------------------------------------------


def host(node: int, domain: int) -> str:
    return f"node{node}-numa{domain}"


def platform_xml(m: Model, nodes: int) -> str:
    """The platform of ``nodes`` nodes of machine ``m``."""
    if nodes < 1:
        raise FlavourError("a simulated run needs at least one node")
    numa_lat = seconds(m.value("node.numa_latency"), "node.numa_latency")
    net_lat = seconds(m.value("network.latency"), "network.latency")
    nic_lat = max(0.0, net_lat - numa_lat) / 2  # the private links carry numa_lat on the way
    lines = ['<?xml version="1.0"?>',
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">',
             f"<!-- {m.label}: written by commstack (flavours/smpi_platform.py) from its "
             "machine.yaml simulation: facts -->",
             '<zone id="machine" routing="Full">']
    for n in range(nodes):
        lines.append(
            f'  <cluster id="node{n}" prefix="node{n}-numa" suffix="" '
            f'radical="0-{m.domains - 1}" speed="{HOST_SPEED}" core="{m.cores_per_domain}" '
            f'bw={_bw(m.value("node.numa_bandwidth"))} lat={_s(numa_lat / 2)} '
            f'sharing_policy="SPLITDUPLEX" bb_bw="1000GBps" bb_lat="0s" '
            f'bb_sharing_policy="FATPIPE" loopback_bw={_bw(m.value("node.bandwidth"))} '
            f'loopback_lat={_s(seconds(m.value("node.latency"), "node.latency"))} '
            f'router_id="node{n}-nic"/>')
    net_bw = _bw(m.value("network.bandwidth"))
    for n in range(nodes):
        lines.append(f'  <link id="nic{n}" bandwidth={net_bw} latency={_s(nic_lat)} '
                     'sharing_policy="SPLITDUPLEX"/>')
    links, routes = _network(m, nodes)
    hop = _s(seconds(m.value("network.hop_latency"), "network.hop_latency")) if links else None
    for link in links:
        lines.append(f'  <link id="{link}" bandwidth={net_bw} latency={hop} '
                     'sharing_policy="SPLITDUPLEX"/>')
    for (a, b), path in routes.items():
        hops = "".join(f'<link_ctn id="{link}" direction="{way}"/>' for link, way in path)
        lines.append(f'  <zoneRoute src="node{a}" dst="node{b}" gw_src="node{a}-nic" '
                     f'gw_dst="node{b}-nic" symmetrical="NO">{hops}</zoneRoute>')
    lines += ["</zone>", "</platform>", ""]
    return "\n".join(lines)


def _bw(text: str) -> str:
    return quoteattr(f"{bandwidth(text, 'bandwidth'):.6g}Bps")


def _s(value: float) -> str:
    return quoteattr(f"{value:.6g}s")


Path_ = List[Tuple[str, str]]  # (link id, UP|DOWN)


def _network(m: Model, nodes: int) -> Tuple[List[str], Dict[Tuple[int, int], Path_]]:
    """The switch-to-switch links a run of ``nodes`` nodes uses and the route of every ordered
    pair of nodes (NIC links included)."""
    links: Dict[str, None] = {}
    routes: Dict[Tuple[int, int], Path_] = {}
    for a in range(nodes):
        for b in range(nodes):
            if a == b:
                continue
            middle = _switches(m, a, b)
            for link, _way in middle:
                links.setdefault(link)
            routes[(a, b)] = [(f"nic{a}", "UP"), *middle, (f"nic{b}", "DOWN")]
    return list(links), routes


def _switches(m: Model, a: int, b: int) -> Path_:
    """The links between node a's switch and node b's, in the direction a -> b."""
    if m.topology == "cluster":
        return []
    if m.topology == "fat_tree":
        per_leaf, spines = m.size("nodes_per_leaf"), m.size("spines")
        la, lb = a // per_leaf, b // per_leaf
        if la == lb:
            return []
        spine = lb % spines
        return [(f"leaf{la}-spine{spine}", "UP"), (f"leaf{lb}-spine{spine}", "DOWN")]
    if m.topology == "dragonfly":
        per_switch, per_group = m.size("nodes_per_switch"), m.size("switches_per_group")
        sa, sb = a // per_switch, b // per_switch
        ga, gb = sa // per_group, sb // per_group
        if sa == sb:
            return []
        if ga == gb:
            return [_local(ga, sa % per_group, sb % per_group)]
        out, ea, eb = [], gb % per_group, ga % per_group  # the global link's switch in ga, gb
        if sa % per_group != ea:
            out.append(_local(ga, sa % per_group, ea))
        out.append(_global(ga, gb, (a + b) % m.size("global_links")))
        if eb != sb % per_group:
            out.append(_local(gb, eb, sb % per_group))
        return out
    per_leaf, leaves, spines = (m.size("nodes_per_leaf"), m.size("leaves_per_group"),
                                m.size("spines_per_group"))
    la, lb = a // per_leaf, b // per_leaf
    ga, gb = la // leaves, lb // leaves
    if la == lb:
        return []
    if ga == gb:
        spine = (lb % leaves) % spines
        return [(f"g{ga}-leaf{la % leaves}-spine{spine}", "UP"),
                (f"g{gb}-leaf{lb % leaves}-spine{spine}", "DOWN")]
    sa, sb = gb % spines, ga % spines
    return [(f"g{ga}-leaf{la % leaves}-spine{sa}", "UP"),
            _global(ga, gb, (a + b) % m.size("global_links")),
            (f"g{gb}-leaf{lb % leaves}-spine{sb}", "DOWN")]


def _local(group: int, x: int, y: int) -> Tuple[str, str]:
    """The link between switches x and y of a dragonfly group, in the direction x -> y."""
    low, high = sorted((x, y))
    return (f"g{group}-sw{low}-sw{high}", "UP" if x == low else "DOWN")


def _global(x: int, y: int, k: int) -> Tuple[str, str]:
    """Global link ``k`` between groups x and y (a pair of nodes always takes the same one)."""
    low, high = sorted((x, y))
    return (f"global-g{low}-g{high}-{k}", "UP" if x == low else "DOWN")


# --- where the ranks go -----------------------------------------------------------------


def rank_hosts(m: Model, nodes: int, ranks_per_node: int, mapping: Optional[str],
               cpus: Optional[Sequence[int]] = None, oversubscribed: bool = False) -> List[str]:
    """Each rank's host, rank by rank: nodes filled one after the other (block over nodes);
    within a node the machine's CPU map (``cpus``: each local rank's CPU, domain by domain as
    commstack.placement.cpu_map numbers them) when it declares one for the mapping, else block
    (a domain filled before the next) or cyclic (round-robin over the domains). More ranks
    than the node's cores only when ``oversubscribed`` (SMPI runs them and models no sharing
    of cores: computation is not simulated)."""
    over = ranks_per_node > m.cores_per_node
    if ranks_per_node < 1 or (over and not oversubscribed):
        raise FlavourError(f"{ranks_per_node} ranks per node do not fit the simulated node's "
                           f"{m.cores_per_node} cores ({m.label}; oversubscribe: true to run "
                           "them anyway)")
    if cpus is not None and not over:
        domains = [int(c) // m.cores_per_domain for c in cpus]
    elif mapping == "cyclic":
        domains = [r % m.domains for r in range(ranks_per_node)]
    elif over:  # more ranks than cores: block splits them evenly over the domains
        domains = [r * m.domains // ranks_per_node for r in range(ranks_per_node)]
    else:  # block, and no mapping: consecutive ranks fill a domain first
        domains = [r // m.cores_per_domain for r in range(ranks_per_node)]
    if len(domains) != ranks_per_node or any(not 0 <= d < m.domains for d in domains):
        raise FlavourError(f"the CPU map of mapping {mapping!r} does not place {ranks_per_node} "
                           f"ranks on the simulated node's {m.domains} NUMA domains")
    return [host(n, d) for n in range(nodes) for d in domains]


def hostfile(hosts: Sequence[str]) -> str:
    """smpirun's host file: rank i runs on line i's host."""
    return "".join(f"{h}\n" for h in hosts)


def describe(m: Model, nodes: int) -> str:
    """One line for a record: which platform, and what of it is a placeholder."""
    shape = ", ".join(f"{k} {v}" for k, v in m.shape)
    text = (f"{m.label}: {nodes} node(s) of {m.domains} NUMA domain(s) x "
            f"{m.cores_per_domain} cores, {m.topology}{f' ({shape})' if shape else ''}, "
            f"network {m.value('network.bandwidth')}, {m.value('network.latency')}")
    if m.placeholders:
        text += "; placeholders (VERIFY): " + ", ".join(m.placeholders)
    return text
