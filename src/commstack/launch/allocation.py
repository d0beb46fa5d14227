"""The Slurm allocation this process runs in (SLURM_JOB_ID and its neighbours), and its deadline."""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import List, Optional

_TIME_LEFT = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


@dataclass
class Allocation:
    """The Slurm allocation this process runs in."""

    job_id: str
    nodes: List[str] = field(default_factory=list)
    partition: Optional[str] = None
    deadline: Optional[float] = None  # epoch seconds; None when unlimited or unknown
    cpus_per_node: Optional[int] = None  # the fewest CPUs the job holds on one of its nodes

    @classmethod
    def from_environment(cls) -> Optional["Allocation"]:
        job = os.environ.get("SLURM_JOB_ID")
        if not job:
            return None
        nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
        return cls(job, expand_nodelist(nodelist), os.environ.get("SLURM_JOB_PARTITION"),
                   _deadline(job), fewest_cpus(os.environ.get("SLURM_JOB_CPUS_PER_NODE", "")))

    def remaining_s(self) -> Optional[float]:
        return None if self.deadline is None else self.deadline - time.time()


def fewest_cpus(cpus_per_node: str) -> Optional[int]:
    """SLURM_JOB_CPUS_PER_NODE ("2(x3),1", as sbatch documents it) -> its smallest count."""
    counts = [int(m) for m in re.findall(r"(\d+)(?:\(x\d+\))?", cpus_per_node)]
    return min(counts) if counts else None


def expand_nodelist(nodelist: str) -> List[str]:
    """n[1-3],m5 -> [n1, n2, n3, m5] (python-hostlist when installed, else scontrol)."""
    if not nodelist:
        return []
    try:
        import hostlist  # python-hostlist

        return list(hostlist.expand_hostlist(nodelist))
    except ImportError:
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                             text=True, timeout=30)
        return out.stdout.split()


def _deadline(job: str) -> Optional[float]:
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%L"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _TIME_LEFT.match(out)
    if not m:
        return None  # UNLIMITED, NOT_SET or unknown
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return time.time() + ((days * 24 + hours) * 60 + minutes) * 60 + seconds
