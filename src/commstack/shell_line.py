"""A launch as one line a user can paste into a shell: the environment it sets (PATH-like
variables with their directories put first), then the quoted argv. The launch command writes it,
the record keeps it and reads it back."""

from __future__ import annotations

import os
import shlex
from typing import Mapping, Sequence


def shell_line(argv: Sequence[str], env: Mapping[str, str],
               prepends: Mapping[str, Sequence[str]]) -> str:
    assignments = [f"{k}={shlex.quote(os.pathsep.join(dirs))}:\"${k}\""
                   for k, dirs in sorted(prepends.items())]
    assignments += [f"{k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    prefix = ["env", *assignments] if assignments else []
    return " ".join(prefix + [shlex.quote(a) for a in argv])
