"""Write a report's large derived files in a child process while the report goes on.

summary.csv of 100,000 records is some 100 MB of text; pandas formats it in about 8 CPU-seconds,
which the report's process would otherwise spend before its sections. A forked child writes it
(streamed, atomically, through ``store.files.replace``) from the frame the report already holds,
and :meth:`Beside.finish` waits for it before report.md is written, so a finished report always
stands beside a complete summary. Where fork is not available the file is written in place.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path
from typing import BinaryIO, Callable, List, Tuple

from commstack.errors import CampaignError
from commstack.store.files import replace


def _write(path: Path, write: Callable[[BinaryIO], None]) -> None:
    try:
        replace(path, write)
    except Exception as exc:  # one sentence, as every reader error (the parent names the file)
        print(f"{path}: not written ({exc})", file=sys.stderr)
        os._exit(1)


class Beside:
    """Files written by forked children; :meth:`finish` waits and names any that failed."""

    def __init__(self) -> None:
        self.children: List[Tuple[Path, object]] = []
        self.fork = os.name == "posix" and "fork" in multiprocessing.get_all_start_methods()

    def write(self, path: Path, write: Callable[[BinaryIO], None]) -> None:
        """``write(file)`` into a temporary beside ``path``, then put in its place, in a child
        (here, without fork)."""
        if not self.fork:
            replace(path, write)
            return
        child = multiprocessing.get_context("fork").Process(target=_write, args=(path, write),
                                                            daemon=True)
        child.start()
        self.children.append((path, child))

    def finish(self) -> None:
        """Wait for every child; CampaignError naming the files a child could not write."""
        failed = []
        for path, child in self.children:
            child.join()  # type: ignore[attr-defined]
            if child.exitcode != 0:  # type: ignore[attr-defined]
                failed.append(path.name)
        self.children = []
        if failed:
            raise CampaignError(f"{', '.join(failed)} could not be written (the reason is above)")

    def close(self) -> None:
        """Wait for the children of a report that failed elsewhere (its error is the one shown)."""
        for _path, child in self.children:
            child.join()  # type: ignore[attr-defined]
        self.children = []
