"""Machine facts (site-configs/<machine>/machine.yaml): node layout, scheduler, launchers."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import jsonschema
import yaml

from commstack import flavours
from commstack.flavours import Placement

_SCHEMA = json.loads(Path(__file__).with_name("schema.json").read_text())
# launchers.<flavour> and mapping.<m>.<flavour>: the flavour names are the flavour modules'.
for _name in flavours.names():
    _SCHEMA["properties"]["launchers"]["properties"][_name] = {"$ref": "#/$defs/launcher"}
    _SCHEMA["$defs"]["placement"]["properties"][_name] = {"$ref": "#/$defs/flavour_placement"}


class MachineError(ValueError):
    """A machine.yaml that does not validate, or a machine that is not described."""


@dataclass
class Machine:
    name: str
    path: Optional[Path]
    facts: Dict[str, Any] = field(default_factory=dict)

    @property
    def node(self) -> Dict[str, Any]:
        return self.facts.get("node", {})

    @property
    def cores_per_node(self) -> int:
        return int(self.node["sockets"]) * int(self.node["cores_per_socket"])

    @property
    def scheduler(self) -> Dict[str, Any]:
        return self.facts.get("scheduler", {})

    def launcher(self, flavour: str) -> Optional[Dict[str, Any]]:
        return self.facts.get("launchers", {}).get(flavour)

    def placement(self, mapping: str) -> Dict[str, Any]:
        """mapping.<mapping> as written: srun's arguments and each flavour's placement."""
        return self.facts.get("mapping", {}).get(mapping, {})

    def srun_distribution(self, mapping: str) -> Optional[List[str]]:
        """srun's arguments for a mapping (mapping.<m>.srun), or None when not declared."""
        args = self.placement(mapping).get("srun")
        return None if args is None else [str(a) for a in args]

    def flavour_placement(self, flavour: str, mapping: str) -> Optional[Placement]:
        """mapping.<m>.<flavour>: a list is its launcher's arguments; a mapping gives args and
        env. None when not declared (the flavour's built-in placement applies)."""
        declared = self.placement(mapping).get(flavour)
        if declared is None:
            return None
        if isinstance(declared, list):
            return Placement.of(declared, source="machine.yaml")
        return Placement.of(declared.get("args", ()), declared.get("env"), source="machine.yaml")

    @property
    def network_env(self) -> Dict[str, str]:
        return {k: str(v) for k, v in self.facts.get("network", {}).get("env", {}).items()}


def load_machine_file(path: Path) -> Machine:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise MachineError(f"{path}: cannot read machine facts: {exc}") from None
    errors = sorted(jsonschema.Draft202012Validator(_SCHEMA).iter_errors(data or {}),
                    key=lambda e: list(e.absolute_path))
    if errors:
        raise MachineError("\n".join(
            f"{path}: {'.'.join(map(str, e.absolute_path)) or '(top level)'}: {e.message}"
            for e in errors))
    return Machine(data["machine"], Path(path), data)


def find_machine(name: str, start: Path) -> Optional[Machine]:
    """site-configs/<name>/machine.yaml: under $COMMSTACK_SITE_CONFIGS, else in the first ancestor
    of ``start`` (the matrix) that has one, else in this commstack checkout."""
    roots = [Path(os.environ["COMMSTACK_SITE_CONFIGS"])] if os.environ.get(
        "COMMSTACK_SITE_CONFIGS") else []
    start = start.resolve()
    roots += [folder / "site-configs" for folder in [start, *start.parents]]
    roots.append(Path(__file__).resolve().parents[3] / "site-configs")
    for root in roots:
        candidate = root / name / "machine.yaml"
        if candidate.is_file():
            return load_machine_file(candidate)
    return None
