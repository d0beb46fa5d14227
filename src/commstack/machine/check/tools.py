"""Running the machine's own tools: their output, or Unreadable saying why not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional, Sequence

from commstack.machine.check.result import Unreadable

TIMEOUT = 20.0


def output(argv: Sequence[str], *, stderr_too: bool = False, timeout: float = TIMEOUT) -> str:
    """stdout (and stderr) of a tool that must exist and succeed."""
    program = argv[0]
    if "/" not in program and shutil.which(program) is None:
        raise Unreadable(f"{program} not found on PATH")
    if "/" in program and not Path(program).is_file():
        raise Unreadable(f"{program} does not exist")
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Unreadable(f"`{' '.join(argv)}` took more than {timeout:.0f} s") from None
    except OSError as exc:
        raise Unreadable(f"`{' '.join(argv)}`: {exc.strerror}") from None
    text = proc.stdout + (proc.stderr if stderr_too else "")
    if proc.returncode != 0:
        first = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[:1]
        raise Unreadable(f"`{' '.join(argv)}` failed (exit {proc.returncode})"
                         + (f": {first[0][:200]}" if first else ""))
    return text


def read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror}") from None


def which(program: str, prefix: Optional[str] = None) -> Optional[str]:
    """``prefix``/bin/``program`` when there is one, else ``program`` on PATH."""
    if prefix:
        candidate = Path(prefix) / "bin" / program
        if candidate.is_file():
            return str(candidate)
        return None
    return shutil.which(program)
