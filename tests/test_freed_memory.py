"""commstack.report.freed_memory: large arrays freed by a report go back to the system."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# glibc's trap: after one large array is freed, the next ones (smaller than it) come from the
# heap; a small allocation after each keeps their freed space from being returned.
PROBE = """
import sys
sys.path.insert(0, sys.argv[2])
import numpy as np

def rss_mb():
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) // 1024

if sys.argv[1] == "fixed":
    from commstack.report.freed_memory import return_large_frees
    assert return_large_frees()
big = np.ones(4_000_000)
del big
arrays, pins = [], []
for _ in range(10):
    arrays.append(np.ones(2_000_000))  # 16 MB each
    pins.append(bytearray(100_000))
before = rss_mb()
del arrays
print(before - rss_mb())
"""


def _returned(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode, str(SRC)], capture_output=True,
                         text=True, check=True, timeout=120)
    return int(out.stdout.split()[-1])


def test_freed_arrays_are_returned_once_the_threshold_is_fixed():
    pytest.importorskip("numpy", reason="skipped: numpy not installed (the report extra)")
    from commstack.report.freed_memory import return_large_frees

    if not Path("/proc/self/status").is_file() or not return_large_frees():
        pytest.skip("skipped: not Linux with glibc (mallopt's threshold is glibc's)")
    # 160 MB freed: left to move, the threshold keeps nearly all of it in the process (on
    # Debian 12's glibc 2.36: none leaves); fixed, nearly all of it leaves.
    if _returned("moving") >= 140:
        pytest.skip("skipped: this C library returns the freed arrays anyway (no trap to show)")
    assert _returned("fixed") >= 140
