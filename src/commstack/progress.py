"""Progress of a sweep, for its log lines: runs done of the total, failures, time left."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import List


@dataclass
class Progress:
    total: int  # (point, repeat) pairs this sweep considers
    parallel: int = 1
    handled: int = 0  # run now, or found done/failed before
    failed: int = 0
    durations: List[float] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, runs: int) -> None:
        """Count a round of runs decided while the sweep goes (adaptive repeats)."""
        with self._lock:
            self.total += runs

    def skipped(self) -> None:
        with self._lock:
            self.handled += 1

    def ran(self, ok: bool, seconds: float) -> str:
        """Count a run; the progress text for its log line."""
        with self._lock:
            self.handled += 1
            self.failed += not ok
            self.durations.append(seconds)
            left = self.total - self.handled
            eta = sum(self.durations) / len(self.durations) * left / max(1, self.parallel)
            return (f"{self.handled}/{self.total}, {self.failed} failed"
                    + (f", ~{_duration(eta)} left" if left else ""))


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
