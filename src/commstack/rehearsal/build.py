"""The rehearsal's own matrix or tuning plan, written from another machine's, and what it changed.

A matrix becomes its points, each cut down (scale.scale_point) with its stack's local counterpart,
duplicates merged, written as one `zip` (every point of one matrix has the same parameter names);
`rehearsal.json` maps each rehearsal point back to the points it stands for. A tuning plan keeps
its steps and decision rule; its cases and base parameters are cut down the same way.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from commstack import flavours
from commstack.benchmarks import registry
from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix
from commstack.matrix.model import MatrixError, Point
from commstack.rehearsal.counterparts import DROP, Counterpart, Counterparts
from commstack.rehearsal.scale import Budget, scale_point

# A rehearsal point is small: one that runs longer than this is as broken as one that fails.
REHEARSAL_TIMEOUT_S = 300.0
# Keys of a matrix the rehearsal does not carry over: its points are written out, one repeat.
_REPLACED = ("product", "zip", "exclude", "parameters", "stacks", "node_type", "repeats",
             "repeats_across", "campaign")


@dataclass
class Rehearsal:
    source: Path
    machine: str
    kind: str  # "matrix" | "plan"
    data: Dict[str, Any]
    notes: List[str] = field(default_factory=list)
    points: Dict[str, List[str]] = field(default_factory=dict)  # rehearsal id -> source ids
    nodes: int = 1  # the most nodes a point needs
    simulated: bool = False  # at the machine's own scale on its simulated machine
    on: Optional[tuple] = None  # the local test machine it runs on: (name, description)

    def text(self) -> str:
        what = ("a simulated rehearsal at the machine's own scale (SimGrid SMPI)" if self.simulated
                else f"a small-scale rehearsal on {self.on[0] if self.on else 'the test cluster'}")
        header = (f"# Written by `commstack rehearse` from {self.source.name} ({self.machine}): "
                  f"{what}; see rehearsal.json.\n")
        return header + yaml.safe_dump(self.data, sort_keys=False)

    def summary(self) -> Dict[str, Any]:
        on = {"on": self.on[0], "on_description": self.on[1]} if self.on else {}
        return {"source": str(self.source), "machine": self.machine, "kind": self.kind,
                "simulated": self.simulated, **on, "notes": self.notes, "points": self.points}


def machine_of(path: Path) -> str:
    return path.resolve().parent.name


def matrix_rehearsal(path: Path, budget: Budget, table: Optional[Counterparts] = None,
                     shapes: bool = False) -> Rehearsal:
    """``shapes``: one rehearsal point per point shape, i.e. per combination of the parameters
    that are not numbers (stack, executable, named settings, flags): numeric values such as halo
    widths or message sizes change only numbers in the same command line."""
    table = table or Counterparts.load()
    raw = yaml.safe_load(path.read_text())
    matrix = load_matrix(path)
    benchmark = matrix.benchmark
    stacks, local, notes = _stacks(raw["stacks"], benchmark.name, table)
    rows: Dict[str, Dict[str, Any]] = {}
    sources: Dict[str, List[str]] = {}
    settings: Dict[str, Dict[str, Dict[str, Any]]] = {}
    shape_ids: Dict[tuple, str] = {}
    for point in expand(matrix):
        params, owner = _with_settings(dict(point.params), matrix.settings)
        params = _runtime_values(params, table, notes)
        counterpart = local[params["stack"]] if "stack" in params else next(iter(local.values()))
        if "executable" in params:
            params["executable"] = counterpart.executables.get(params["executable"],
                                                               params["executable"])
        scaled = scale_point(params, benchmark, budget, _node_local(counterpart))
        row = _named_again(scaled, owner, dict(point.params), matrix.settings, settings)
        expanded = dict(row)  # as the matrix expands it: named settings' parameters added
        for axis in settings:
            if axis in row:
                expanded.update(settings[axis][row[axis]])
        rid = Point(benchmark.name, tuple(sorted(expanded.items()))).id
        if shapes:
            shape = tuple(sorted((k, v) for k, v in row.items() if not _number(v)))
            rid = shape_ids.setdefault(shape, rid)
        rows.setdefault(rid, row)
        sources.setdefault(rid, []).append(point.id)
    data = {k: v for k, v in raw.items() if k not in _REPLACED}
    data = dict({"campaign": f"rehearse-{machine_of(path)}-{path.stem}", "repeats": 1}, **data)
    data["timeout"] = min(float(raw.get("timeout", REHEARSAL_TIMEOUT_S)), REHEARSAL_TIMEOUT_S)
    data["stacks"] = stacks
    if settings:
        data["settings"] = settings
    data.update(_as_zip(list(rows.values())))
    notes.append(f"{len(sources)} rehearsal points for the matrix's "
                 f"{sum(map(len, sources.values()))}, one repeat each"
                 + (" (one per point shape: numeric values taken from the first point of each)"
                    if shapes else ""))
    nodes = max((int(r.get("nodes", 1)) for r in rows.values()), default=1)
    return Rehearsal(path, machine_of(path), "matrix", data, notes, sources, nodes)


def plan_rehearsal(path: Path, budget: Budget, table: Optional[Counterparts] = None) -> Rehearsal:
    """The plan with its cases cut down (node and rank counts capped, duplicates merged) and
    every base parameter resolved per case, cut down and written back as a per-case value where
    cases differ; steps and defaults keep their values, hardware names replaced."""
    from commstack.tune.plan import load_plan

    table = table or Counterparts.load()
    plan = load_plan(path)
    raw = yaml.safe_load(path.read_text())
    base = dict(raw["base"])
    benchmark = registry.get(base["benchmark"])
    base["stacks"], local, notes = _stacks(base["stacks"], benchmark.name, table)
    for key in ("node_type", "repeats_across"):
        base.pop(key, None)
    base["repeats"] = 1
    base["timeout"] = min(float(base.get("timeout", REHEARSAL_TIMEOUT_S)), REHEARSAL_TIMEOUT_S)
    node_local = any(_node_local(c) for c in local.values())
    parameters = dict(raw["base"].get("parameters") or {})
    users = _template_users(raw)
    scaled_cases: Dict[str, Dict[str, Any]] = {}  # scaled case (as JSON) -> scaled parameters
    case_values: Dict[str, List[Dict[str, Any]]] = {}
    for case in plan.case_list() or [{}]:
        resolved = {k: plan.fill(v, case) for k, v in parameters.items()}
        full = _runtime_values(dict(resolved, **case), table, notes)
        scaled = scale_point(full, benchmark, budget, node_local)
        small = {k: scaled.get(k, v) for k, v in case.items()}
        key = json.dumps(small, sort_keys=True, default=str)
        if key in scaled_cases:
            continue
        scaled_cases[key] = {k: v for k, v in scaled.items() if k not in case}
        for name in plan.case_values:
            try:
                value = plan.case_value(case, name)
            except MatrixError:
                continue  # no entry for this case: the plan does not use it here
            if name in users:
                value = _one(users[name], value, table, notes)
            case_values.setdefault(name, []).append(dict(small, value=value))
    cases = dict(raw.get("cases") or {})
    for key in cases:
        cases[key] = list(dict.fromkeys(json.loads(k)[key] for k in scaled_cases))
    # Capping each dimension alone makes combinations no source case has (1 node x 1 rank).
    kept = [json.loads(k) for k in scaled_cases]
    exclude = [dict(zip(cases, combo)) for combo in itertools.product(*cases.values())
               if dict(zip(cases, combo)) not in kept]
    base["parameters"] = {}
    for name in dict.fromkeys(k for params in scaled_cases.values() for k in params):
        values = [params.get(name) for params in scaled_cases.values()]
        if all(v == values[0] for v in values):
            base["parameters"][name] = values[0]
            continue
        template = f"rehearsal_{name}"
        case_values[template] = [dict(json.loads(k), value=params.get(name))
                                 for k, params in scaled_cases.items()]
        base["parameters"][name] = "{" + template + "}"
    data = dict(raw, base=base, campaign=f"rehearse-{machine_of(path)}-{path.stem}")
    if cases:
        data["cases"] = cases
    if exclude:
        data["exclude_cases"] = exclude
    if case_values:
        data["case_values"] = case_values
    data["defaults"] = _runtime_values(dict(raw.get("defaults") or {}), table, notes)
    data["steps"] = [_step(step, table, notes) for step in raw.get("steps") or []]
    if raw.get("settings"):
        data["settings"] = {axis: {name: _runtime_values(dict(values or {}), table, notes)
                                   for name, values in named.items()}
                            for axis, named in raw["settings"].items()}
    notes.append(f"{len(scaled_cases)} rehearsal cases for the plan's {len(plan.case_list())}; "
                 "one repeat per point: the steps' decisions show the shapes run, not findings")
    nodes = max(int(json.loads(k).get("nodes", params.get("nodes", 1)))
                for k, params in scaled_cases.items())
    return Rehearsal(path, machine_of(path), "plan", data, notes, {}, nodes)


def _template_users(raw: Dict[str, Any]) -> Dict[str, str]:
    """case_values name -> the variable whose values use it ({name}), for value mapping."""
    users: Dict[str, str] = {}
    pairs = list((raw.get("defaults") or {}).items())
    pairs += list(((raw.get("base") or {}).get("parameters") or {}).items())
    for step in raw.get("steps") or []:
        pairs += [(k, v) for k, vs in (step.get("product") or {}).items() for v in vs]
        pairs += [(k, v) for group in step.get("zip") or [] for k, vs in group.items() for v in vs]
    for variable, value in pairs:
        for name in re.findall(r"\{(\w+)\}", str(value)):
            users.setdefault(name, variable)
    return users


def write(rehearsal: Rehearsal, root: Path) -> Path:
    """<root>/rehearsal.yaml and rehearsal.json; returns the former (an earlier rehearsal's
    files are replaced: a rehearsal is rerun from its source, its records stay)."""
    root.mkdir(parents=True, exist_ok=True)
    target = root / "rehearsal.yaml"
    target.write_text(rehearsal.text())
    (root / "rehearsal.json").write_text(json.dumps(rehearsal.summary(), indent=1) + "\n")
    return target


def _stacks(remote: Dict[str, Any], benchmark: str, table: Counterparts):
    stacks: Dict[str, Any] = {}
    local: Dict[str, Counterpart] = {}
    notes: List[str] = []
    for name, spec in remote.items():
        counterpart = table.for_stack(name, spec, benchmark)
        if spec.get("env") and counterpart.stack["flavour"] == spec.get("flavour"):
            # The stack's own variables, hardware names replaced; the counterpart's win.
            env = _runtime_values(dict(spec["env"]), table, notes)
            counterpart.stack["env"] = dict(env, **(counterpart.stack.get("env") or {}))
        stacks[name], local[name] = counterpart.stack, counterpart
        if spec.get("deviations"):  # the remote stack's, from the published study: kept
            stacks[name] = dict(counterpart.stack, deviations=list(spec["deviations"]))
        where = spec.get("spack", {}).get("view") or spec.get("flavour")
        here = counterpart.stack.get("spack", {}).get("view") or counterpart.stack.get("prefix")
        notes.append(f"stack {name} ({where}) -> {counterpart.stack['flavour']} {here}"
                     + (f": {counterpart.note}" if counterpart.note else ""))
    return stacks, local, notes


def _with_settings(params: Dict[str, Any], settings: Dict[str, Dict[str, Dict[str, Any]]]):
    """The point's parameters with its named settings' parameters added, and which axis owns
    each added one (they are cut down with the rest, then put back into their settings)."""
    owner: Dict[str, str] = {}
    merged = dict(params)
    for axis, named in settings.items():
        if axis in params:
            for key, value in (named.get(str(params[axis])) or {}).items():
                merged[key], owner[key] = value, axis
    return merged, owner


def _named_again(scaled: Dict[str, Any], owner: Dict[str, str], original: Dict[str, Any],
                 source: Dict[str, Dict[str, Dict[str, Any]]],
                 settings: Dict[str, Dict[str, Dict[str, Any]]]) -> Dict[str, Any]:
    """``scaled`` with the settings' parameters back under their names: a setting cut down
    differently for different points gets a new name (<name>-2, ...)."""
    row = {k: v for k, v in scaled.items() if k not in owner}
    for axis in [a for a in source if a in original]:  # settings setting nothing included
        block = {k: v for k, v in scaled.items() if owner.get(k) == axis}
        name = str(original[axis])
        named = settings.setdefault(axis, {})
        candidate, k = name, 1
        while candidate in named and named[candidate] != block:
            k += 1
            candidate = f"{name}-{k}"
        named[candidate] = block
        row[axis] = candidate
    return row


def _runtime_values(params: Dict[str, Any], table: Counterparts, notes: List[str]
                    ) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for name, value in params.items():
        new = table.value(name, value)
        if new is DROP:
            _note(notes, f"{name} left out (names hardware of the machine)")
            continue
        if str(new) != str(value):
            _note(notes, f"{name}={value} -> {new}")
        out[name] = new if str(new) != str(value) else value
    return out


def _step(step: Dict[str, Any], table: Counterparts, notes: List[str]) -> Dict[str, Any]:
    out = dict(step)
    if "product" in step:
        out["product"] = {k: _values(k, v, table, notes) for k, v in step["product"].items()}
    if "zip" in step:
        out["zip"] = [{k: [_one(k, x, table, notes) for x in v] for k, v in group.items()}
                      for group in step["zip"]]
    return out


def _values(name: str, values: List[Any], table: Counterparts, notes: List[str]) -> List[Any]:
    return list(dict.fromkeys(_one(name, v, table, notes) for v in values))


def _one(name: str, value: Any, table: Counterparts, notes: List[str]) -> Any:
    new = table.value(name, value)
    if new is DROP:
        raise ValueError(f"{name} is swept by a step but names hardware of the machine")
    if str(new) != str(value):
        _note(notes, f"{name}={value} -> {new}")
    return new if str(new) != str(value) else value


def _note(notes: List[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _node_local(counterpart: Counterpart) -> bool:
    flavour = flavours.get(counterpart.stack["flavour"])
    return counterpart.stack.get("conduit") in flavour.node_local_conduits


def _as_zip(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    keys = list(rows[0]) if rows else []
    constant = {k: rows[0][k] for k in keys if all(r.get(k) == rows[0][k] for r in rows)}
    varying = [k for k in keys if k not in constant]
    out: Dict[str, Any] = {"parameters": constant}
    if varying:
        out["zip"] = [{k: [r[k] for r in rows] for k in varying}]
    return out
