"""Damaged real outputs through `commstack parse`: no traceback, no time-out, bounded memory.

N mutated copies per family (IMB, OSU, cartex, GASNet-EX, binding reports) of the real outputs
in tests/fixtures (tests/mutations.py: truncation, byte flips, repeated, shuffled and deleted
lines, CRLF, NUL bytes, numbers replaced by nan, inf, 1e309, -5, 99999999999999999999999, ...).
Each input runs in its own child under an address-space limit (RLIMIT_AS) and a time-out; the
child runs the CLI's own entry point, `commstack.cli.main(["parse", FILE, ...])`, forked from a
worker that imported commstack once (a fresh interpreter per input would spend most of the time
importing; `--exec` starts `python -m commstack` per input instead). Printed: per family the exit
statuses, the tracebacks (with the input kept under --keep), the time-outs, the largest
resident size of a child (ru_maxrss: includes the interpreter forked from the worker) and the
slowest input.

Usage: python bench/fuzz.py [--per-family 1000] [--seed 25] [--workers 2] [--limit-mb 2048]
                            [--timeout 20] [--exec] [--keep DIR]
Exit status 1 if any input ended in a traceback, a time-out or an exit status other than 0, 2, 3.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.mutations import FAMILIES, mutate  # noqa: E402

TRACEBACK = "Traceback (most recent call last)"
ALLOWED = {0, 2, 3}


def _limit(limit_mb: int) -> None:
    limit = limit_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _child(argv: List[str], out: Path, err: Path, limit_mb: int) -> None:
    """In the forked child: the CLI on argv, as `python -m commstack` runs it (an exception the
    CLI does not turn into a sentence prints its traceback, as the interpreter would)."""
    with open(out, "w") as stdout, open(err, "w") as stderr:
        os.dup2(stdout.fileno(), 1)
        os.dup2(stderr.fileno(), 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
    code = 1
    try:
        _limit(limit_mb)
        from commstack.cli import main
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: B036 - what the interpreter would print
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, start: float, timeout: float, err: Path) -> Tuple[int, float, int, str]:
    """(exit status or -1 on time-out, seconds, max RSS in KiB, stderr) of child ``pid``."""
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            code = -1
            break
        time.sleep(0.002)
    return code, time.monotonic() - start, usage.ru_maxrss, err.read_text(errors="replace")


def _run_forked(argv: List[str], scratch: Path, limit_mb: int, timeout: float
                ) -> Tuple[int, float, int, str]:
    out, err = scratch / "out", scratch / "err"
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(argv, out, err, limit_mb)
    return _wait(pid, start, timeout, err)


def _run_exec(argv: List[str], scratch: Path, limit_mb: int, timeout: float
              ) -> Tuple[int, float, int, str]:
    err = scratch / "err"
    start = time.monotonic()
    with open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "commstack", *argv],
                                stdout=subprocess.DEVNULL, stderr=stderr,
                                preexec_fn=lambda: _limit(limit_mb))
    return _wait(proc.pid, start, timeout, err)


def _worker(job: Tuple[int, List[Tuple[str, str, int]], Dict]) -> List[dict]:
    """Run one share of the inputs: (family, fixture path, seed) each."""
    index, inputs, opts = job
    if not opts["exec"]:
        import commstack.cli  # noqa: F401 - imported once, forked per input
        import commstack.cli.parse  # noqa: F401
    results = []
    with tempfile.TemporaryDirectory(prefix=f"fuzz{index}-") as tmp:
        scratch = Path(tmp)
        for family, fixture, seed in inputs:
            data = mutate(Path(fixture).read_bytes(), random.Random(seed))
            path = scratch / Path(fixture).name
            path.write_bytes(data)
            argv = ["parse", str(path), *FAMILIES[family][0]]
            run = _run_exec if opts["exec"] else _run_forked
            code, seconds, rss, err = run(argv, scratch, opts["limit_mb"], opts["timeout"])
            lines = [line for line in err.splitlines() if not line.startswith("warning: ")]
            result = {"family": family, "fixture": fixture, "seed": seed, "code": code,
                      "seconds": seconds, "rss_kib": rss, "traceback": TRACEBACK in err,
                      "error_lines": len(lines), "error": lines[-1][:300] if lines else ""}
            if (result["traceback"] or code not in ALLOWED or len(lines) > 1) and opts["keep"]:
                keep = Path(opts["keep"])
                keep.mkdir(parents=True, exist_ok=True)
                stem = f"{family}-{Path(fixture).stem}-{seed}"
                (keep / f"{stem}.in").write_bytes(data)
                (keep / f"{stem}.stderr").write_text(err)
            results.append(result)
            path.unlink()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-family", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit-mb", type=int, default=2048, help="RLIMIT_AS of each child")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--exec", action="store_true", help="a fresh `python -m commstack` per input")
    parser.add_argument("--keep", help="keep failing inputs and their stderr here")
    parser.add_argument("--json", type=Path, help="write every result here")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help=f"comma-separated, of {', '.join(FAMILIES)}")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    inputs: List[Tuple[str, str, int]] = []
    families = args.families.split(",")
    for family, (_, files) in FAMILIES.items():
        if family not in families:
            continue
        fixtures = files()
        inputs += [(family, str(rng.choice(fixtures)), rng.randrange(2 ** 32))
                   for _ in range(args.per_family)]
    rng.shuffle(inputs)
    opts = {"limit_mb": args.limit_mb, "timeout": args.timeout, "exec": args.exec,
            "keep": args.keep}
    shares = [(i, inputs[i::args.workers], opts) for i in range(args.workers)]
    start = time.monotonic()
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        results = [r for share in pool.map(_worker, shares) for r in share]
    wall = time.monotonic() - start

    print(f"{len(results)} mutated inputs, {args.workers} workers, RLIMIT_AS {args.limit_mb} MiB, "
          f"time-out {args.timeout:g} s, seed {args.seed}, {wall:.0f} s wall")
    print(f"{'family':<10} {'inputs':>6} {'exit 0':>7} {'exit 2':>7} {'exit 3':>7} {'other':>6} "
          f"{'tracebacks':>10} {'time-outs':>9} {'multi-line':>10} {'max RSS MB':>10} "
          f"{'slowest s':>9}")
    bad = 0
    for family in families:
        mine = [r for r in results if r["family"] == family]
        codes = Counter(r["code"] for r in mine)
        tracebacks = sum(r["traceback"] for r in mine)
        timeouts = codes[-1]
        other = sum(n for c, n in codes.items() if c not in ALLOWED and c != -1)
        multi = sum(r["error_lines"] > 1 for r in mine)
        bad += tracebacks + timeouts + other + multi
        print(f"{family:<10} {len(mine):>6} {codes[0]:>7} {codes[2]:>7} {codes[3]:>7} {other:>6} "
              f"{tracebacks:>10} {timeouts:>9} {multi:>10} "
              f"{max(r['rss_kib'] for r in mine) / 1024:>10.0f} "
              f"{max(r['seconds'] for r in mine):>9.2f}")
    worst = max(results, key=lambda r: r["rss_kib"])
    print(f"largest resident size: {worst['rss_kib'] / 1024:.0f} MB ({worst['family']}, "
          f"{Path(worst['fixture']).name}, seed {worst['seed']})")
    for r in [r for r in results if r["traceback"] or r["code"] not in ALLOWED][:20]:
        print(f"FAILED {r['family']} {Path(r['fixture']).name} seed {r['seed']}: exit {r['code']}: "
              f"{r['error']}")
    if args.json:
        args.json.write_text(json.dumps(results))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
