"""Which local stack stands in for a remote one (site-configs/<rehearsal machine>/counterparts.yaml,
else site-configs/slurm-ci/counterparts.yaml)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from commstack.matrix.model import MatrixError

SITE_CONFIGS = Path(__file__).resolve().parents[3] / "site-configs"
TABLE = SITE_CONFIGS / "slurm-ci" / "counterparts.yaml"


def table_for(machine: str) -> Path:
    """The counterparts of a rehearsal machine: its own table, else the Slurm test cluster's
    (every local rehearsal machine runs this machine's builds: environments/local)."""
    own = SITE_CONFIGS / machine / "counterparts.yaml"
    return own if own.is_file() else TABLE
DROP = object()  # a runtime value to leave out of the rehearsal


@dataclass
class Counterpart:
    stack: Dict[str, Any]
    executables: Dict[str, str] = field(default_factory=dict)
    note: Optional[str] = None


@dataclass
class Counterparts:
    rules: List[Dict[str, Any]]
    values: Dict[str, Optional[Dict[str, str]]]

    @classmethod
    def load(cls, path: Path = TABLE) -> "Counterparts":
        data = yaml.safe_load(path.read_text()) or {}
        return cls(list(data.get("rules") or []), dict(data.get("values") or {}))

    def for_stack(self, name: str, spec: Dict[str, Any], benchmark: str) -> Counterpart:
        spack = spec.get("spack") or {}
        view = f"{spack.get('env')}/{spack.get('view')}" if spack else None
        for rule in self.rules:
            if "view" in rule and rule["view"] != view:
                continue
            if "flavour" in rule and rule["flavour"] != spec.get("flavour"):
                continue
            if "benchmark" in rule and not benchmark.startswith(rule["benchmark"]):
                continue
            return Counterpart(dict(rule["stack"]), dict(rule.get("executables") or {}),
                               rule.get("note"))
        raise MatrixError(f"stack {name!r} ({view or spec.get('flavour')}): no local counterpart "
                          f"in {TABLE.name}; add a rule for it")

    def value(self, name: str, value: Any) -> Any:
        """A runtime variable's value as the rehearsal sets it (DROP: not at all)."""
        if name not in self.values:
            return value
        table = self.values[name]
        if table is None:
            return DROP
        text = str(value)
        if "pattern" in table:  # a rewrite of the value's syntax
            match = re.fullmatch(table["pattern"], text)
            return match.expand(table["to"]) if match else value
        if text in table:
            return table[text]
        tokens = [table.get(t, t) for t in text.split(",")]
        return ",".join(dict.fromkeys(tokens))
