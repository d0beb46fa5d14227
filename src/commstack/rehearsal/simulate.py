"""A simulated rehearsal: another machine's matrix or tuning plan run at its own node and rank
counts on its simulated machine (SimGrid SMPI, flavour ``smpi``), on this node.

Every stack becomes the SMPI stack of ``environments/local`` (view ``smpi``); nodes, ranks per
node, mappings, node types and message sizes stay the source's; each benchmark family's
``simulate_down`` cuts only repetitions (the simulation is deterministic: a repetition costs
time and adds nothing); one repeat. A knob SMPI has no model of (UCX, UCC, HCOLL, a collective
algorithm it does not implement) is left out with the reason; a named setting left with
nothing, and a step with nothing left to choose, go too, each with a note. What remains runs
through the same plan, launch, parse, record and report path as any campaign.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from commstack import flavours
from commstack.benchmarks import registry
from commstack.benchmarks.base import Benchmark
from commstack.flavours import FlavourError, smpi_settings
from commstack.matrix import parameters as P
from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix
from commstack.matrix.model import MatrixError, Point
from commstack.rehearsal.build import (
    Rehearsal,
    _as_zip,
    _named_again,
    _note,
    _with_settings,
    machine_of,
)

# environments/local names the simulator's view after its flavour.
STACK = {"flavour": flavours.simulator().name,
         "spack": {"env": "local", "view": flavours.simulator().name}}
# Parameters that name nothing a simulation can change.
_NO_EFFECT = {"cpus_per_task": "no simulated effect (the simulated node's cores are its own)",
              "oversubscribe": "a simulated node is never oversubscribed"}
_KEPT = ("campaign", "stacks", "repeats", "repeats_across", "product", "zip", "exclude",
         "parameters", "settings")


def prefix(source: Path) -> str:
    return f"simulate-{source.stem}"


def matrix_simulation(path: Path) -> Rehearsal:
    raw = yaml.safe_load(path.read_text())
    matrix = load_matrix(path)
    benchmark = matrix.benchmark
    notes: List[str] = []
    stacks = _stacks(raw["stacks"], benchmark, notes)
    rows: Dict[str, Dict[str, Any]] = {}
    sources: Dict[str, List[str]] = {}
    settings: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for point in expand(matrix):
        params, owner = _with_settings(dict(point.params), matrix.settings)
        params = _down(_simulable(params, benchmark, notes), benchmark)
        row = _named_again(params, owner, dict(point.params), matrix.settings, settings)
        expanded = dict(row)
        for axis in settings:
            if axis in row:
                expanded.update(settings[axis][row[axis]])
        rid = Point(benchmark.name, tuple(sorted(expanded.items()))).id
        rows.setdefault(rid, row)
        sources.setdefault(rid, []).append(point.id)
    data = {k: v for k, v in raw.items() if k not in _KEPT}
    data = dict({"campaign": prefix(path), "repeats": 1}, **data)
    data["stacks"] = stacks
    if settings:
        data["settings"] = settings
    data.update(_as_zip(list(rows.values())))
    notes.append(f"{len(sources)} simulated points for the matrix's "
                 f"{sum(map(len, sources.values()))}, one repeat each, at its own node and "
                 "rank counts")
    nodes = max((int(r.get("nodes", 1)) for r in rows.values()), default=1)
    return Rehearsal(path, machine_of(path), "matrix", data, notes, sources, nodes)


def plan_simulation(path: Path) -> Rehearsal:
    from commstack.tune.plan import load_plan

    load_plan(path)  # the source must be a valid plan
    raw = yaml.safe_load(path.read_text())
    notes: List[str] = []
    base = dict(raw["base"])
    benchmark = registry.get(base["benchmark"])
    base["stacks"] = _stacks(base["stacks"], benchmark, notes)
    base["repeats"] = 1
    base.pop("repeats_across", None)
    base["parameters"] = _down(_simulable(dict(base.get("parameters") or {}), benchmark, notes),
                               benchmark)
    data = dict(raw, base=base, campaign=prefix(path))
    settings, emptied = {}, set()
    for axis, named in (raw.get("settings") or {}).items():
        kept = {name: _simulable(dict(values or {}), benchmark, notes)
                for name, values in named.items()}
        if len({yaml.safe_dump(v, sort_keys=True) for v in kept.values()}) < 2:
            emptied.add(axis)
            _note(notes, f"setting {axis} left out: its values differ only in knobs SMPI cannot "
                         "simulate")
            continue
        settings[axis] = kept
    if raw.get("settings"):
        data["settings"] = settings
    defaults = _simulable(dict(raw.get("defaults") or {}), benchmark, notes)
    data["defaults"] = {k: v for k, v in defaults.items() if k not in emptied}
    steps = []
    for step in raw.get("steps") or []:
        kept = _step(step, benchmark, emptied, notes)
        if kept is None:
            _note(notes, f"step {step['name']} left out: nothing it varies can be simulated")
        else:
            steps.append(kept)
    if not steps:
        raise MatrixError(f"{path}: no step of this plan varies anything SMPI can simulate "
                          "(notes: " + "; ".join(notes) + ")")
    data["steps"] = steps
    notes.append(f"{len(steps)} of {len(raw.get('steps') or [])} steps simulated, one repeat "
                 "per point: decisions show the shapes run at the machine's scale, not findings")
    nodes = max(_nodes(raw), default=1)
    return Rehearsal(path, machine_of(path), "plan", data, notes, {}, nodes)


def _nodes(raw: Dict[str, Any]) -> List[int]:
    cases = (raw.get("cases") or {}).get("nodes")
    if cases:
        return [int(n) for n in cases]
    return [int((raw.get("base", {}).get("parameters") or {}).get("nodes", 1))]


def _stacks(remote: Dict[str, Any], benchmark: Benchmark, notes: List[str]) -> Dict[str, Any]:
    stacks = {}
    for name, spec in remote.items():
        stacks[name] = dict(STACK)
        where = (spec.get("spack") or {}).get("view") or spec.get("prefix") or spec.get("flavour")
        _note(notes, f"stack {name} ({spec.get('flavour')} {where}) -> simulated: SimGrid SMPI "
                     "(environments/local view smpi)")
        if spec.get("env"):
            kept = {k: v for k, v in spec["env"].items()
                    if _refusal(P.classify(k, benchmark), k, v) is None}
            if kept:
                stacks[name]["env"] = kept
        if spec.get("launcher_args"):
            _note(notes, f"stack {name}: launcher_args {' '.join(spec['launcher_args'])} left out "
                         "(nothing runs inside a simulation but the benchmark)")
    return stacks


def _simulable(params: Dict[str, Any], benchmark: Benchmark, notes: List[str]) -> Dict[str, Any]:
    """``params`` without what SMPI cannot simulate, each left out with a note."""
    out = {}
    for name, value in params.items():
        if name in _NO_EFFECT:
            _note(notes, f"{name} left out: {_NO_EFFECT[name]}")
            continue
        try:
            kind = P.classify(name, benchmark)
        except ValueError:
            out[name] = value  # a named setting's axis or a template: judged where it is used
            continue
        why = _refusal(kind, name, value)
        if why:
            _dropped(notes, name, value, why)
            continue
        out[name] = value
    return out


def _refusal(kind: P.ParameterKind, name: str, value: Any) -> Optional[str]:
    if kind.kind not in ("env", "mca") or not kind.env_name:
        return None
    by_name = smpi_settings.unmodelled(kind.env_name)
    if by_name or "{" in str(value):  # a plan's template: judged by its name alone
        return by_name.split(": ", 1)[-1] if by_name else None
    try:
        smpi_settings.translate({kind.env_name: str(value)}, {})
    except FlavourError as exc:
        return str(exc).split(": ", 1)[-1]
    return None


def _dropped(notes: List[str], name: str, value: Any, why: str) -> None:
    """One note per variable and reason, its values listed: "UCX_TLS (all, self,sm,rc) left
    out: ..."."""
    tail = f") left out: {why}"
    for i, note in enumerate(notes):
        if note.startswith(f"{name} (") and note.endswith(tail):
            values = note[len(name) + 2:-len(tail)]
            if str(value) not in values.split(" | "):
                notes[i] = f"{name} ({values} | {value}{tail}"
            return
    notes.append(f"{name} ({value}{tail}")


def _down(params: Dict[str, Any], benchmark: Benchmark) -> Dict[str, Any]:
    return benchmark.simulate_down(params) if benchmark.simulate_down else params


def _step(step: Dict[str, Any], benchmark: Benchmark, emptied: set, notes: List[str]
          ) -> Optional[Dict[str, Any]]:
    out = dict(step)
    if step.get("per") in emptied:
        del out["per"]
    if "product" in step:
        product = {}
        for name, values in step["product"].items():
            if name in emptied:
                continue
            kept = [v for v in values if _simulable({name: v}, benchmark, notes)]
            if len(kept) > 1:
                product[name] = kept
        if not product:
            return None
        out["product"] = product
    if "zip" in step:
        groups = []
        for group in step["zip"]:
            names = [n for n in group if n not in emptied]
            rows = [dict(zip(names, combo)) for combo in zip(*(group[n] for n in names))]
            rows = [r for r in rows if len(_simulable(r, benchmark, notes)) == len(r)]
            if len(rows) > 1:
                groups.append({n: [r[n] for r in rows] for n in names})
        if not groups and "product" not in out:
            return None
        out["zip"] = groups
    return out

