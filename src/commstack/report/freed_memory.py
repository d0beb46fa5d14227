"""Large arrays given back to the system when freed, so that a report's peak memory is what it
holds, not what it once held.

glibc serves an allocation above its mmap threshold (128 KiB) with its own mapping, returned
on free; but each such free raises the threshold to that size (up to 32 MiB), so the report's
next arrays of a few million entries come from the heap, whose freed middle is kept. A report
of 100,000 records allocates and frees many arrays of 2.4 million samples: with the threshold
left to move, its process held about 1.16 GB at its peak; fixed at 128 KiB, about 0.99 GB
(docs/measured.md). ``mallopt(M_MMAP_THRESHOLD, ...)`` fixes it and stops it moving (glibc's
mallopt(3)). Elsewhere (another C library, another system) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_M_MMAP_THRESHOLD = -3  # glibc <malloc.h>
_THRESHOLD = 128 * 1024  # glibc's default, which it would otherwise raise


def return_large_frees() -> bool:
    """Fix glibc's mmap threshold at its default; False where this is not glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, _THRESHOLD) == 1
