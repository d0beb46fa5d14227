"""Find a stack's launcher and benchmark executables, and the environment they need."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from commstack import flavours
from commstack.flavours import Flavour
from commstack.matrix.model import Stack


class StackError(RuntimeError):
    """A stack whose launcher or benchmark cannot be found."""


@dataclass
class ResolvedStack:
    stack: Stack
    launcher: str  # absolute path
    kind: Flavour  # the flavour's module object (commstack.flavours), looked up once
    bin_dirs: List[str] = field(default_factory=list)
    lib_dirs: List[str] = field(default_factory=list)
    # Review mode (`commstack plan` of a machine that is not this one): what could not be found
    # here, instead of an error; paths are then where the stack says its files will be.
    review: bool = False
    unresolved: List[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.stack.name

    @property
    def flavour(self) -> str:
        return self.stack.flavour

    def find(self, executable: str) -> str:
        """Absolute path of a benchmark executable: in the stack's directories when it has any
        (another MPI's binary of the same name on PATH must not be picked up), else on PATH."""
        if os.sep in executable:
            if os.access(executable, os.X_OK):
                return os.path.abspath(executable)
            raise StackError(f"stack {self.name!r}: benchmark executable {executable} does not exist")
        dirs = os.pathsep.join(self.bin_dirs) if self.bin_dirs else os.environ.get("PATH", "")
        if self.stack.conduit:  # packages/gasnet-tests installs testlarge-<conduit>, ...
            found = shutil.which(f"{executable}-{self.stack.conduit}", path=dirs)
            if found:
                return found
        found = shutil.which(executable, path=dirs)
        if not found:
            where = ", ".join(self.bin_dirs) or "PATH"
            why = (f"stack {self.name!r}: benchmark executable {executable!r} not found in {where}; "
                   "build it (see docs/howto/set-up-spack.md) or point the stack's `bin` at it")
            if not self.review:
                raise StackError(why)
            self._unresolved(why)
            return os.path.join(self.bin_dirs[0], executable) if self.bin_dirs else executable
        return found

    def _unresolved(self, why: str) -> None:
        self.unresolved.append(why)

    def prepends(self) -> Dict[str, List[str]]:
        """Directories to put in front of PATH and LD_LIBRARY_PATH."""
        return {k: v for k, v in (("PATH", self.bin_dirs), ("LD_LIBRARY_PATH", self.lib_dirs)) if v}

    def env_delta(self) -> Dict[str, str]:
        """Plain variables this stack sets (its flavour's, e.g. I_MPI_ROOT, and its `env`)."""
        delta = self.kind.stack_env(self.stack.root)
        delta.update(dict(self.stack.env))
        return delta

    def full_env(self) -> Dict[str, str]:
        """The caller's environment with this stack's directories and variables applied."""
        return apply_env(os.environ, self.env_delta(), self.prepends())


def apply_env(base: "Mapping[str, str]", env: Dict[str, str],
              prepends: Dict[str, List[str]]) -> Dict[str, str]:
    full = dict(base)
    for name, dirs in prepends.items():
        full[name] = os.pathsep.join(dirs + ([full[name]] if full.get(name) else []))
    full.update(env)
    return full


def resolve(stack: Stack, machine_launcher: Optional[str] = None, review: bool = False
            ) -> ResolvedStack:
    """Find the stack's directories and launcher: the stack's own `launcher`, else the machine's
    (launchers.<flavour>.command, for launches on this node), else the flavour's default (a GASNet-EX
    conduit's own spawner: amudprun for udp).

    ``review``: nothing missing is an error; it is listed in ``unresolved`` and the paths are
    those the stack names (a view's bin/ and lib/), for a plan of another machine's campaign."""
    problems: List[str] = []

    def missing(why: str) -> None:
        if not review:
            raise StackError(f"stack {stack.name!r}: {why}")
        problems.append(f"stack {stack.name!r}: {why}")

    if stack.unresolved:
        missing(stack.unresolved)
    bin_dirs: List[str] = []
    lib_dirs: List[str] = []
    for folder in stack.bin.split(os.pathsep) if stack.bin else []:
        if not os.path.isdir(folder):
            missing(f"bin {folder} is not a directory")
        bin_dirs.append(folder)
    if stack.root:
        root = Path(stack.root)
        if not root.is_dir():
            if not stack.unresolved:
                missing(f"{'view' if stack.view else 'prefix'} {stack.root} is not a directory")
            bin_dirs.append(str(root / "bin"))
            lib_dirs.append(str(root / "lib"))
        else:
            if (root / "bin").is_dir():
                bin_dirs.append(str(root / "bin"))
            for lib in ("lib", "lib64"):
                if (root / lib).is_dir():
                    lib_dirs.append(str(root / lib))
    kind = flavours.get(stack.flavour)
    launcher = stack.launcher or machine_launcher or kind.default_launcher(stack.conduit)
    path = os.pathsep.join(bin_dirs + [os.environ.get("PATH", "")])
    found = launcher if os.sep in launcher and os.access(launcher, os.X_OK) else shutil.which(
        launcher, path=path
    )
    if not found:
        missing(f"launcher {launcher!r} not found in {', '.join(bin_dirs) or 'the stack'} or PATH")
        found = launcher
    # A path is made absolute; one still naming an unset variable (a review) is shown as written.
    absolute = os.sep in found and "${" not in found
    return ResolvedStack(stack, os.path.abspath(found) if absolute else found, kind,
                         bin_dirs, lib_dirs, review, problems)
