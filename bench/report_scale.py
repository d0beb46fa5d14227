"""`commstack report` and `commstack status` at scale: today's code (a git worktree of a commit)
beside the working tree's, on the same generated campaigns.

Campaigns of about 1,000 / 10,000 / 100,000 records are written through the store's own record
writer (``Campaign.claim`` + ``write_new_json`` of ``Record.to_dict``, as ``commstack run`` does):
one real IMB-MPI1 Allreduce output (tests/fixtures/imb/openmpi-4.1.4, 4 ranks) is parsed once,
its rows extended to IMB's default message sizes (0, 1, 2, ... 4 MiB: a latency + bandwidth fit
through the real rows) and scaled and perturbed per point and repeat; every other field of the
record comes from a real record (tests/fixtures/campaigns/local/schema1-local), written in
schema 2 (as commstack wrote records before schema 3; today's code reads no other, the new code
reads every schema). Five swept axes:
stack x UCX_TLS x UCX_RNDV_THRESH x ranks_per_node x benchmarks, 3 repeats, rows at the job's
process count (as IMB with ``-npmin`` = all processes).

Each command runs in a child process; wall time by the clock, peak RSS from
``resource.getrusage(RUSAGE_CHILDREN)`` of a fresh helper process per run (the largest process
of the tree: drawing workers are forked from the report). The generator ends as ``commstack run``
did until records.csv became an export on request (bench/store_scale.py measures that change),
leaving the Parquet index of every record in one part (``tidy_index.ensure``). ``report`` is run
cold (report/ and summary.csv removed first) and, for the new code,
warm again (nothing changed: figures are not redrawn), and once more on a copy of the campaign
with its records in schema 3 (what ``commstack run`` writes now). Both codes run with their
modules compiled first (as an installed package has them). Medians over ``--repeats``; a run
that exceeds ``--timeout`` is killed and reported as "> T s".

  python bench/report_scale.py [--sizes 1000 10000 100000] [--base 0bd3eb3] [--repeats 3]

``--pairs N`` instead: today's code and the working tree's ``report``, cold, in turn (today, new,
today, new, ...) N times per size on the same campaign, with the ratio today/new pair by pair
(pairing keeps a ratio when a shared machine's speed drifts), each run's wall, CPU (the process
and its drawing workers) and peak RSS, and the load average; written to ``--out``:

  python bench/report_scale.py --pairs 3 --sizes 10000 100000 --base main \
      --workdir /tmp/rs --out bench/results/report_scale_perf28.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from commstack.benchmarks.imb import parse_imb  # noqa: E402
from commstack.matrix.expand import expand  # noqa: E402
from commstack.matrix.load import load_matrix  # noqa: E402
from commstack.store import tidy_index  # noqa: E402
from commstack.store.campaign import Campaign  # noqa: E402
from commstack.store.files import write_new_json  # noqa: E402
from commstack.store.record import Record  # noqa: E402

IMB_OUTPUT = ROOT / "tests/fixtures/imb/openmpi-4.1.4/v2021.11-mpi1-allreduce-np4.out"
RECORD = next((ROOT / "tests/fixtures/campaigns/local/schema1-local/points").glob(
    "*/rep1.try1/record.json"))
SIZES = [0] + [2 ** k for k in range(23)]  # IMB's default: 0, 1, 2, ... 4194304 bytes
REPEATS = 3

# Axis sizes per campaign scale (points x 3 repeats ~ records).
AXES: Dict[int, Dict[str, List]] = {}
_TLS = ["all", "self,sm", "self,sm,rc", "self,sm,ud", "self,sm,dc", "self,tcp", "sm,rc_x",
        "sm,dc_x"]
_RNDV = ["auto", "1024", "2048", "4096", "8192", "16384", "32768", "65536", "131072", "262144",
         "524288", "1048576", "512", "256", "128", "64"]
_BENCH = ["Allreduce", "Alltoall", "Allgather", "Bcast", "Reduce", "Reduce_scatter", "Gather",
          "Scatter"]
_STACK = ["ompi", "ompi-ucx", "ompi-ucc", "ompi-hcoll"]
_RPN = [2, 4, 8, 16, 32, 64, 128, 256]


def axes_for(records: int) -> Dict[str, List]:
    """stack x UCX_TLS x UCX_RNDV_THRESH x ranks_per_node x benchmarks, ~records/3 points."""
    shapes = {1000: (2, 3, 4, 2, 7), 10000: (3, 5, 8, 4, 7), 100000: (4, 8, 16, 8, 8)}
    if records not in shapes:
        raise SystemExit(f"sizes: one of {sorted(shapes)}")
    s, t, r, n, b = shapes[records]
    return {"stack": _STACK[:s], "UCX_TLS": _TLS[:t], "UCX_RNDV_THRESH": _RNDV[:r],
            "ranks_per_node": _RPN[:n], "benchmarks": _BENCH[:b]}


def matrix_text(name: str, axes: Dict[str, List]) -> str:
    stacks = "\n".join(f"  {s}: {{flavour: openmpi, launcher: mpirun.openmpi}}"
                       for s in axes["stack"])
    product = "\n".join(f"  {k}: {json.dumps(v)}" for k, v in axes.items())
    return (f"campaign: {name}\nbenchmark: imb-mpi1\nrepeats: {REPEATS}\ntimeout: 120\n"
            f"stacks:\n{stacks}\nparameters:\n  iter: 1000\nproduct:\n{product}\n")


def template_rows() -> List[dict]:
    """The real output's rows at 4 ranks, extended to IMB's default sizes: beyond the largest
    printed size, its time plus the bytes over a 5 GB/s link."""
    rows = [r for r in parse_imb(IMB_OUTPUT.read_text()).rows
            if r["benchmark"] == "Allreduce" and r["np"] == 4]
    by = {r["bytes"]: r for r in rows}
    last = by[max(by)]
    out = []
    for size in SIZES:
        if size in by:
            out.append(dict(by[size]))
            continue
        row = dict(last)
        factor = (last["t_avg_us"] + (size - last["bytes"]) / 5000.0) / last["t_avg_us"]
        row.update(bytes=size, repetitions=max(10, 1000 * 65536 // max(size, 65536)),
                   **{k: row[k] * factor for k in ("t_min_us", "t_max_us", "t_avg_us")})
        out.append(row)
    return out


def _printed(value: float) -> float:
    return round(value, 2)  # IMB prints two decimals


def generate(root: Path, records: int) -> Path:
    """results/<machine>/<campaign> under ``root`` with ~``records`` records (written by two
    processes, half the points each)."""
    return write_campaign(root / "bench" / f"scale{records}", axes_for(records))


def write_campaign(campaign_dir: Path, axes: Dict[str, List], shards: int = 2) -> Path:
    """A campaign of the sweep ``axes`` (stack, UCX_TLS, UCX_RNDV_THRESH, ranks_per_node,
    benchmarks), 3 repeats per point."""
    if (campaign_dir / "index").is_dir():
        tidy_index.ensure(campaign_dir)  # a campaign an earlier run of this script wrote
        return campaign_dir
    session = campaign_dir / "sessions" / "20261124T000000Z-bench-1"
    session.mkdir(parents=True, exist_ok=True)
    (session / "matrix.yaml").write_text(matrix_text(campaign_dir.name, axes))
    campaign = Campaign(campaign_dir)
    campaign.ensure({"campaign": campaign_dir.name, "machine": "bench",
                     "benchmark": "imb-mpi1"})
    if shards == 1:
        _write_points(campaign_dir, axes, 0, 1)
    else:
        with multiprocessing.get_context("fork").Pool(shards) as pool:
            pool.starmap(_write_points, [(campaign_dir, axes, i, shards) for i in range(shards)])
    tidy_index.ensure(campaign_dir)  # the index as `commstack run` leaves it: one merged part
    return campaign_dir


def _write_points(campaign_dir: Path, axes: Dict[str, List], shard: int, shards: int) -> None:
    session = next((campaign_dir / "sessions").iterdir())
    matrix = load_matrix(session / "matrix.yaml")
    campaign = Campaign(campaign_dir)
    base = Record.load(RECORD)
    rows = template_rows()
    rng = random.Random(len(str(axes)) * 10 + shard)
    for point in expand(matrix)[shard::shards]:
        campaign.save_point(point)
        for repeat in range(1, REPEATS + 1):
            write_record(campaign, point.as_dict(), point.id, repeat, axes, base, rows, rng,
                         session.name)


def write_record(campaign: Campaign, p: Dict, point_id: str, repeat: int, axes: Dict[str, List],
                 base: Record, rows: List[dict], rng: random.Random, session: str) -> None:
    """One repeat of a point, its numbers the template's scaled by the point's settings."""
    np_ = int(p["ranks_per_node"])
    # A point's character: slower stacks/transports, a rendezvous threshold that helps or
    # hurts mid sizes, more ranks cost log2(np).
    level = (1 + 0.15 * axes["stack"].index(p["stack"])) * (
        1 + 0.1 * axes["UCX_TLS"].index(p["UCX_TLS"])) * math.log2(np_) / 2 * (
        1 + 0.3 * axes["benchmarks"].index(p["benchmarks"]))
    rndv = axes["UCX_RNDV_THRESH"].index(p["UCX_RNDV_THRESH"])
    parsed = []
    for row in rows:
        bump = 1 + 0.05 * rndv * (4096 <= row["bytes"] <= 262144)
        noise = rng.lognormvariate(0, 0.04)
        scaled = {k: _printed(row[k] * level * bump * noise)
                  for k in ("t_min_us", "t_max_us", "t_avg_us")}
        parsed.append({**row, **scaled, "benchmark": p["benchmarks"], "np": np_})
    record = dataclasses.replace(
        base, campaign=campaign.name, machine="bench", benchmark="imb-mpi1",
        point_id=point_id, repeat=repeat, attempt=1, params=p, status="ok",
        stack=p["stack"], ranks=np_, nodes=1, oversubscribed=False, parsed=parsed,
        session=session, env={"UCX_TLS": p["UCX_TLS"], "UCX_RNDV_THRESH": p["UCX_RNDV_THRESH"]})
    _, attempt = campaign.claim(point_id, repeat)
    if attempt is None:
        return  # written by an earlier, interrupted generation
    try:
        # Schema 2, as commstack wrote records before schema 3: today's code reads only those,
        # and the new code reads every earlier schema.
        write_new_json(attempt.record_path, {**record.to_dict(), "schema": 2})
    finally:
        attempt.release()


# --- measuring ------------------------------------------------------------------------------

_MEASURE = """
import resource, subprocess, sys, time, json
start = time.perf_counter()
try:
    proc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=float(sys.argv[1]))
    code, err = proc.returncode, proc.stderr.decode()[-2000:]
except subprocess.TimeoutExpired:
    code, err = None, "timeout"
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "peak_mb": usage.ru_maxrss / 1024, "exit": code,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "stderr": err}))
"""


def measure(command: List[str], env: Dict[str, str], timeout: float) -> dict:
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(timeout), *command], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def clean_report(campaign_dir: Path) -> None:
    shutil.rmtree(campaign_dir / "report", ignore_errors=True)
    (campaign_dir / "summary.csv").unlink(missing_ok=True)


def code_env(src: Path) -> Dict[str, str]:
    """Each code with its modules compiled beforehand (as an installed package has them), the
    compiled files kept outside the source trees."""
    env = dict(os.environ, PYTHONPATH=str(src), MPLBACKEND="Agg",
               PYTHONPYCACHEPREFIX=str(Path(tempfile.gettempdir()) / "report-scale-pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_code(src: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], env=code_env(src),
                   check=True, stdout=subprocess.DEVNULL)


def as_written_now(campaign_dir: Path) -> Path:
    """The same campaign with every record in schema 3, the form ``commstack run`` writes now
    (today's code reads only schema 2, so the side-by-side runs use that)."""
    target = campaign_dir.with_name(campaign_dir.name + "-schema3")
    if (target / "index").is_dir():
        return target
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(campaign_dir, target)
    for path in target.glob("points/*/rep*.try*/record.json"):
        path.write_bytes(Record.load(path).dumps())
    shutil.rmtree(target / "index", ignore_errors=True)
    tidy_index.ensure(target)
    return target


def run_cli(src: Path, args: List[str], timeout: float, repeats: int, cold: Optional[Path]
            ) -> dict:
    results = []
    for _ in range(repeats):
        if cold is not None:
            clean_report(cold)
        results.append(measure([sys.executable, "-m", "commstack", *args], code_env(src),
                               timeout))
        if results[-1]["exit"] is None:
            break
    ok = [r for r in results if r["exit"] == 0 and r["wall_s"] is not None]
    timed_out = any(r["exit"] is None for r in results)
    return {"runs": len(results), "timed_out": timed_out, "timeout_s": timeout,
            "exits": [r["exit"] for r in results],
            "wall_s": statistics.median(r["wall_s"] for r in ok) if ok else None,
            "peak_mb": statistics.median(r["peak_mb"] for r in ok) if ok else None,
            "cpu_s": statistics.median(r["cpu_s"] for r in ok) if ok else None,
            "wall_all_s": [round(r["wall_s"], 2) for r in results],
            "load_average": os.getloadavg()[0],
            "stderr": next((r["stderr"] for r in results if r["exit"] not in (0,)), "")}


def shown(result: dict) -> str:
    if result.get("skipped"):
        return result["skipped"]
    if result["timed_out"]:
        return f"> {result['timeout_s']:.0f} s"
    if result["wall_s"] is None:
        return f"failed (exit {result['exits']})"
    return (f"{result['wall_s']:.1f} s (CPU {result['cpu_s']:.1f} s), "
            f"{result['peak_mb']:.0f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--base", default="0bd3eb3", help="commit of today's code")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the new code per size")
    parser.add_argument("--base-repeats", type=int, default=1, help="runs of today's code")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the generated campaigns here (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/report_scale.json")
    parser.add_argument("--base-too-slow", default=None, metavar="WHY",
                        help="do not run today's report (e.g. it exceeded the timeout at a "
                             "smaller size in an earlier run); WHY is written instead")
    parser.add_argument("--append", action="store_true",
                        help="keep the rows of other sizes already in --out")
    parser.add_argument("--keep-today", action="store_true",
                        help="take today's code's figures from --out for sizes it holds "
                             "(run only the new code again)")
    parser.add_argument("--pairs", type=int, default=0,
                        help="today's and the new report in turn, N pairs per size (cold); "
                             "nothing else is run")
    parser.add_argument("--campaign", type=Path, action="append", default=[],
                        help="with --pairs: an existing campaign to measure (instead of --sizes)")
    args = parser.parse_args()
    if args.pairs:
        return paired(args)

    work = args.workdir or Path(tempfile.mkdtemp(prefix="report-scale-"))
    worktree = Path(tempfile.mkdtemp(prefix="report-base-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree),
                    args.base], check=True, capture_output=True)
    for src in (worktree / "src", ROOT / "src"):
        compile_code(src)
    rows = []
    earlier = {r.get("size"): r for r in json.loads(args.out.read_text())["rows"]
               } if args.out.is_file() else {}
    if args.append:
        rows = [r for size, r in earlier.items() if size not in args.sizes]
    try:
        base_too_slow: Optional[str] = args.base_too_slow
        for size in args.sizes:
            t0 = time.perf_counter()
            campaign_dir = generate(work, size)
            count = sum(1 for _ in campaign_dir.glob("points/*/rep*.try*/record.json"))
            generated = time.perf_counter() - t0
            print(f"{size}: {count} records in {campaign_dir} ({generated:.0f} s)", flush=True)
            row = {"size": size, "records": count,
                   "axes": {k: len(v) for k, v in axes_for(size).items()}}
            for who, src, reps in (("today", worktree / "src", args.base_repeats),
                                   ("new", ROOT / "src", args.repeats)):
                if who == "today" and args.keep_today and size in earlier:
                    row.update({k: v for k, v in earlier[size].items() if k.startswith("today")})
                    print(f"  today: as measured before: report {shown(row['today_report'])}",
                          flush=True)
                    continue
                if who == "today" and base_too_slow:
                    row[f"{who}_report"] = {"skipped": f"not run: {base_too_slow}"}
                else:
                    row[f"{who}_report"] = run_cli(src, ["report", str(campaign_dir)],
                                                   args.timeout, reps, campaign_dir)
                    if row[f"{who}_report"]["timed_out"]:
                        base_too_slow = f"> {args.timeout:.0f} s at {count} records"
                if who == "new":
                    row["new_report_warm"] = run_cli(src, ["report", str(campaign_dir)],
                                                     args.timeout, reps, None)
                row[f"{who}_status"] = run_cli(src, ["status", str(campaign_dir)],
                                               args.timeout, reps, None)
                print(f"  {who}: report {shown(row[f'{who}_report'])}; status "
                      f"{shown(row[f'{who}_status'])}", flush=True)
            print(f"  new, warm (nothing changed): report {shown(row['new_report_warm'])}",
                  flush=True)
            now = as_written_now(campaign_dir)
            row["new_report_schema3"] = run_cli(ROOT / "src", ["report", str(now)],
                                                args.timeout, args.repeats, now)
            row["new_status_schema3"] = run_cli(ROOT / "src", ["status", str(now)],
                                                args.timeout, args.repeats, None)
            print(f"  new, records in schema 3: report {shown(row['new_report_schema3'])}; "
                  f"status {shown(row['new_status_schema3'])}", flush=True)
            rows.append(row)
            rows.sort(key=lambda r: r["size"])
            args.out.write_text(json.dumps(
                {"what": "commstack report/status at scale, today's code vs the working tree",
                 "base_commit": args.base, "cpus": os.cpu_count(), "repeats_new": args.repeats,
                 "repeats_today": args.base_repeats, "rows": rows}, indent=1) + "\n")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                       check=False)
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out}")
    return 0


def paired(args: argparse.Namespace) -> int:
    """``--pairs``: today's and the new cold report in turn on each campaign."""
    work = args.workdir or Path(tempfile.mkdtemp(prefix="report-scale-"))
    worktree = Path(tempfile.mkdtemp(prefix="report-base-")) / "tree"
    base = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.base],
                          check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), base],
                   check=True, capture_output=True)
    new = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         check=True, capture_output=True, text=True).stdout.strip()
    rows = []
    try:
        for src in (worktree / "src", ROOT / "src"):
            compile_code(src)
        campaigns = list(args.campaign) or [generate(work, size) for size in args.sizes]
        for campaign_dir in campaigns:
            count = sum(1 for _ in campaign_dir.glob("points/*/rep*.try*/record.json"))
            row: dict = {"campaign": str(campaign_dir), "records": count, "pairs": []}
            print(f"{campaign_dir}: {count} records", flush=True)
            for i in range(args.pairs):
                pair = {}
                for who, src in (("today", worktree / "src"), ("new", ROOT / "src")):
                    pair[who] = run_cli(src, ["report", str(campaign_dir)], args.timeout, 1,
                                        campaign_dir)
                if pair["today"]["wall_s"] and pair["new"]["wall_s"]:
                    pair["ratio_wall"] = pair["today"]["wall_s"] / pair["new"]["wall_s"]
                    pair["ratio_cpu"] = pair["today"]["cpu_s"] / pair["new"]["cpu_s"]
                print(f"  pair {i + 1}: today {shown(pair['today'])}; new {shown(pair['new'])}; "
                      f"load {pair['new']['load_average']:.1f}", flush=True)
                row["pairs"].append(pair)
            for who in ("today", "new"):
                done = [p[who] for p in row["pairs"] if p[who]["wall_s"] is not None]
                row[who] = {k: statistics.median(r[k] for r in done) if done else None
                            for k in ("wall_s", "cpu_s", "peak_mb")}
            ratios = [p["ratio_wall"] for p in row["pairs"] if "ratio_wall" in p]
            row["median_ratio_wall"] = statistics.median(ratios) if ratios else None
            rows.append(row)
            args.out.write_text(json.dumps(
                {"what": "commstack report, today's code and the working tree in turn, cold",
                 "base_commit": base, "new_commit": new, "cpus": os.cpu_count(),
                 "pairs": args.pairs, "rows": rows}, indent=1) + "\n")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                       check=False)
        if args.workdir is None and not args.campaign:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
