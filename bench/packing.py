"""Packing efficiency: a 100-point sweep in ONE 3-node allocation vs one job per point.

Efficiency = time spent inside benchmark job steps (srun start to end, per record) divided by
allocation wall time (batch script start to end). Also reported: the makespan of each way.
Needs root, Slurm (Debian) and Intel MPI from PyPI; brings up tests/cluster if it is not up.

Usage: python bench/packing.py [--points 100] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests import slurm_cluster  # noqa: E402
from tests.sweeps import records  # noqa: E402

MATRIX = """
benchmark: imb-mpi1
repeats: 1
timeout: 120
stacks:
  impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
parameters: {{benchmarks: PingPong Allreduce, msglog: "0:10", ranks_per_node: 1}}
product:
  nodes: [1, 2]
  iter: {iters}
"""

SCRIPT = """#!/bin/bash
#SBATCH --nodes={nodes}
#SBATCH --exclusive
#SBATCH --output={out}
t0=$(date +%s.%N)
{python} -m commstack run {matrix} --out {results} --machine slurm-ci {select} >/dev/null 2>&1
t1=$(date +%s.%N)
echo "WALL $t0 $t1"
"""


def submit(script: Path) -> str:
    out = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def walls(outputs):
    total = 0.0
    spans = []
    for path in outputs:
        m = re.search(r"WALL (\S+) (\S+)", path.read_text())
        t0, t1 = float(m.group(1)), float(m.group(2))
        total += t1 - t0
        spans.append((t0, t1))
    return total, min(s[0] for s in spans), max(s[1] for s in spans)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100, help="points (an even number)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    reason = slurm_cluster.skip_reason()
    if reason:
        print(reason)
        return 2
    started = slurm_cluster.bring_up()
    os.environ.setdefault("I_MPI_ROOT", sys.prefix)
    tmp = Path(tempfile.mkdtemp(prefix="commstack-packing-"))
    iters = [100 + 10 * i for i in range(args.points // 2)]
    matrix = tmp / "matrices" / "slurm-ci" / "packing.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MATRIX.format(iters=iters))
    try:
        # 1. One allocation of 3 nodes for everything.
        packed = tmp / "packed.sbatch"
        packed.write_text(SCRIPT.format(nodes=3, out=tmp / "packed.out", python=sys.executable,
                                        matrix=matrix, results=tmp / "packed", select=""))
        t0 = time.time()
        slurm_cluster.wait_for_jobs([submit(packed)], timeout=3600)
        packed_makespan = time.time() - t0
        packed_wall, _, _ = walls([tmp / "packed.out"])
        packed_steps = sum(r["duration_s"] for r in records(tmp / "packed/slurm-ci/packing"))

        # 2. One job per point, all submitted at once (Slurm runs what fits side by side).
        from commstack.matrix.expand import expand
        from commstack.matrix.load import load_matrix

        points = expand(load_matrix(matrix))
        jobs, outputs = [], []
        t0 = time.time()
        for i, point in enumerate(points):
            script = tmp / f"single{i}.sbatch"
            outputs.append(tmp / f"single{i}.out")
            script.write_text(SCRIPT.format(
                nodes=point.get("nodes"), out=outputs[-1], python=sys.executable, matrix=matrix,
                results=tmp / "single", select=f"--nodes {point.get('nodes')} --shard "
                f"{[p.id for p in points if p.get('nodes') == point.get('nodes')].index(point.id)}"
                f"/{sum(1 for p in points if p.get('nodes') == point.get('nodes'))}"))
            jobs.append(submit(script))
        slurm_cluster.wait_for_jobs(jobs, timeout=7200)
        single_makespan = time.time() - t0
        single_wall, _, _ = walls(outputs)
        single_records = records(tmp / "single/slurm-ci/packing")
        single_steps = sum(r["duration_s"] for r in single_records)
    finally:
        if started:
            slurm_cluster.tear_down()

    result = {
        "points": len(points),
        "packed": {"allocation_wall_s": packed_wall, "inside_steps_s": packed_steps,
                   "efficiency": packed_steps / packed_wall, "makespan_s": packed_makespan,
                   "ok_records": sum(1 for r in records(tmp / "packed/slurm-ci/packing")
                                     if r["status"] == "ok")},
        "one_job_per_point": {"allocation_wall_s": single_wall, "inside_steps_s": single_steps,
                              "efficiency": single_steps / single_wall,
                              "makespan_s": single_makespan,
                              "ok_records": sum(1 for r in single_records if r["status"] == "ok")},
        "load1_at_end": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "packing.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["packed"]["efficiency"] >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
