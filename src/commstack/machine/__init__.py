"""Machine facts (site-configs/<machine>/machine.yaml): node layout, scheduler, launchers."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import jsonschema
import yaml

from commstack import bounds, flavours
from commstack.flavours import Placement
from commstack.placement.cpu_map import CpuMap, CpuMapError
from commstack.yaml_errors import one_line

_SCHEMA = json.loads(Path(__file__).with_name("schema.json").read_text())
# launchers.<flavour> and mapping.<m>.<flavour>: the flavour names are the flavour modules'.
for _name in flavours.names():
    _SCHEMA["properties"]["launchers"]["properties"][_name] = {"$ref": "#/$defs/launcher"}
    _SCHEMA["$defs"]["placement"]["properties"][_name] = {"$ref": "#/$defs/flavour_placement"}


def _entry(table: Dict[str, Any], key: str) -> Any:
    """A flavour's entry of machine.yaml's launchers or mapping.<m>, or a key of it (None: not
    declared)."""
    return table[key] if key in table else None


class MachineError(ValueError):
    """A machine.yaml that does not validate, or a machine that is not described."""


@dataclass(frozen=True)
class LaunchFacts:
    """What machine.yaml says of one flavour's launches under one mapping; without machine facts
    (``LaunchFacts()``) nothing is declared."""

    launcher: Dict[str, Any] = field(default_factory=dict)  # launchers.<flavour>
    network_env: Dict[str, str] = field(default_factory=dict)  # network.env
    placement: Optional[Placement] = None  # mapping.<m>.<flavour>
    cpu_map: Optional[CpuMap] = None  # mapping.<m>.cpu_map
    # The map the flavour's own placement is filled from: mapping.<m>.<flavour>.cpu_map, else
    # mapping.<m>.cpu_map.
    flavour_cpu_map: Optional[CpuMap] = None
    # mapping.<m> as written: a scheduler's step reads its own key there (its distribution).
    mapping_facts: Dict[str, Any] = field(default_factory=dict)
    node: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Machine:
    name: str
    path: Optional[Path]
    facts: Dict[str, Any] = field(default_factory=dict)
    # The machine.yaml's own facts (its default node type) when these are another node type's.
    default: Optional["Machine"] = field(default=None, repr=False, compare=False)

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
        return _entry(self.facts.get("launchers") or {}, flavour)

    def placement(self, mapping: str) -> Dict[str, Any]:
        """mapping.<mapping> as written: the scheduler's step arguments and each flavour's
        placement."""
        return _entry(self.facts.get("mapping") or {}, mapping) or {}

    def cpu_map(self, mapping: str, flavour: Optional[str] = None) -> Optional[CpuMap]:
        """mapping.<m>.<flavour>.cpu_map (the flavour's own, with ``flavour``), else
        mapping.<m>.cpu_map, over this node type's sockets, NUMA domains and cores; None when
        neither is declared."""
        own = _entry(self.placement(mapping), flavour) if flavour else None
        declared, key = ((own["cpu_map"], f"mapping.{mapping}.{flavour}.cpu_map")
                         if isinstance(own, dict) and "cpu_map" in own
                         else (_entry(self.placement(mapping), "cpu_map"), f"mapping.{mapping}.cpu_map"))
        if declared is None:
            return None
        try:
            return CpuMap.from_facts(declared, self.node)
        except CpuMapError as exc:
            where = f" (node type {self.node_type})" if self.node_type else ""
            raise MachineError(f"{self.path or self.name}: {key}{where}: {exc}") from None

    def flavour_placement(self, flavour: str, mapping: str) -> Optional[Placement]:
        """mapping.<m>.<flavour>: a list is its launcher's arguments; a mapping gives args and
        env. None when not declared (the flavour's built-in placement applies)."""
        declared = _entry(self.placement(mapping), flavour)
        if declared is None:
            return None
        if isinstance(declared, list):
            return Placement.of(declared, source="machine.yaml")
        return Placement.of(_entry(declared, "args") or (), _entry(declared, "env"),
                            source="machine.yaml")

    def launch_facts(self, flavour: str, mapping: Optional[str]) -> LaunchFacts:
        """Everything a launch of ``flavour`` under ``mapping`` (None: no mapping) reads here."""
        if not mapping:
            return LaunchFacts(self.launcher(flavour) or {}, self.network_env, node=self.node)
        return LaunchFacts(self.launcher(flavour) or {}, self.network_env,
                           placement=self.flavour_placement(flavour, mapping),
                           mapping_facts=self.placement(mapping), node=self.node,
                           cpu_map=self.cpu_map(mapping),
                           flavour_cpu_map=self.cpu_map(mapping, flavour))

    @property
    def node_type(self) -> Optional[str]:
        """The name of the node type these facts describe (None: the machine has one kind)."""
        return self.facts.get("node_type")

    @property
    def node_types(self) -> List[str]:
        """Every node type's name, the default first ([] when the machine declares none); the
        same whichever node type these facts are."""
        base = self.default or self
        others = list(base.facts.get("node_types", {}))
        return [base.node_type, *others] if base.node_type else others

    def with_node_type(self, name: Optional[str]) -> "Machine":
        """These facts for node type ``name``: its node, network and scheduler keys replace the
        default's. None or this node type's name: these facts unchanged; the default's name: the
        default's facts."""
        if name is None or name == self.node_type:
            return self
        base = self.default or self
        if name == base.node_type:
            return base
        declared = base.facts.get("node_types", {})
        if name not in declared:
            known = ", ".join(self.node_types) or "none (it declares no node_types)"
            raise MachineError(f"{self.path or self.name}: no node type {name!r}; "
                               f"node types: {known}")
        chosen = declared[name]
        facts = {**base.facts, "node_type": name, "node": dict(chosen["node"])}
        if "network" in chosen:
            facts["network"] = dict(chosen["network"])
            # the machine's simulation: models the default node type's network, not this one's
            facts.pop("simulation", None)
        facts["scheduler"] = {**base.scheduler, **chosen.get("scheduler", {})}
        if chosen.get("description"):
            facts["description"] = chosen["description"]
        return Machine(self.name, self.path, facts, default=base)

    @property
    def network_env(self) -> Dict[str, str]:
        return {k: str(v) for k, v in self.facts.get("network", {}).get("env", {}).items()}


# launchers.<flavour>.command words that mean "a step of the scheduler's allocation"
# (commstack.schedulers: each scheduler's step_launcher; tests/test_schedulers_flux.py keeps them equal).
STEP_LAUNCHERS = ("srun", "flux")


def machine_launcher(machine: Optional[Machine], flavour: str, allocation: object
                     ) -> Optional[str]:
    """machine.yaml's launcher for a flavour on this node (launchers.<flavour>.command), when
    launching locally (no ``allocation``) and it is not a scheduler's step launcher."""
    command = ((machine.launcher(flavour) if machine else None) or {}).get("command")
    return command if allocation is None and command not in (None, *STEP_LAUNCHERS) else None


def load_machine_file(path: Path) -> Machine:
    try:
        data = yaml.safe_load(bounds.read_text(path, bounds.MAX_CONFIG_BYTES, "machine facts"))
    except (OSError, yaml.YAMLError, ValueError, RecursionError) as exc:
        # ValueError: too large, not UTF-8, or a 5000-digit number
        raise MachineError(f"{path}: cannot read machine facts: {one_line(exc)}") from None
    errors = sorted(jsonschema.Draft202012Validator(_SCHEMA).iter_errors(data or {}),
                    key=lambda e: list(e.absolute_path))
    if errors:
        # One sentence: the first problems, each cut (a value may be a whole aliased list).
        shown = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or '(top level)'}: "
                          f"{one_line(ValueError(e.message))[:150]}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise MachineError(f"{path}: {shown}{more}")
    return Machine(data["machine"], Path(path), data)


def find_machine(name: str, start: Path, node_type: Optional[str] = None) -> Optional[Machine]:
    """site-configs/<name>/machine.yaml: under $COMMSTACK_SITE_CONFIGS, else in the first ancestor
    of ``start`` (the matrix) that has one, else in this commstack checkout; with ``node_type``
    (a matrix's), the facts of that node type."""
    machine = _find_machine_file(name, start)
    if node_type is None:
        return machine
    if machine is None:
        raise MachineError(f"node_type {node_type!r} needs machine facts, but there is no "
                           f"site-configs/{name}/machine.yaml")
    return machine.with_node_type(node_type)


def _find_machine_file(name: str, start: Path) -> Optional[Machine]:
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
