"""The 3-node Slurm test cluster (tests/cluster/slurm-up.sh) as a pytest fixture helper."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterable, Optional

CLUSTER = Path(__file__).resolve().parent / "cluster"
NODES = ["n1", "n2", "n3"]


def skip_reason() -> Optional[str]:
    missing = [b for b in ("slurmctld", "slurmd", "sinfo", "munged", "ip", "nsenter")
               if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
    if missing:
        return ("skipped: no slurm (apt install slurmctld slurmd slurm-client munge libpmi2-0 "
                f"libpmix-dev; missing {', '.join(missing)})")
    if os.geteuid() != 0:
        return "skipped: the Slurm test cluster needs root (network namespaces, daemons)"
    return None


def cluster_is_up() -> bool:
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True,
                             text=True, timeout=20).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return False
    nodes = dict(zip(out[::2], out[1::2]))
    # "completing" while a job's steps end: up and in use (restarting it would kill the job).
    return all(nodes.get(n, "").startswith(("idle", "mixed", "allocated", "completing"))
               for n in NODES)


def bring_up() -> bool:
    """Start the cluster unless it is up; True when this call started it."""
    if cluster_is_up():
        return False
    subprocess.run(["bash", str(CLUSTER / "slurm-down.sh")], capture_output=True, timeout=120)
    proc = subprocess.run(["bash", str(CLUSTER / "slurm-up.sh")], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0 or not cluster_is_up():
        raise RuntimeError(f"slurm-up.sh failed:\n{proc.stdout}\n{proc.stderr}")
    return True


def tear_down() -> None:
    subprocess.run(["bash", str(CLUSTER / "slurm-down.sh")], capture_output=True, timeout=120)


def wait_for_jobs(job_ids: Iterable[str], timeout: float = 600) -> None:
    ids = ",".join(job_ids)
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = subprocess.run(["squeue", "-h", "-j", ids], capture_output=True, text=True,
                             timeout=30).stdout
        if not out.strip():
            return
        time.sleep(0.5)
    subprocess.run(["scancel", *ids.split(",")], timeout=30)
    raise AssertionError(f"jobs {ids} still queued after {timeout}s")


def run_matrix_in_allocation(matrix: Path, root: Path, cwd: Path, nodes: int = 3,
                             env: Optional[dict] = None, retry: bool = True
                             ) -> subprocess.CompletedProcess:
    """`salloc -N<nodes> scripts/run_matrix.sh <matrix> --retry-failed`, once more when a run
    failed: Open MPI 4.1.4 (Debian's and Spack's) now and then crashes in MPI_Init on this loaded
    2-core box (docs/known-limits.md). The second pass runs a failed point as a new attempt; the
    failed one is kept, and its log line (in the returned stdout) says why it failed."""
    from tests.sweeps import records  # not at import: sweeps needs jsonschema, this module not

    cmd = ["salloc", f"-N{nodes}", "--exclusive", "-t", "10",
           str(CLUSTER.parent.parent / "scripts" / "run_matrix.sh"), str(matrix), "--retry-failed"]
    env = dict(os.environ) if env is None else env
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd, env=env)
    if retry and any(r["status"] != "ok" for r in records(root)):
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd, env=env)
        again.stdout = out.stdout + again.stdout
        return again
    return out
