"""Harness overhead per point against a bare launcher run of the same command.

For each pair (order alternating), the same IMB command runs
  * bare:    subprocess with the same argv and environment, output to files;
  * harness: commstack's per-point path (decide and claim the attempt under its locks, run,
             parse, UCX report, write the record atomically) -- what `commstack run` does per point;
and, for context, the whole `commstack run` command on a one-point matrix (Python start-up and
the once-per-session provenance capture included).

Usage: python bench/harness_overhead.py [--pairs 7] [--out bench/results]
Needs Intel MPI from PyPI in the venv (scripts/setup_venv.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from commstack import provenance
from commstack.attempt_run import run_attempt
from commstack.benchmarks import registry
from commstack.matrix.load import load_matrix
from commstack.plan import prepare
from commstack.run_record import Session, topology_note
from commstack.store.campaign import Campaign

MATRIX = """
benchmark: imb-mpi1
repeats: 1
timeout: 300
stacks:
  impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
parameters:
  ranks_per_node: 2
  benchmarks: PingPong Allreduce
  msglog: "0:20"
  iter: 1000
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    os.environ.setdefault("I_MPI_ROOT", sys.prefix)

    tmp = Path(tempfile.mkdtemp(prefix="commstack-bench-"))
    matrix_path = tmp / "matrices" / "local" / "overhead.yaml"
    matrix_path.parent.mkdir(parents=True)
    matrix_path.write_text(MATRIX)
    plan = prepare(load_matrix(matrix_path))
    prepared = plan.points[0]
    parse = registry.parser_for("imb-mpi1")
    known = provenance.known_ucx_variables(prepared.stack)
    campaign = Campaign(tmp / "results" / "local" / "overhead")
    campaign.ensure({"bench": "harness_overhead"})
    folder = campaign.new_session()
    session = Session(campaign, folder, topology_note(folder), plan.matrix, parse,
                      {prepared.stack.name: known}, {})

    def bare(i: int) -> float:
        d = tmp / f"bare{i}"
        d.mkdir()
        t0 = time.perf_counter()
        with open(d / "out", "wb") as out, open(d / "err", "wb") as err:
            subprocess.run(prepared.command.argv, env=prepared.command.full_env(), stdout=out,
                           stderr=err, stdin=subprocess.DEVNULL, cwd=d, check=True)
        return time.perf_counter() - t0

    def harness(i: int) -> float:
        t0 = time.perf_counter()
        campaign.save_point(prepared.point)
        _, attempt = campaign.claim(prepared.point.id, i + 1)
        record = run_attempt(session, prepared, attempt)
        elapsed = time.perf_counter() - t0
        assert record.status == "ok", record.status
        return elapsed

    def whole_command(i: int) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "commstack", "run", str(matrix_path), "--out",
                        str(tmp / f"cli{i}")], check=True, capture_output=True)
        return time.perf_counter() - t0

    bare(-1)  # warm caches once
    pairs = []
    for i in range(args.pairs):
        if i % 2 == 0:
            b, h = bare(i), harness(i)
        else:
            h, b = harness(i), bare(i)
        c = whole_command(i)
        pairs.append({"bare_s": b, "harness_s": h, "command_s": c, "ratio": h / b})
        print(f"pair {i + 1}: bare {b:.3f}s  harness {h:.3f}s  ratio {h / b:.4f}  "
              f"whole command {c:.3f}s", flush=True)

    result = {
        "pairs": pairs,
        "median_bare_s": statistics.median(p["bare_s"] for p in pairs),
        "median_harness_s": statistics.median(p["harness_s"] for p in pairs),
        "median_ratio": statistics.median(p["ratio"] for p in pairs),
        "median_command_s": statistics.median(p["command_s"] for p in pairs),
        "command": [Path(a).name for a in prepared.command.argv],
        "cpus": len(os.sched_getaffinity(0)),
        "load1_at_end": os.getloadavg()[0],
    }
    overhead = (result["median_ratio"] - 1) * 100
    print(f"median bare {result['median_bare_s']:.3f}s, harness {result['median_harness_s']:.3f}s,"
          f" median ratio {result['median_ratio']:.4f} (overhead {overhead:+.2f} %); whole "
          f"`commstack run` incl. start-up and provenance {result['median_command_s']:.3f}s")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "harness_overhead.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0 if overhead <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
