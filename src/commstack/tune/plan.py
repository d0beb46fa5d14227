"""A tuning plan: a base sweep, the untuned defaults, and the staged steps.

```yaml
campaign: tune-local
base:                      # everything a matrix has except the axes
  benchmark: imb-mpi1
  repeats: 5
  order: shuffled          # of the points within a repeat, in every step and verify sweep
  seed: 42                 # of that order (default: derived from each step campaign's name)
  stacks: {...}
  parameters: {msglog: "0:16", npmin: 4, mca.pml: ucx}
cases:                     # each combination is tuned on its own (like the study's 48 cases)
  nodes: [2]
  ranks_per_node: [2]
  benchmarks: [Allreduce, Alltoall]
settings:                  # named settings: each value sets several parameters
  component:
    none:  {mca.coll_ucc_enable: 0, mca.coll_hcoll_enable: 0}
    ucc:   {mca.coll_ucc_enable: 1, mca.coll_ucc_priority: 100, mca.coll_hcoll_enable: 0}
    hcoll: {mca.coll_hcoll_enable: 1, mca.coll_ucc_enable: 0}
defaults:                  # the untuned configuration of every tuned parameter
  UCX_TLS: all
  UCX_RNDV_THRESH: auto
  component: none
  mapping: block
steps:
  - name: tls-rndv
    multi_node_only: true  # skipped for single-node cases, as the study does
    product: {UCX_TLS: [all, "self,sm,tcp"], UCX_RNDV_THRESH: [auto, 16kb, 64kb]}
  - name: component-mapping
    per: component            # choose the other axes separately for each value of this one
    product: {component: [none, ucc, hcoll], mapping: [block, cyclic]}
decision: {threshold: 0.05, alpha: 0.05, correction: bh}
racing: {first: 4, round: 2, most: 16}   # optional: candidates measured in rounds, the clearly
                                         # worse dropped (commstack.tune.racing)
carry_incumbent: true      # optional: a step's incumbent (the step before's choice, under the
                           # same settings) is not run again; its runs there are used
coarse_sizes: 4            # optional: every 4th power of two of msglog first, then the sizes
                           # between two where the best changes (commstack.tune.sizes; IMB)
```

Per-case steps and values (the Oracle study: plans/bm-optimized3-36/oci-study.yaml):

```yaml
case_values:               # a value a step writes as {rndv_intra}, looked up per case
  rndv_intra:
    - {ranks_per_node: 8, benchmarks: Alltoall, value: 32kb}
steps:
  - name: rndv-mapping
    when: {nodes: 1}       # only for the cases that match (a value or a list of values)
    ...
  - name: tls-rndv
    node_type: nps1        # measured on this node type only; a run on another node type
    ...                    # takes the decision from that node type's campaign
    product: {UCX_RNDV_THRESH: ["intra:auto,inter:auto", "intra:{rndv_intra},inter:4kb"]}
```

A named setting the stack cannot run (``hcoll`` without HCOLL) is skipped before the step runs
(see commstack.tune.capable); the records keep ``component: ucc`` and the parameters it set.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from commstack import bounds
from commstack.benchmarks import registry
from commstack.matrix import parameters as P
from commstack.matrix import settings as S
from commstack.matrix.expand import matches
from commstack.matrix.load import check_matrix_keys
from commstack.matrix.model import MatrixError
from commstack.tune.decide import Rule
from commstack.tune.racing import Racing, load_racing
from commstack.tune.sizes import load_coarse
from commstack.yaml_errors import one_line

BASE_KEYS = {"benchmark", "repeats", "timeout", "stacks", "parameters", "description",
             "node_type", "order", "seed"}
# Keys of `base` every sweep of the tuner inherits as they are and a matrix validates alike.
RUN_ORDER_KEYS = ("order", "seed")
STEP_KEYS = ("name", "product", "zip", "per", "multi_node_only", "when", "node_type")
TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class Step:
    name: str
    product: Dict[str, List[Any]] = field(default_factory=dict)
    zip: List[Dict[str, List[Any]]] = field(default_factory=list)
    per: Optional[str] = None
    multi_node_only: bool = False
    when: Dict[str, Any] = field(default_factory=dict)  # case key: a value or a list of values
    node_type: Optional[str] = None  # measured on this node type only (machine.yaml node_types)

    @property
    def axes(self) -> List[str]:
        names = list(self.product)
        for group in self.zip:
            names += list(group)
        return names

    def candidates(self) -> List[Dict[str, Any]]:
        axes = [[{k: v} for v in values] for k, values in self.product.items()]
        for group in self.zip:
            axes.append([dict(zip(group, items)) for items in zip(*group.values())])
        out = []
        for combo in itertools.product(*axes):
            merged: Dict[str, Any] = {}
            for part in combo:
                merged.update(part)
            out.append(merged)
        return out


Decision = Rule  # a plan's `decision:` is the step rule of commstack.tune.decide


def load_decision(path: Path, raw: Any) -> Rule:
    """``decision: {threshold: 0.05, alpha: 0.05, correction: bh|holm, allow_losses: false}``."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise MatrixError(f"{path}: decision: expected a mapping (threshold, alpha, correction, "
                          "allow_losses)")
    if "noise" in raw or "min_gain" in raw:
        raise MatrixError(f"{path}: decision: `noise` and `min_gain` are gone: a candidate now "
                          "wins only where a rank test corrected for the step's comparisons says "
                          "so; use decision: {threshold: 0.05} (the least gain that counts)")
    unknown = set(raw) - {"threshold", "alpha", "correction", "allow_losses"}
    if unknown:
        raise MatrixError(f"{path}: decision: unknown key(s) {', '.join(sorted(unknown))}; "
                          "expected threshold, alpha, correction, allow_losses")
    try:
        rule = Rule(float(raw.get("threshold", Rule.threshold)), float(raw.get("alpha", Rule.alpha)),
                    str(raw.get("correction", Rule.correction)), bool(raw.get("allow_losses", False)))
    except (TypeError, ValueError) as exc:
        raise MatrixError(f"{path}: decision: {exc}") from None
    if not (0 <= rule.threshold < 1 and 0 < rule.alpha < 1 and rule.correction in ("bh", "holm")):
        raise MatrixError(f"{path}: decision: expected 0 <= threshold < 1, 0 < alpha < 1, "
                          "correction bh or holm")
    return rule


@dataclass
class TunePlan:
    path: Path
    campaign: str
    base: Dict[str, Any]
    cases: Dict[str, List[Any]]
    defaults: Dict[str, Any]
    steps: List[Step]
    decision: Decision
    settings: S.Settings = field(default_factory=dict)
    case_values: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    # Combinations of `cases` not to tune, as a matrix's `exclude` (each entry: case keys).
    exclude_cases: List[Dict[str, Any]] = field(default_factory=list)
    racing: Optional[Racing] = None  # None: every candidate of a step takes base.repeats
    # A step's incumbent is the step before's choice under the same settings: measured there,
    # not run again (fewer runs; its runs are older than the challengers', see docs plan.md).
    carry_incumbent: bool = False
    coarse_sizes: Optional[int] = None  # commstack.tune.sizes: every N-th size first

    def case_list(self) -> List[Dict[str, Any]]:
        names = list(self.cases)
        return [case for case in (dict(zip(names, combo))
                                  for combo in itertools.product(*self.cases.values()))
                if not any(matches(entry, case) for entry in self.exclude_cases)]

    def case_value(self, case: Dict[str, Any], name: str) -> Any:
        """The ``case_values.<name>`` entry whose keys match the case (exactly one)."""
        found = [e["value"] for e in self.case_values.get(name, [])
                 if matches({k: v for k, v in e.items() if k != "value"}, case)]
        if len(found) != 1:
            raise MatrixError(f"{self.path}: case_values.{name}: {len(found)} entries match the "
                              f"case {_case_text(case)} (exactly one must)")
        return found[0]

    def applies(self, step: Step, case: Dict[str, Any]) -> bool:
        """Whether the step runs for this case (``when``, ``multi_node_only``)."""
        nodes = int(case.get("nodes", (self.base.get("parameters") or {}).get("nodes", 1)))
        return not (step.multi_node_only and nodes <= 1) and matches(step.when, case)

    def fill(self, value: Any, case: Dict[str, Any]) -> Any:
        """``value`` with every ``{name}`` replaced by the case's ``case_values.<name>``."""
        if not isinstance(value, str) or not TEMPLATE.search(value):
            return value
        whole = TEMPLATE.fullmatch(value)
        if whole:  # "{name}" alone takes the value as it is (a number stays a number)
            return self.case_value(case, whole.group(1))
        return TEMPLATE.sub(lambda m: str(self.case_value(case, m.group(1))), value)

    def candidates(self, step: Step, case: Dict[str, Any]) -> List[Dict[str, Any]]:
        """The step's candidates for this case, every ``{name}`` replaced by its case value."""
        return [{k: self.fill(v, case) for k, v in cand.items()} for cand in step.candidates()]

    def defaults_for(self, case: Dict[str, Any]) -> Dict[str, Any]:
        """The untuned configuration of this case (``defaults`` and ``base.parameters`` may use
        ``{name}`` too)."""
        return {k: self.fill(v, case) for k, v in self.defaults.items()}

    def steps_for(self, case: Dict[str, Any]) -> List[Step]:
        return [step for step in self.steps if self.applies(step, case)]


def _case_text(case: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "(no cases)"


def is_tune_plan(path: Path) -> bool:
    """Whether the YAML file is a tuning plan (it has `steps:`) rather than a matrix."""
    try:
        data = yaml.safe_load(bounds.read_text(path, bounds.MAX_CONFIG_BYTES, "a tuning plan"))
    except (OSError, yaml.YAMLError, ValueError, RecursionError):
        return False  # load_matrix names the problem
    return isinstance(data, dict) and "steps" in data


def load_plan(path: Path) -> TunePlan:
    path = Path(path)
    try:
        data = yaml.safe_load(bounds.read_text(path, bounds.MAX_CONFIG_BYTES, "a tuning plan"))
    except (OSError, yaml.YAMLError, ValueError, RecursionError) as exc:
        raise MatrixError(f"{path}: cannot read tuning plan: {one_line(exc)}") from None
    if not isinstance(data, dict):
        raise MatrixError(f"{path}: expected a mapping at the top level")
    unknown = set(data) - {"campaign", "base", "cases", "exclude_cases", "defaults", "steps",
                           "decision", "settings", "case_values", "racing", "carry_incumbent",
                           "coarse_sizes"}
    if unknown:
        raise MatrixError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; expected campaign, "
                          "base, cases, exclude_cases, settings, case_values, defaults, steps, "
                          "decision, racing, carry_incumbent, coarse_sizes")
    exclude = data.get("exclude_cases") or []
    if not isinstance(exclude, list) or not all(isinstance(e, dict) and e for e in exclude):
        raise MatrixError(f"{path}: exclude_cases: expected a list of mappings of case keys to "
                          "values, e.g. [{nodes: 1, ranks_per_node: 1}]")
    base = data.get("base") or {}
    if set(base) - BASE_KEYS:
        raise MatrixError(f"{path}: base: unknown key(s) {', '.join(sorted(set(base) - BASE_KEYS))}"
                          f"; expected {', '.join(sorted(BASE_KEYS))}")
    if "benchmark" not in base or "stacks" not in base:
        raise MatrixError(f"{path}: base: needs `benchmark` and `stacks`")
    check_matrix_keys(path, base, RUN_ORDER_KEYS, "base")
    steps = []
    for i, raw in enumerate(data.get("steps") or []):
        extra = set(raw) - set(STEP_KEYS)
        if extra or "name" not in raw:
            raise MatrixError(f"{path}: steps[{i}]: needs `name`; allowed keys: "
                              f"{', '.join(STEP_KEYS)} (got {', '.join(sorted(raw))})")
        if not isinstance(raw.get("when") or {}, dict):
            raise MatrixError(f"{path}: steps[{i}].when: expected a mapping of case keys to values")
        step = Step(raw["name"], dict(raw.get("product") or {}), list(raw.get("zip") or []),
                    raw.get("per"), bool(raw.get("multi_node_only", False)),
                    dict(raw.get("when") or {}), raw.get("node_type"))
        if not step.axes:
            raise MatrixError(f"{path}: steps[{i}] ({step.name}): no axes to tune")
        if step.per and step.per not in step.axes:
            raise MatrixError(f"{path}: steps[{i}].per: {step.per!r} is not an axis of the step")
        steps.append(step)
    if not steps:
        raise MatrixError(f"{path}: steps: at least one step is needed")
    decision = load_decision(path, data.get("decision"))
    settings = data.get("settings") or {}
    if not isinstance(settings, dict):
        raise MatrixError(f"{path}: settings: expected a mapping of axes to named settings")
    settings = {str(axis): {str(n): dict(p or {}) for n, p in named.items()}
                if isinstance(named, dict) else named for axis, named in settings.items()}
    case_values = data.get("case_values") or {}
    if not isinstance(case_values, dict) or not all(
            isinstance(e, list) and all(isinstance(x, dict) and "value" in x for x in e)
            for e in case_values.values()):
        raise MatrixError(f"{path}: case_values: expected name: [{{<case key>: <value>, ..., "
                          "value: <value>}}, ...]")
    plan = TunePlan(path, data.get("campaign", path.stem), base, dict(data.get("cases") or {}),
                    dict(data.get("defaults") or {}), steps, decision, settings,
                    {str(k): list(v) for k, v in case_values.items()},
                    [dict(e) for e in exclude])
    try:
        repeats = int(base.get("repeats", 1))
    except (TypeError, ValueError):
        raise MatrixError(f"{path}: base.repeats: expected a number") from None
    plan.racing = load_racing(path, data.get("racing"), repeats)
    carry = data.get("carry_incumbent", False)
    if not isinstance(carry, bool):
        raise MatrixError(f"{path}: carry_incumbent: expected true or false, got {carry!r}")
    plan.carry_incumbent = carry
    for entry in plan.exclude_cases:
        for key in entry:
            if key not in plan.cases:
                raise MatrixError(f"{path}: exclude_cases: {key!r} is not a `cases` dimension "
                                  f"({', '.join(plan.cases) or 'none'})")
    try:
        bench = registry.get(str(base["benchmark"]))
    except KeyError as exc:
        raise MatrixError(f"{path}: base.benchmark: {exc.args[0]}") from None
    plan.coarse_sizes = load_coarse(path, data.get("coarse_sizes"), bench.options)
    try:
        S.check(settings, bench)
    except ValueError as exc:
        raise MatrixError(f"{path}: settings.{exc}") from None
    names = set(plan.cases) | set(plan.defaults) | {n for s in steps for n in s.axes}
    names |= set(base.get("parameters") or {})
    for name in sorted(names):
        try:
            P.classify(name, bench, settings=settings)
        except ValueError as exc:
            raise MatrixError(f"{path}: {name}: {exc}") from None
    for step in steps:
        for name in step.axes:
            if name in plan.cases:
                raise MatrixError(f"{path}: {step.name}.{name}: already a `cases` dimension")
    _check_setting_values(plan)
    _check_case_steps(plan)
    return plan


def _check_case_steps(plan: TunePlan) -> None:
    """Every `when` key is a case dimension, step names are unique, and every case a step
    applies to has exactly one value for each {name} the step uses."""
    names = [s.name for s in plan.steps]
    if len(set(names)) != len(names):
        raise MatrixError(f"{plan.path}: steps: a name is used twice ({', '.join(names)})")
    for step in plan.steps:
        for key in step.when:
            if key not in plan.cases:
                raise MatrixError(f"{plan.path}: steps.{step.name}.when.{key}: not a `cases` "
                                  f"dimension ({', '.join(plan.cases) or 'none'})")
        used = {m.group(1) for cand in step.candidates() for v in cand.values()
                if isinstance(v, str) for m in TEMPLATE.finditer(v)}
        for name in sorted(used - set(plan.case_values)):
            raise MatrixError(f"{plan.path}: steps.{step.name}: {{{name}}} names no case_values "
                              f"entry ({', '.join(plan.case_values) or 'none declared'})")
        if used:
            for case in plan.case_list():
                if plan.applies(step, case):
                    plan.candidates(step, case)
    fixed = list(plan.defaults.values()) + list((plan.base.get("parameters") or {}).values())
    used = {m.group(1) for v in fixed if isinstance(v, str) for m in TEMPLATE.finditer(v)}
    for name in sorted(used - set(plan.case_values)):
        raise MatrixError(f"{plan.path}: defaults/base.parameters: {{{name}}} names no "
                          "case_values entry "
                          f"({', '.join(plan.case_values) or 'none declared'})")
    if used:
        for case in plan.case_list():
            for value in fixed:
                plan.fill(value, case)


def _check_setting_values(plan: TunePlan) -> None:
    """Each value of a named-settings axis names one of its settings, and no parameter a
    setting sets is also given (or tuned) elsewhere in the plan."""
    given = {**{n: "base.parameters" for n in plan.base.get("parameters") or {}},
             **{n: "cases" for n in plan.cases}, **{n: "defaults" for n in plan.defaults}}
    for step in plan.steps:
        given.update({n: f"steps.{step.name}" for n in step.axes})
    for param, axis in S.parameters_of(plan.settings).items():
        if param in given:
            raise MatrixError(f"{plan.path}: {given[param]}.{param}: also set by the named "
                              f"settings of {axis} (settings.{axis}); one parameter, one place")
    places: List[tuple] = [(f"defaults.{n}", n, [v]) for n, v in plan.defaults.items()]
    places += [(f"cases.{n}", n, list(v)) for n, v in plan.cases.items()]
    places += [(f"base.parameters.{n}", n, [v])
               for n, v in (plan.base.get("parameters") or {}).items()]
    for step in plan.steps:
        places += [(f"steps.{step.name}.product.{n}", n, list(v)) for n, v in step.product.items()]
        places += [(f"steps.{step.name}.zip.{n}", n, list(v)) for g in step.zip
                   for n, v in g.items()]
    for place, name, values in places:
        if name not in plan.settings:
            continue
        for value in values:
            problem = S.unknown_value(plan.settings, name, value)
            if problem:
                raise MatrixError(f"{plan.path}: {place}: {problem}")
