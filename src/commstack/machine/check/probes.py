"""One small probe per family of facts, each reading the machine itself.

A probe returns what it measured and how (the command or file), or raises Unreadable saying
why the fact cannot be read here. Probes are cached: one `lstopo` per process, not one per fact.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Tuple

from commstack.machine.check.result import Unreadable
from commstack.machine.check.tools import output, read
from commstack.placement.topology import TopologyError, parse_topology

Layout = Dict[str, int]  # sockets, cores_per_socket, threads_per_core, numa_per_socket, l3_per_numa


def in_allocation() -> bool:
    return bool(os.environ.get("SLURM_JOB_ID"))


@functools.lru_cache(maxsize=1)
def hwloc_layout() -> Tuple[Layout, str]:
    """The node's layout from `lstopo --of xml`, disallowed processors included (a Slurm step
    sees its own CPUs only; the node has them all)."""
    try:
        xml = output(["lstopo", "--of", "xml", "--disallowed"])
        how = "lstopo --of xml --disallowed"
    except Unreadable:
        xml = output(["lstopo", "--of", "xml"])
        how = "lstopo --of xml"
    try:
        topology = parse_topology(xml)
        root = ET.fromstring(xml)
    except (TopologyError, ET.ParseError) as exc:
        raise Unreadable(f"{how}: {exc}") from None
    kinds = [(o.get("type"), o.get("depth")) for o in root.iter("object")]
    sockets = sum(k in ("Package", "Socket") for k, _ in kinds) or 1
    l3 = sum(k == "L3Cache" or (k == "Cache" and d == "3") for k, d in kinds)
    layout = {"sockets": sockets, "cores_per_socket": len(topology.cores) // sockets,
              "threads_per_core": len(topology.pus) // len(topology.cores),
              "numa_per_socket": max(1, len(topology.numa) // sockets)}
    if l3:
        layout["l3_per_numa"] = max(1, l3 // len(topology.numa))
    return layout, how


@functools.lru_cache(maxsize=1)
def lscpu_layout() -> Tuple[Layout, str]:
    text = output(["lscpu"], timeout=10)
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    try:
        sockets = int(fields["Socket(s)"])
        layout = {"sockets": sockets, "cores_per_socket": int(fields["Core(s) per socket"]),
                  "threads_per_core": int(fields["Thread(s) per core"])}
        if fields.get("NUMA node(s)"):
            layout["numa_per_socket"] = max(1, int(fields["NUMA node(s)"]) // sockets)
    except (KeyError, ValueError) as exc:
        raise Unreadable(f"lscpu: no {exc}") from None
    return layout, "lscpu"


@functools.lru_cache(maxsize=4)
def slurm_node_layout(node: str) -> Tuple[Layout, str]:
    """Slurm's record of a node (its slurm.conf NodeName line as slurmctld knows it)."""
    text = output(["scontrol", "show", "node", "--oneliner", node] if node
                  else ["scontrol", "show", "node", "--oneliner"])
    first = text.strip().splitlines()[0] if text.strip() else ""
    fields = dict(f.split("=", 1) for f in first.split() if "=" in f)
    try:
        return ({"sockets": int(fields["Sockets"]),
                 "cores_per_socket": int(fields["CoresPerSocket"]),
                 "threads_per_core": int(fields["ThreadsPerCore"])},
                f"scontrol show node {fields.get('NodeName', node)} (Slurm's record, not read "
                "on the node: run inside an allocation for hwloc)")
    except KeyError as exc:
        raise Unreadable(f"scontrol show node: no {exc}") from None


def node_layout(scheduler: str) -> Tuple[Layout, str]:
    """The node's layout as read here: hwloc (lscpu when hwloc is absent) on a node of the
    machine; on a Slurm login node (no allocation), Slurm's record of a compute node, since
    the login node's hardware may differ."""
    if scheduler == "slurm" and not in_allocation():
        return slurm_node_layout(os.environ.get("SLURMD_NODENAME", ""))
    try:
        return hwloc_layout()
    except Unreadable as first:
        try:
            return lscpu_layout()
        except Unreadable as second:
            raise Unreadable(f"{first}; {second}") from None


@functools.lru_cache(maxsize=1)
def srun_mpi_plugins() -> Tuple[List[str], str]:
    """`srun --mpi=list`: the plugin types and the specific versions (pmix_v4, ...)."""
    text = output(["srun", "--mpi=list"], stderr_too=True)
    plugins: List[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("specific") and ":" in line:
            plugins += [p.strip() for p in line.split(":", 1)[1].split(",") if p.strip()]
        elif re.fullmatch(r"(srun: )?[a-z][a-z0-9_]*", line):
            plugins.append(line.split()[-1])
    if not plugins:
        raise Unreadable("srun --mpi=list listed no plugins")
    return plugins, "srun --mpi=list"


@functools.lru_cache(maxsize=1)
def slurm_version() -> Tuple[str, str]:
    text = output(["srun", "--version"])
    match = re.search(r"(\d+\.\d+\.\d+)", text)
    if not match:
        raise Unreadable(f"srun --version: no version in {text.strip()[:80]!r}")
    return match.group(1), "srun --version"


@functools.lru_cache(maxsize=1)
def slurm_partitions() -> Tuple[List[str], str]:
    text = output(["sinfo", "-h", "-o", "%R"])
    return sorted(set(text.split())), "sinfo -h -o %R"


def slurm_cluster() -> Tuple[str, str]:
    """The Slurm cluster name: the job's, the controller's, else slurm.conf's."""
    if os.environ.get("SLURM_CLUSTER_NAME"):
        return os.environ["SLURM_CLUSTER_NAME"], "$SLURM_CLUSTER_NAME"
    try:
        text = output(["scontrol", "show", "config"], timeout=10)
        how = "scontrol show config"
    except Unreadable as exc:
        conf = os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")
        try:
            text, how = read(conf), conf
        except Unreadable:
            raise Unreadable(f"{exc}; no {conf}") from None
    match = re.search(r"^\s*ClusterName\s*=\s*(\S+)", text, re.MULTILINE | re.IGNORECASE)
    if not match:
        raise Unreadable(f"{how}: no ClusterName")
    return match.group(1), how


@functools.lru_cache(maxsize=1)
def rdma_devices() -> Tuple[List[str], str]:
    """RDMA devices: ibv_devinfo's (InfiniBand, RoCE) and the kernel's (also HPE cxi)."""
    found: List[str] = []
    hows: List[str] = []
    reasons: List[str] = []
    try:
        found += _ibv_list(output(["ibv_devinfo", "-l"]))
        hows.append("ibv_devinfo -l")
    except Unreadable as exc:
        reasons.append(str(exc))
    for sysfs in (Path("/sys/class/infiniband"), Path("/sys/class/cxi")):
        if sysfs.is_dir():
            found += [p.name for p in sysfs.iterdir()]
            hows.append(str(sysfs))
    if not hows:
        raise Unreadable("; ".join(reasons + ["no /sys/class/infiniband or /sys/class/cxi"]))
    return sorted(set(found)), ", ".join(hows)


def _ibv_list(text: str) -> List[str]:
    # "2 HCAs found:\n\tmlx5_0\n\tmlx5_1"
    return sorted(line.strip() for line in text.splitlines()[1:] if line.strip())


@functools.lru_cache(maxsize=1)
def ofi_providers() -> Tuple[List[str], str]:
    text = output(["fi_info", "-l"])
    return sorted({line.strip().rstrip(":") for line in text.splitlines()
                   if line.strip().endswith(":")}), "fi_info -l"


@functools.lru_cache(maxsize=1)
def kernel_modules() -> Tuple[List[str], str]:
    try:
        text, how = read("/proc/modules"), "/proc/modules"
    except Unreadable as exc:
        try:
            text, how = output(["lsmod"]), "lsmod"
        except Unreadable:
            raise Unreadable(f"{exc} (a container hides the host's modules); lsmod failed too"
                             ) from None
    return sorted(line.split()[0] for line in text.splitlines()[1 if how == "lsmod" else 0:]
                  if line.split()), how


@functools.lru_cache(maxsize=1)
def shared_libraries() -> Tuple[Dict[str, str], str]:
    program = shutil.which("ldconfig") or "/sbin/ldconfig"
    text = output([program, "-p"])
    found: Dict[str, str] = {}
    for line in text.splitlines()[1:]:
        match = re.match(r"\s*(\S+) .*=> (\S+)", line)
        if match:
            found.setdefault(match.group(1), match.group(2))
    return found, "ldconfig -p"


def os_release() -> Tuple[str, str]:
    fields = dict(line.split("=", 1) for line in read("/etc/os-release").splitlines()
                  if "=" in line)
    return fields.get("PRETTY_NAME", "").strip('"'), "/etc/os-release"


def environment_module(name: str) -> Tuple[bool, str]:
    """Whether an environment module (Lmod or Tcl modules) ``name`` is on MODULEPATH."""
    paths = [p for p in os.environ.get("MODULEPATH", "").split(":") if p]
    if not paths:
        raise Unreadable("no module system here (MODULEPATH unset)")
    for folder in paths:
        for candidate in (Path(folder) / name, Path(folder) / f"{name}.lua"):
            if candidate.exists():
                return True, str(candidate)
        if (Path(folder) / name).is_dir():  # a default version: module load <name>
            return True, str(Path(folder) / name)
    return False, f"MODULEPATH ({len(paths)} folders)"


# /etc/os-release ID -> Spack's os= name stem (Spack names an OS by its ID and major version).
SPACK_OS_NAMES = {"rhel": "rhel", "rocky": "rocky", "almalinux": "almalinux", "ol": "ol",
                  "centos": "centos", "sles": "sles", "sle_hpc": "sles", "debian": "debian",
                  "fedora": "fedora", "opensuse-leap": "opensuse"}


@functools.lru_cache(maxsize=1)
def spack_os() -> Tuple[str, str]:
    """Spack's os= name of this host (rhel8, sles15, debian12), from /etc/os-release."""
    fields = dict(line.split("=", 1) for line in read("/etc/os-release").splitlines()
                  if "=" in line)
    ident = fields.get("ID", "").strip('"')
    version = fields.get("VERSION_ID", "").strip('"').split(".")[0]
    if ident not in SPACK_OS_NAMES or not version.isdigit():
        raise Unreadable(f"/etc/os-release: ID={ident!r} VERSION_ID={version!r} has no Spack "
                         "os= name commstack knows")
    return f"{SPACK_OS_NAMES[ident]}{version}", "/etc/os-release (ID, VERSION_ID)"


@functools.lru_cache(maxsize=1)
def glibc_version() -> Tuple[str, str]:
    text = output(["getconf", "GNU_LIBC_VERSION"], timeout=10)
    match = re.search(r"glibc (\d+\.\d+)", text)
    if not match:
        raise Unreadable(f"getconf GNU_LIBC_VERSION: no glibc version in {text.strip()[:60]!r}")
    return match.group(1), "getconf GNU_LIBC_VERSION"
