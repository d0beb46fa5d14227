"""A campaign that grows: what a session, `status` and `report` cost at 10^4 to 10^6 records.

The campaigns are grown from a real sweep, as a user's would be:

1. **Template**: ``commstack run`` of a small Intel MPI sweep (``--shape``: ``imb70`` the PyPI
   wheel's IMB-MPI1 PingPong, Allreduce and Alltoall at 17 message sizes, about 70 rows per
   record at 2 and 4 ranks; ``imb250`` eight collectives at 23 sizes, about 250 rows; ``osu``
   OSU 7.3's osu_allreduce, built by Spack against the wheel (tests/spack/osu-intelmpi), 21
   sizes) in a scratch campaign: real records, real outputs.
2. **Growth**: the campaign's matrix sweeps ``I_MPI_ADJUST_ALLREDUCE`` (10) x
   ``I_MPI_ADJUST_ALLTOALL`` (4) x ``ranks_per_node`` [2, 4] x the shape's iteration count (as
   many values as needed), 5 repeats. Each record is the template record of its rank count
   with its own point, repeat and session, and its output one of 64 variants of the template's
   output (every time printed scaled by its own factor, then parsed by the real parser, so the
   record's rows point into its output exactly as ``commstack run`` writes them; variants are
   hard links). The status log gets the lines the store appends. No index and no derived files
   are written: the campaign is as a copy or an import leaves it ("cold").
3. **Measured**, each command in a child process (wall, CPU, peak RSS: ``report_scale.measure``):
   ``status`` (the first one builds the status log); a cold ``report`` (no index, no
   ``report/``, no ``summary.csv``); a warm one (nothing changed); and sessions: a real
   ``commstack run`` into the campaign of 2 new points x 5 repeats = 10 records launched
   with Intel MPI, its whole wall and its end (from the line
   of its last record to its exit: what a session pays after its runs). On-disk bytes per
   record beyond the raw output (stdout/stderr): record.json, point.json, index, status log.

  python bench/store_scale.py [--sizes 10000 100000 1000000] [--shape imb70] [--workdir DIR]
                              [--src DIR (another checkout's src/, e.g. a worktree of main)]

Figures: docs/measured.md ("A campaign that grows"); results in bench/results/store_scale*.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import report_scale as rs  # noqa: E402

from commstack.benchmarks.registry import parser_for  # noqa: E402
from commstack.store import state_log  # noqa: E402
from commstack.store.files import write_new_json  # noqa: E402
from commstack.store.record import Record  # noqa: E402

REPEATS = 5
VARIANTS = 64
# Each shape: its benchmark, its parameters, the axis the campaign grows along (``scale``), and
# for OSU the folders of the Spack-built benchmarks (tests/spack/osu-intelmpi).
SHAPES = {
    "imb70": {"benchmark": "imb-mpi1", "scale": "iter",
              "parameters": {"benchmarks": "PingPong Allreduce Alltoall", "msglog": "0:16"}},
    "imb250": {"benchmark": "imb-mpi1", "scale": "iter",
               "parameters": {"benchmarks": "Allreduce Alltoall Allgather Bcast Reduce "
                                            "Reduce_scatter Gather Scatter", "msglog": "0:22"}},
    "osu": {"benchmark": "osu", "scale": "iterations",
            "parameters": {"executable": "osu_allreduce", "message_size": "1:1048576",
                           "warmup": 10},
            "bin": '["${COMMSTACK_OSU_INTELMPI}/pt2pt", "${COMMSTACK_OSU_INTELMPI}/collective"]'},
}
_NUMBER = re.compile(r"(?<=\s)(\d+\.\d+)(?=\s|$)")


# The swept knobs beside ``iter``: Intel MPI's Allreduce and Alltoall algorithm ids (real
# variables, checked by the pre-flight when a session runs).
KNOBS = {"ranks_per_node": [2, 4], "I_MPI_ADJUST_ALLREDUCE": list(range(1, 11)),
         "I_MPI_ADJUST_ALLTOALL": [1, 2, 3, 4]}


def matrix_text(name: str, shape: str, iters: List[int], knobs: Optional[Dict] = None) -> str:
    """The campaign's matrix: ``KNOBS`` x the shape's scale axis, 5 repeats, Intel MPI."""
    s = SHAPES[shape]
    product = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in (knobs or KNOBS).items())
    parameters = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in s["parameters"].items())
    stack = "  impi:\n    flavour: intelmpi\n    prefix: ${I_MPI_ROOT}\n" + (
        f"    bin: {s['bin']}\n" if "bin" in s else "")
    return (f"campaign: {name}\nbenchmark: {s['benchmark']}\nrepeats: {REPEATS}\n"
            f"timeout: 300\nstacks:\n{stack}parameters:\n{parameters}"
            f"product:\n{product}  {s['scale']}: {json.dumps(iters)}\n")


def commstack(src: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commstack", *args], env=rs.code_env(src),
                          capture_output=True, text=True, timeout=timeout)


def template(work: Path, shape: str) -> Dict[int, Path]:
    """A real sweep of the shape (1 repeat, iter 20): its attempt folder per rank count."""
    out = work / "template" / shape
    campaign = out / "local" / "template"
    if not campaign.is_dir():
        work.mkdir(parents=True, exist_ok=True)
        matrix = work / f"template-{shape}.yaml"
        matrix.write_text(matrix_text("template", shape, [20], {"ranks_per_node": [2, 4]}
                                      ).replace(f"repeats: {REPEATS}", "repeats: 1"))
        done = commstack(ROOT / "src", "run", str(matrix), "--out", str(out), "--machine",
                         "local", "--campaign", "template")
        if done.returncode != 0:
            raise SystemExit(f"template sweep failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    found = {}
    for path in campaign.glob("points/*/rep1.try1/record.json"):
        record = Record.load(path)
        if record.status != "ok":
            raise SystemExit(f"{path}: template record is {record.status}")
        found[record.ranks] = path.parent
    return found


def _variants(folder: Path, target: Path) -> List[Tuple[Path, Path, str]]:
    """VARIANTS copies of the template's output, every printed time scaled by its own factor
    (lognormal, sigma 0.04), each with a copy of its stderr: (stdout, stderr, stdout text).
    Records link to them (a file has at most some 65,000 links: 64 variants serve 10^6)."""
    text = (folder / "stdout.txt").read_text()
    rng = random.Random(len(text))
    out = []
    for i in range(VARIANTS):
        factor = rng.lognormvariate(0, 0.04)
        path, err = target / f"stdout-{i}.txt", target / f"stderr-{i}.txt"
        path.write_text(_NUMBER.sub(lambda m, f=factor: f"{float(m.group(1)) * f:.2f}", text))
        shutil.copyfile(folder / "stderr.txt", err)
        out.append((path, err, path.read_text()))
    return out


def grow(work: Path, shape: str, records: int) -> Path:
    """results/bench/<shape>-<records>: the campaign, cold (no index, no derived files)."""
    campaign = work / "results" / "bench" / f"{shape}-{records}"
    if (campaign / "campaign.json").is_file():
        return campaign
    folders = template(work, shape)
    per_iter = REPEATS * len(KNOBS["ranks_per_node"]) * len(KNOBS["I_MPI_ADJUST_ALLREDUCE"]) \
        * len(KNOBS["I_MPI_ADJUST_ALLTOALL"])
    iters = list(range(100, 100 + -(-records // per_iter)))
    tmp = campaign.with_name(campaign.name + ".growing")
    shutil.rmtree(tmp, ignore_errors=True)
    session = tmp / "sessions" / "20261129T000000Z-bench-1"
    session.mkdir(parents=True)
    (session / "matrix.yaml").write_text(matrix_text(campaign.name, shape, iters))
    (tmp / "index").mkdir()
    variants = tmp / "variants"
    pools = {}
    for ranks, folder in folders.items():
        (variants / str(ranks)).mkdir(parents=True)
        pools[ranks] = _variants(folder, variants / str(ranks))
    write_new_json(tmp / "campaign.json", {"campaign": campaign.name, "machine": "bench",
                                           "benchmark": SHAPES[shape]["benchmark"],
                                           "created": time.time()})
    from commstack.matrix.expand import expand
    from commstack.matrix.load import load_matrix

    points = expand(load_matrix(session / "matrix.yaml"))
    jobs = [(tmp, folders, pools, points[i::2], session.name, i, SHAPES[shape]["benchmark"])
            for i in range(2)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        logs = pool.starmap(_write_points, jobs)
    log = state_log.log_path(tmp)
    log.write_bytes(state_log.HEADER + b"".join(logs))  # after every point folder: current
    tmp.rename(campaign)
    return campaign


def _write_points(campaign: Path, folders: Dict[int, Path], pools, points, session: str,
                  seed: int, benchmark: str) -> bytes:
    """The points' folders and records. Each record is the template record of its rank count
    with the rows of its output variant, written by ``Record.dumps`` once per (ranks, variant);
    per record only its own fields (point, repeat, parameters) are put in its JSON lines."""
    rng = random.Random(seed)
    lines: Dict[Tuple[int, int], Dict[str, str]] = {}
    name = campaign.name.split(".")[0]
    for ranks, folder in folders.items():
        base = Record.load(folder / "record.json")
        for which, (_, _, text) in enumerate(pools[ranks]):
            record = Record.from_dict({**base.to_dict(), "campaign": name, "machine": "bench",
                                       "session": session, "parsed": parser_for(benchmark)(text).rows,
                                       "schema": base.schema})
            data = json.loads(record.dumps())
            lines[(ranks, which)] = {k: _line(k, v) for k, v in data.items()}
    out = []
    for point in points:
        ranks = int(point.get("ranks_per_node"))
        folder = campaign / "points" / point.id
        folder.mkdir(parents=True)
        params = point.as_dict()
        write_new_json(folder / "point.json", {"benchmark": benchmark, "params": params})
        for repeat in range(1, REPEATS + 1):
            attempt = folder / f"rep{repeat}.try1"
            attempt.mkdir()
            (attempt / ".lock").touch()
            which = rng.randrange(VARIANTS)
            stdout, stderr, _ = pools[ranks][which]
            os.link(stdout, attempt / "stdout.txt")
            os.link(stderr, attempt / "stderr.txt")
            own = dict(lines[(ranks, which)], point_id=_line("point_id", point.id),
                       repeat=_line("repeat", repeat), attempt=_line("attempt", 1),
                       params=_line("params", params))
            (attempt / "record.json").write_text(
                "{\n" + ",\n".join(own[k] for k in sorted(own)) + "\n}\n")
            out.append(f"c\t{point.id}\t{repeat}\t1\ns\t{point.id}\t{repeat}\t1\tok\t-\n")
    return "".join(out).encode()


def _line(key: str, value) -> str:
    """One line of ``Record.dumps``."""
    return f"{json.dumps(key)}:{json.dumps(value, sort_keys=True, separators=(',', ':'), default=str)}"


# --- measuring -------------------------------------------------------------------------------
def session(src: Path, campaign: Path, shape: str, value: Optional[int]) -> dict:
    """A real ``commstack run`` into the campaign: with ``value``, a matrix of 2 new points x 5
    repeats (``iter`` = ``value``, one setting of each knob) = 10 records launched; without,
    the campaign's own matrix again (everything done: a resumed session with nothing left)."""
    if value is None:
        text = (campaign / "sessions" / "20261129T000000Z-bench-1" / "matrix.yaml").read_text()
    else:
        text = matrix_text(campaign.name, shape, [value], {
            "ranks_per_node": [2, 4], "I_MPI_ADJUST_ALLREDUCE": [1], "I_MPI_ADJUST_ALLTOALL": [1]})
    matrix = campaign.parent.parent.parent / f"session-{campaign.name}-{value}.yaml"
    matrix.write_text(text)
    command = [sys.executable, "-u", "-m", "commstack", "run", str(matrix), "--out",
               str(campaign.parent.parent), "--machine", "bench", "--campaign", campaign.name]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=rs.code_env(src), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    last_record = None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if re.match(r"\[\d+/\d+, .*\] rep ", line):
            last_record = time.perf_counter()
    proc.wait()
    end = time.perf_counter()
    ran = sum(1 for line in lines if re.match(r"\[\d+/\d+, .*\] rep ", line))
    return {"exit": proc.returncode, "ran": ran, "wall_s": end - start,
            "end_s": None if last_record is None else end - last_record,
            "output_tail": "".join(lines[-5:]) if proc.returncode else ""}


def _seconds(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f} s"


def disk_bytes(campaign: Path) -> Dict[str, int]:
    """Bytes on disk (allocated blocks) by kind, folders included; a file linked from several
    attempts (the output variants) counted once."""
    kinds: Dict[str, int] = {}
    seen = set()

    def count(kind: str, path: str) -> None:
        info = os.lstat(path)
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            kinds[kind] = kinds.get(kind, 0) + info.st_blocks * 512

    for directory, folders, names in os.walk(campaign):
        rel = os.path.relpath(directory, campaign)
        top = rel.split(os.sep)[0]
        for folder in folders:
            count("folders" if top in ("points", ".") else top, os.path.join(directory, folder))
        for name in names:
            kind = ("raw output" if name in ("stdout.txt", "stderr.txt") or top == "variants"
                    else name if top == "points" else top if top != "." else name)
            count(kind, os.path.join(directory, name))
    return kinds


NOT_THE_STORES = ("report", "summary.csv", "raw output")


def index_build(src: Path, campaign: Path, timeout: float) -> dict:
    """``tidy_index.ensure`` of a campaign without an index, in a child process (what the first
    reader of a copied or imported campaign pays)."""
    code = "import sys; from commstack.store import tidy_index; tidy_index.ensure(sys.argv[1])"
    result = rs.measure([sys.executable, "-c", code, str(campaign)], rs.code_env(src), timeout)
    return {"wall_s": result["wall_s"], "cpu_s": result["cpu_s"], "peak_mb": result["peak_mb"],
            "exits": [result["exit"]], "timed_out": result["exit"] is None,
            "timeout_s": timeout}


def cold(campaign: Path) -> None:
    """Back to "copied or imported": no index, no derived files."""
    shutil.rmtree(campaign / "index", ignore_errors=True)
    shutil.rmtree(campaign / "report", ignore_errors=True)
    for name in ("summary.csv", "records.csv"):
        (campaign / name).unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="imb70")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the code measured")
    parser.add_argument("--label", default=None,
                        help="what the code is, in the results (default: the commit of --src)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--no-report", action="store_true", help="no cold or warm report")
    parser.add_argument("--no-index", action="store_true", help="no index built from the records")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "store-scale")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("I_MPI_ROOT", sys.prefix)  # the venv holding impi-rt (setup_venv.sh)
    if args.shape == "osu" and "COMMSTACK_OSU_INTELMPI" not in os.environ:
        found = subprocess.run([sys.executable, "-m", "commstack.spack", "tests/spack/osu-intelmpi",
                                "--expect", "libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency"],
                               cwd=ROOT, capture_output=True, text=True, check=True)
        os.environ["COMMSTACK_OSU_INTELMPI"] = str(Path(found.stdout.split()[-1]).parent)
    out = args.out or ROOT / f"bench/results/store_scale_{args.shape}.json"
    rs.compile_code(args.src)
    label = args.label or "commit " + subprocess.run(
        ["git", "-C", str(args.src), "rev-parse", "--short", "HEAD"], capture_output=True,
        text=True, check=True).stdout.strip() + (" + working tree" if args.src == ROOT / "src"
                                                 else "")
    rows = json.loads(out.read_text())["rows"] if out.is_file() else []
    for size in args.sizes:
        t0 = time.perf_counter()
        campaign = grow(args.workdir, args.shape, size)
        count = sum(1 for _ in (campaign / "points").glob("*/rep*.try*/record.json"))
        print(f"{size}: {count} records in {campaign} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
        row: dict = {"size": size, "records": count, "shape": args.shape, "code": label}
        state_log.log_path(campaign).unlink(missing_ok=True)
        row["status_first"] = rs.run_cli(args.src, ["status", str(campaign)], args.timeout, 1,
                                         None)
        row["status"] = rs.run_cli(args.src, ["status", str(campaign)], args.timeout,
                                   args.repeats, None)
        print(f"  status: first {rs.shown(row['status_first'])}; then "
              f"{rs.shown(row['status'])}", flush=True)
        if not args.no_index:
            cold(campaign)
            row["index_cold"] = index_build(args.src, campaign, args.timeout)
            print(f"  index from the records: {rs.shown(row['index_cold'])}", flush=True)
        if not args.no_report:
            cold(campaign)
            row["report_cold"] = rs.run_cli(args.src, ["report", str(campaign)], args.timeout,
                                            1, None)
            row["report_warm"] = rs.run_cli(args.src, ["report", str(campaign)], args.timeout,
                                            args.repeats, None)
            print(f"  report: cold {rs.shown(row['report_cold'])}; warm "
                  f"{rs.shown(row['report_warm'])}", flush=True)
        row["sessions"] = []
        for i in range(args.sessions):
            done = session(args.src, campaign, args.shape,
                           100 - len(list((campaign / "sessions").iterdir())))
            row["sessions"].append(done)
            print(f"  session {i + 1}: {done['ran']} records, wall {done['wall_s']:.1f} s, end "
                  f"{_seconds(done['end_s'])} (exit {done['exit']}){done['output_tail']}",
                  flush=True)
        row["resumed"] = session(args.src, campaign, args.shape, None)
        print(f"  resumed, nothing left: wall {row['resumed']['wall_s']:.1f} s (exit "
              f"{row['resumed']['exit']}){row['resumed']['output_tail']}", flush=True)
        records = sum(1 for _ in (campaign / "points").glob("*/rep*.try*/record.json"))
        row["disk_bytes"] = disk_bytes(campaign)
        # The store's own bytes: records, folders, index and logs, sessions; not the raw
        # output, nor the report's files.
        row["bytes_per_record_beyond_raw_output"] = round(sum(
            v for k, v in row["disk_bytes"].items() if k not in NOT_THE_STORES) / records)
        print(f"  on disk per record beyond raw output: "
              f"{row['bytes_per_record_beyond_raw_output']} B ({row['disk_bytes']})", flush=True)
        rows = [r for r in rows if not (r["size"] == size and r["code"] == row["code"])] + [row]
        out.write_text(json.dumps({"what": __doc__.split("\n\n")[0], "cpus": os.cpu_count(),
                                   "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
