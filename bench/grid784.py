"""`report`, `dashboard` and `history` of 10,000 records over a 784-setting UCX/collective grid
(UCX_TLS 4 x UCX_RNDV_THRESH 7 x UCX_ZCOPY_THRESH 7 x coll_ucc_enable 2 x mapping 2, 13 repeats:
10,192 records), today's code (a git worktree of a commit) beside the working tree's.

Records are written as ``report_scale.py`` writes them (the store's own writer, rows of one real
IMB-MPI1 Allreduce output extended to IMB's 24 default sizes, scaled per setting and perturbed
per repeat), in schema 3 as ``commstack run`` writes them now, with the Parquet index as
``commstack run`` leaves it (one merged part; built here by ``tidy_index.ensure``). Each command runs in a child
process (wall, CPU, peak RSS; ``report_scale.measure``); ``report`` cold (report/ and summary.csv
removed first).

  python bench/grid784.py [--base main] [--repeats 1] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

import report_scale as rs  # noqa: E402

from commstack.matrix.expand import expand  # noqa: E402
from commstack.matrix.load import load_matrix  # noqa: E402
from commstack.store import tidy_index  # noqa: E402
from commstack.store.campaign import Campaign  # noqa: E402
from commstack.store.files import write_new  # noqa: E402
from commstack.store.record import Record  # noqa: E402

AXES: Dict[str, List] = {
    "UCX_TLS": ["all", "self,sm", "self,sm,tcp", "self,tcp"],
    "UCX_RNDV_THRESH": ["auto", "1024", "4096", "16384", "65536", "262144", "1048576"],
    "UCX_ZCOPY_THRESH": ["auto", "1024", "4096", "16384", "65536", "262144", "1048576"],
    "mca.coll_ucc_enable": [0, 1],
    "mapping": ["block", "cyclic"],
}
REPEATS = 13


def matrix_text(name: str) -> str:
    product = "\n".join(f"  {k}: {json.dumps(v)}" for k, v in AXES.items())
    return (f"campaign: {name}\nbenchmark: imb-mpi1\nrepeats: {REPEATS}\ntimeout: 120\n"
            "stacks:\n  ompi: {flavour: openmpi, launcher: mpirun.openmpi}\n"
            f"parameters:\n  benchmarks: Allreduce\n  ranks_per_node: 4\n  iter: 1000\n"
            f"product:\n{product}\n")


def generate(root: Path) -> Path:
    campaign_dir = root / "bench" / "grid784"
    if (campaign_dir / "index").is_dir():
        tidy_index.ensure(campaign_dir)  # a campaign an earlier run of this script wrote
        return campaign_dir
    session = campaign_dir / "sessions" / "20261124T000000Z-bench-1"
    session.mkdir(parents=True, exist_ok=True)
    (session / "matrix.yaml").write_text(matrix_text(campaign_dir.name))
    campaign = Campaign(campaign_dir)
    campaign.ensure({"campaign": campaign_dir.name, "machine": "bench",
                     "benchmark": "imb-mpi1"})
    matrix = load_matrix(session / "matrix.yaml")
    base = Record.load(rs.RECORD)
    rows = rs.template_rows()
    rng = random.Random(784)
    for point in expand(matrix):
        campaign.save_point(point)
        p = point.as_dict()
        level = math.prod(1 + 0.07 * AXES[k].index(p[k]) for k in AXES)
        for repeat in range(1, REPEATS + 1):
            parsed = []
            for row in rows:
                noise = rng.lognormvariate(0, 0.04)
                parsed.append({**row, **{k: round(row[k] * level * noise, 2)
                                         for k in ("t_min_us", "t_max_us", "t_avg_us")}})
            record = dataclasses.replace(
                base, campaign=campaign.name, machine="bench", benchmark="imb-mpi1",
                point_id=point.id, repeat=repeat, attempt=1, params=p, status="ok",
                stack="ompi", ranks=4, nodes=1, oversubscribed=False, parsed=parsed,
                session=session.name, env={k: str(p[k]) for k in AXES if k.startswith("UCX")})
            _, attempt = campaign.claim(point.id, repeat)
            if attempt is None:
                continue
            try:
                write_new(attempt.record_path, record.dumps())
            finally:
                attempt.release()
    # As `commstack run` leaves it: each runner adds its record's part, the run's end merges them.
    tidy_index.ensure(campaign_dir)
    return campaign_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="commit of today's code")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=rs.ROOT / "bench/results/grid784.json")
    args = parser.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="grid784-"))
    worktree = Path(tempfile.mkdtemp(prefix="grid784-base-")) / "tree"
    base = subprocess.run(["git", "-C", str(rs.ROOT), "rev-parse", "--short", args.base],
                          check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "-C", str(rs.ROOT), "worktree", "add", "--detach", str(worktree),
                    base], check=True, capture_output=True)
    try:
        for src in (worktree / "src", rs.ROOT / "src"):
            rs.compile_code(src)
        campaign = generate(work)
        count = sum(1 for _ in campaign.glob("points/*/rep*.try*/record.json"))
        print(f"{count} records, {math.prod(len(v) for v in AXES.values())} settings in {campaign}",
              flush=True)
        row = {"records": count, "axes": {k: len(v) for k, v in AXES.items()}}
        site = work / "site"
        runs = [("today_report", worktree, ["report", str(campaign)], campaign),
                ("new_report", rs.ROOT, ["report", str(campaign)], campaign),
                ("new_dashboard", rs.ROOT, ["dashboard", str(campaign), "--out", str(site)], None),
                ("new_history", rs.ROOT, ["history", str(campaign), "--where", "bytes=1024",
                                          "--where", "UCX_TLS=all", "--csv"], None)]
        for key, tree, command, cold in runs:
            row[key] = rs.run_cli(tree / "src", command, args.timeout, args.repeats, cold)
            print(f"  {key}: {rs.shown(row[key])} (runs: {row[key]['wall_all_s']}; "
                  f"load {row[key]['load_average']:.1f})", flush=True)
        if (site / "index.html").is_file():
            row["dashboard_bytes"] = os.path.getsize(site / "index.html")
        args.out.write_text(json.dumps(
            {"what": "report/dashboard/history of 10,000 records over 784 settings",
             "base_commit": base, "cpus": os.cpu_count(), "row": row}, indent=1) + "\n")
    finally:
        subprocess.run(["git", "-C", str(rs.ROOT), "worktree", "remove", "--force",
                        str(worktree)], check=False)
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
