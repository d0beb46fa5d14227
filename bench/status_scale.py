"""`commstack status` at scale: today's code (a git worktree of a commit) beside the working
tree's, on the campaigns ``report_scale.py`` generates (real IMB-MPI1 rows, written through the
store's own record writer; 1,000 / 10,000 / 100,000 records).

The generator writes records as an older commstack did (no status log), so the working tree's
first ``status`` finds no log and rebuilds it from the records, and expands the matrix once
("new, rebuilding"); the runs after it read the log and the expanded points ("new, log kept"), as
every ``status`` after the first following a ``commstack run``, which keeps the log as it
writes. Each command runs in a child process (wall time, peak RSS; report_scale.measure); medians
over ``--repeats``.

  python bench/status_scale.py [--sizes 1000 10000 100000] [--base main] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import report_scale as rs  # noqa: E402

from commstack.store import state_log  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--base", default="main", help="commit of today's code")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="generated campaigns (kept; default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=rs.ROOT / "bench/results/status_scale.json")
    args = parser.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="status-scale-"))
    worktree = Path(tempfile.mkdtemp(prefix="status-base-")) / "tree"
    base = subprocess.run(["git", "-C", str(rs.ROOT), "rev-parse", "--short", args.base],
                          check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "-C", str(rs.ROOT), "worktree", "add", "--detach", str(worktree),
                    base], check=True, capture_output=True)
    rows = []
    try:
        for src in (worktree / "src", rs.ROOT / "src"):
            rs.compile_code(src)
        for size in args.sizes:
            campaign = rs.generate(work, size)
            count = sum(1 for _ in campaign.glob("points/*/rep*.try*/record.json"))
            print(f"{size}: {count} records in {campaign}", flush=True)
            command = ["status", str(campaign)]
            row = {"size": size, "records": count}
            row["today"] = rs.run_cli(worktree / "src", command, 600, args.repeats, None)
            state_log.log_path(campaign).unlink(missing_ok=True)
            for cached in (campaign / "index").glob(".[pi][od]*-*"):  # .points-*, .ids-*
                cached.unlink()
            row["new_rebuilding"] = rs.run_cli(rs.ROOT / "src", command, 600, 1, None)
            row["new_log_kept"] = rs.run_cli(rs.ROOT / "src", command, 600, args.repeats, None)
            row["log_bytes"] = os.path.getsize(state_log.log_path(campaign))
            for key in ("today", "new_rebuilding", "new_log_kept"):
                print(f"  {key}: {rs.shown(row[key])} (runs: {row[key]['wall_all_s']})",
                      flush=True)
            rows.append(row)
            args.out.write_text(json.dumps(
                {"what": "commstack status at scale, today's code vs the working tree",
                 "base_commit": base, "cpus": os.cpu_count(), "repeats": args.repeats,
                 "rows": rows}, indent=1) + "\n")
    finally:
        subprocess.run(["git", "-C", str(rs.ROOT), "worktree", "remove", "--force",
                        str(worktree)], check=False)
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
