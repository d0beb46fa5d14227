"""Draw the report's section plots: only those whose data changed, several at once.

Each plot's input (its title, condition, numbers and the plotting code's version) is hashed; the
hashes of the plots drawn are kept in ``report/.figures.json``. A plot whose PNG exists with
the same hash is not drawn again. The others are drawn in worker processes, one per CPU,
started when the report begins: forked from a process that has not read the campaign yet, they
import matplotlib (half a second) while the records are read, and draw (about a quarter of a
CPU-second per figure, a worker keeping its figure from one plot to the next) while the
report's process writes the tables.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Dict, List, Tuple

from commstack.report.tables import Section
from commstack.store.files import replace

HASHES = ".figures.json"
# Bump when the drawing code changes what a plot looks like: every plot is drawn again.
VERSION = "5"  # 5: unhinted text, fewer heat-map labels, the colorbar's top labelled


def pyplot():
    """matplotlib.pyplot with the Agg backend, imported where a figure is drawn: it takes half
    a second, which a report whose figures are drawn in worker processes does not pay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fingerprint(section: Section) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([VERSION, section.title, section.metric, section.repeats,
                              section.condition.slug(), str(section.mean.index.name)]).encode())
    for frame in (section.mean, section.low, section.high):
        digest.update(json.dumps([[str(c) for c in frame.columns],
                                  [str(i) for i in frame.index]]).encode())
        digest.update(frame.to_numpy(dtype=float).tobytes())
    return digest.hexdigest()


def _import_plots() -> None:
    import commstack.report.plots  # noqa: F401  (matplotlib: half a second, paid once per worker)


def _draw(job: Tuple[Section, Path]) -> str:
    from commstack.report.plots import plot_section

    section, path = job
    plot_section(section, path)
    return path.name


class Drawer:
    """Plots are handed in as their sections are made and drawn meanwhile, in worker processes
    started at once (on a machine of one CPU, in this process); :meth:`finish` waits for them."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self.stored = _read(out_dir / HASHES)
        self.wanted: Dict[str, str] = {}
        self.pending: list = []
        self.drawn: List[str] = []
        workers = os.cpu_count() or 1
        self.pool = None
        if workers > 1 and os.name == "posix":
            self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(
                "fork"))
            for _ in range(workers):
                self.pool.submit(_import_plots)

    def add(self, section: Section, path: Path) -> None:
        digest = fingerprint(section)
        self.wanted[path.name] = digest
        if self.stored.get(path.name) == digest and path.is_file():
            return  # drawn from the same numbers before
        if self.pool is None:
            self.drawn.append(_draw((section, path)))
        else:
            self.pending.append(self.pool.submit(_draw, (section, path)))

    def close(self) -> None:
        """Stop drawing (an error elsewhere ended the report)."""
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def finish(self) -> List[str]:
        """Wait for the plots; record their hashes; the names of those drawn now."""
        try:
            self.drawn += [future.result() for future in self.pending]
        finally:
            if self.pool is not None:
                self.pool.shutdown()
        kept = {name: h for name, h in self.stored.items() if (self.out_dir / name).is_file()}
        kept.update(self.wanted)
        replace(self.out_dir / HASHES, (json.dumps(kept, indent=1, sort_keys=True) + "\n"
                                        ).encode())
        return self.drawn


def draw_all(jobs: List[Tuple[Section, Path]], out_dir: Path) -> List[str]:
    """Draw what changed; returns the names of the PNGs drawn (the rest were current)."""
    drawer = Drawer(out_dir)
    try:
        for section, path in jobs:
            drawer.add(section, path)
    except BaseException:
        drawer.close()
        raise
    return drawer.finish()


def _read(path: Path) -> Dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
