"""A node's processors, cores and NUMA domains from hwloc's XML (lstopo --of xml).

hwloc 1.x and 2.x both give every object a ``cpuset`` of OS processor indices; document order
is hwloc's logical order, which Open MPI's reports use.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional


def parse_cpuset(text: str) -> FrozenSet[int]:
    """hwloc's bitmap string ("0x00000003", "0xffffffff,0x0000000f", "0x1,,,0x0") as indices."""
    value = 0
    for group in text.split(","):
        group = group.strip().lower()
        group = group[2:] if group.startswith("0x") else group
        value = (value << 32) | int(group or "0", 16)
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


@dataclass(frozen=True)
class Topology:
    pus: List[int]  # OS index of each processor, in logical order
    cores: List[FrozenSet[int]]  # OS processor indices of each core, in logical order
    numa: Dict[int, FrozenSet[int]]  # NUMA domain (OS index) -> its OS processor indices

    @property
    def all_cpus(self) -> FrozenSet[int]:
        return frozenset(self.pus)

    def cpus_of_logical_pus(self, logical: Iterable[int]) -> Optional[FrozenSet[int]]:
        try:
            return frozenset(self.pus[i] for i in logical)
        except IndexError:
            return None

    def cpus_of_logical_cores(self, logical: Iterable[int]) -> Optional[FrozenSet[int]]:
        try:
            return frozenset(cpu for i in logical for cpu in self.cores[i])
        except IndexError:
            return None

    def cores_of(self, cpus: Iterable[int]) -> List[int]:
        """Logical indices of the cores holding any of these processors."""
        wanted = set(cpus)
        return [i for i, core in enumerate(self.cores) if core & wanted]

    def numa_of(self, cpus: Iterable[int]) -> List[int]:
        wanted = set(cpus)
        return sorted(n for n, domain in self.numa.items() if domain & wanted)

    def cores_in_numa(self, domain: int) -> int:
        return len(self.cores_of(self.numa[domain]))


class TopologyError(ValueError):
    """Not an hwloc topology."""


def parse_topology(xml_text: str) -> Topology:
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise TopologyError(f"not hwloc XML: {exc}") from None
    pus: List[int] = []
    cores: List[FrozenSet[int]] = []
    numa: Dict[int, FrozenSet[int]] = {}
    for obj in root.iter("object"):
        kind, cpuset = obj.get("type"), obj.get("cpuset")
        if kind == "PU":
            pus.append(int(obj.get("os_index", len(pus))))
        elif kind == "Core" and cpuset:
            cores.append(parse_cpuset(cpuset))
        elif kind == "NUMANode" and cpuset:
            numa[int(obj.get("os_index", len(numa)))] = parse_cpuset(cpuset)
    if not pus:
        raise TopologyError("no processors (PU objects) in the topology")
    if not cores:  # hwloc shows no Core objects on some virtual machines: one core per PU
        cores = [frozenset([pu]) for pu in pus]
    if not numa:
        numa = {0: frozenset(pus)}
    return Topology(pus, cores, numa)


@functools.lru_cache(maxsize=8)
def load_topology(path: Path) -> Optional[Topology]:
    """The topology saved at ``path`` (a session's topology.xml), or None when absent/unusable."""
    try:
        return parse_topology(Path(path).read_text())
    except (OSError, TopologyError):
        return None
