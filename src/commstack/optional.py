"""Optional dependencies: import one, or end the command with one sentence naming the install.

Every optional dependency belongs to an extra in pyproject.toml; this is the only place that
turns a missing one into a user error (exit 2) instead of a traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingOptionalDependency(ImportError):
    """An optional Python package a command needs is not installed."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise a one-sentence error with the pip command for ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise MissingOptionalDependency(
            f"{purpose} needs the Python package {top!r}, which is not installed: "
            f"pip install 'commstack[{extra}]' (or: scripts/setup_venv.sh {extra})"
        ) from exc
