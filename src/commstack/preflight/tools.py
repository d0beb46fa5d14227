"""Run an installation's own listing tools (ompi_info, ucx_info, impi_info, mpivars) once.

A tool's output is cached under a key made of the tool itself (resolved path, modification time,
size), its arguments and the environment that changes what it prints (library path, I_MPI_ROOT,
UCX_*/UCC_* variables): in memory for this process, and on disk in ``~/.cache/commstack/preflight``
(``$COMMSTACK_PREFLIGHT_CACHE`` elsewhere, ``off`` for none) so the shards of a job array and the
next ``commstack run`` pay nothing either. A rebuilt or upgraded tool has a new key.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

# Variables that change what a listing tool prints; everything else in the environment does not.
_KEY_VARIABLES = ("LD_LIBRARY_PATH", "I_MPI_ROOT", "OPAL_PREFIX", "UCX_MODULE_DIR")
_KEY_PREFIXES = ("UCX_", "UCC_")
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ToolOutput:
    argv: List[str]
    returncode: int
    text: str  # stdout, then stderr (UCX logs its parse errors to stdout)

    @property
    def command(self) -> str:
        return " ".join([Path(self.argv[0]).name, *self.argv[1:]])


def default_directory() -> Optional[Path]:
    configured = os.environ.get("COMMSTACK_PREFLIGHT_CACHE")
    if configured:
        return None if configured == "off" else Path(configured)
    return Path.home() / ".cache" / "commstack" / "preflight"


def find_tool(tool: str, env: Dict[str, str], launcher: str = "") -> Optional[str]:
    """A tool on the stack's PATH; Debian's suffixed name first (mpirun.openmpi -> ompi_info.openmpi)."""
    name = Path(launcher).name
    suffix = name[name.index("."):] if "." in name and name.split(".")[0] in ("mpirun", "mpiexec") else ""
    path = env.get("PATH", "")
    return (shutil.which(tool + suffix, path=path) if suffix else None) or shutil.which(tool, path=path)


class ToolCache:
    """Tool outputs by key; ``runs`` counts tools really started, ``hits`` outputs reused."""

    def __init__(self, directory: Optional[Path] = None, use_disk: bool = True) -> None:
        self.directory = (directory or default_directory()) if use_disk else None
        self.memory: Dict[str, ToolOutput] = {}
        self.runs = 0
        self.hits = 0

    def run(self, exe: str, args: Sequence[str], env: Dict[str, str]) -> ToolOutput:
        key = self._key(exe, args, env)
        if key in self.memory:
            self.hits += 1
            return self.memory[key]
        found = self._load(key)
        if found is None:
            found = self._start(exe, args, env)
            self._save(key, found)
        else:
            self.hits += 1
        self.memory[key] = found
        return found

    def _start(self, exe: str, args: Sequence[str], env: Dict[str, str]) -> ToolOutput:
        self.runs += 1
        argv = [exe, *args]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                  timeout=TIMEOUT_S, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return ToolOutput(argv, -1, f"{Path(exe).name} could not run: {exc}")
        return ToolOutput(argv, proc.returncode, proc.stdout + proc.stderr)

    @staticmethod
    def _key(exe: str, args: Sequence[str], env: Dict[str, str]) -> str:
        real = os.path.realpath(exe)
        try:
            st = os.stat(real)
            stamp = [st.st_mtime_ns, st.st_size]
        except OSError:
            stamp = []
        relevant = {k: v for k, v in env.items() if k in _KEY_VARIABLES or k.startswith(_KEY_PREFIXES)}
        text = json.dumps([real, stamp, list(args), sorted(relevant.items())])
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _load(self, key: str) -> Optional[ToolOutput]:
        if self.directory is None:
            return None
        try:
            data = json.loads((self.directory / f"{key}.json").read_text())
            return ToolOutput(list(data["argv"]), int(data["returncode"]), str(data["text"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _save(self, key: str, output: ToolOutput) -> None:
        if self.directory is None or output.returncode == -1:
            return
        try:  # a cache that cannot be written costs time, never a run
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                json.dump({"argv": output.argv, "returncode": output.returncode,
                           "text": output.text}, fh)
            os.replace(tmp, self.directory / f"{key}.json")
        except OSError:
            pass
