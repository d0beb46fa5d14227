"""Is this the machine a machine.yaml describes? (verify.this_machine: any one marker matches)."""

from __future__ import annotations

import os
import re
import socket
from typing import Any, Dict, List, Tuple

from commstack.machine.check import probes
from commstack.machine.check.result import Unreadable
from commstack.machine.check.tools import read


def cpu_model() -> str:
    for line in read("/proc/cpuinfo").splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    raise Unreadable("no model name in /proc/cpuinfo")


def this_machine(markers: Dict[str, Any]) -> Tuple[bool, str]:
    """(True, which marker matched) or (False, what was found instead of each marker)."""
    if not markers:
        return True, "machine.yaml declares no verify.this_machine: any host is taken for it"
    seen: List[str] = []
    if "slurm_cluster" in markers:
        try:
            name, how = probes.slurm_cluster()
            if name == markers["slurm_cluster"]:
                return True, f"Slurm cluster {name} ({how})"
            seen.append(f"Slurm cluster is {name}, not {markers['slurm_cluster']} ({how})")
        except Unreadable as exc:
            seen.append(f"no Slurm cluster name ({exc})")
    if "hostname" in markers:
        names = {socket.gethostname(), socket.getfqdn()}
        if any(re.search(markers["hostname"], n) for n in names):
            return True, f"host name {sorted(names)[0]} matches {markers['hostname']}"
        seen.append(f"host name {' / '.join(sorted(names))} does not match {markers['hostname']}")
    if "cpu_model" in markers:
        try:
            model = cpu_model()
            if re.search(markers["cpu_model"], model):
                return True, f"CPU {model} matches {markers['cpu_model']}"
            seen.append(f"CPU {model!r} does not match {markers['cpu_model']}")
        except Unreadable as exc:
            seen.append(str(exc))
    for name, value in (markers.get("env") or {}).items():
        if os.environ.get(name) == str(value):
            return True, f"${name}={value}"
        seen.append(f"${name} is {os.environ.get(name)!r}, not {value!r}")
    return False, "; ".join(seen)
