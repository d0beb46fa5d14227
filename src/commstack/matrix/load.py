"""Read a matrix file, validate it against the schema and the parameter rules.

Every error names the file, the key (as a dotted path) and what was expected, and is raised
before anything is launched.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List

import jsonschema
import yaml
from jsonschema.exceptions import ValidationError

from commstack import bounds, flavours
from commstack.benchmarks import registry
from commstack.excerpt import cut, excerpt
from commstack.matrix import parameters as P
from commstack.matrix import settings as S
from commstack.matrix.found import found_value, how_to_get
from commstack.matrix.model import (
    DEFAULT_REPEATS,
    DEFAULT_TIMEOUT_S,
    Adaptive,
    Matrix,
    MatrixError,
    Stack,
)
from commstack.stats import MIN_CI_SAMPLES
from commstack.yaml_errors import one_line

_SCHEMA = json.loads((Path(__file__).with_name("schema.json")).read_text())
# The benchmark names are the benchmark family modules'; flavour and conduit names the flavour
# modules'.
_SCHEMA["properties"]["benchmark"]["enum"] = registry.names()
_SCHEMA["$defs"]["stack"]["properties"]["flavour"]["enum"] = flavours.names()
_SCHEMA["$defs"]["stack"]["properties"]["conduit"]["enum"] = flavours.conduits()
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def load_matrix(path: "str | os.PathLike[str]") -> Matrix:
    path = Path(path)
    try:
        text = bounds.read_text(path, bounds.MAX_CONFIG_BYTES, "a matrix")
    except OSError as exc:
        raise MatrixError(f"{path}: cannot read matrix: {exc.strerror}") from None
    except (bounds.InputTooLarge, bounds.NotText, UnicodeDecodeError) as exc:
        raise MatrixError(f"{path}: cannot read matrix: {cut(str(exc), 300)}") from None
    return matrix_from_text(path, text)


def matrix_from_text(path: Path, text: str) -> Matrix:
    """A matrix from its text, as if read from ``path`` (which places Spack environments and
    names the file in errors)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MatrixError(f"{path}: not valid YAML: {one_line(exc)}") from None
    except ValueError as exc:  # a value YAML recognises but Python cannot hold (a 5000-digit int)
        raise MatrixError(f"{path}: a value cannot be read: {cut(str(exc).split(';')[0])}"
                          ) from None
    except RecursionError:
        raise MatrixError(f"{path}: not valid YAML: lists or mappings nested too deeply") from None
    if not isinstance(data, dict):
        raise MatrixError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    _check_schema(path, data)

    benchmark = registry.get(data["benchmark"])
    repeats, adaptive = _repeats(path, data)
    stacks = {name: _stack(path, name, spec) for name, spec in data["stacks"].items()}
    matrix = Matrix(
        path=path,
        text=text,
        campaign=data.get("campaign", path.stem),
        benchmark=benchmark,
        stacks=stacks,
        repeats=repeats,
        adaptive=adaptive,
        order=data.get("order", "shuffled"),
        seed=data.get("seed"),
        repeats_across=data.get("repeats_across", "allocation"),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT_S)),
        description=data.get("description", ""),
        deviations=[str(d) for d in data.get("deviations", [])],
        parameters=dict(data.get("parameters", {})),
        product={k: list(v) for k, v in data.get("product", {}).items()},
        zip=[{k: list(v) for k, v in group.items()} for group in data.get("zip", [])],
        exclude=list(data.get("exclude", [])),
        node_type=data.get("node_type"),
        settings={str(axis): {str(n): dict(p or {}) for n, p in named.items()}
                  for axis, named in (data.get("settings") or {}).items()},
    )
    _check_names(matrix)
    return matrix


def _repeats(path: Path, data: Dict[str, Any]) -> "tuple[int, Adaptive | None]":
    """(the most repeats a point takes, the adaptive rule or None) of a schema-valid matrix."""
    value = data.get("repeats", DEFAULT_REPEATS)
    if isinstance(value, int):
        return value, None
    rule = Adaptive(min=value.get("min", MIN_CI_SAMPLES), max=value["max"], ci=float(value["ci"]))
    if rule.min > rule.max:
        raise MatrixError(f"{path}: repeats.min: {rule.min} is more than repeats.max "
                          f"({rule.max})")
    if rule.max < MIN_CI_SAMPLES:
        raise MatrixError(f"{path}: repeats.max: {rule.max} repeats give no 95 % interval of the "
                          f"median (it needs at least {MIN_CI_SAMPLES}), so precision could "
                          f"never be reached; use a number of repeats instead")
    if data.get("repeats_across") == "jobs":
        raise MatrixError(f"{path}: repeats: adaptive repeats are decided within one allocation "
                          "(rounds over the points not yet precise); repeats_across: jobs takes "
                          "a number of repeats")
    return rule.max, rule


# At most this many schema errors are listed (then how many more there are).
MAX_ERRORS = 20


def check_matrix_keys(path: Path, data: Dict[str, Any], keys: Iterable[str], where: str) -> None:
    """``keys`` of ``data`` (another file's mapping that a matrix inherits, e.g. a tuning plan's
    ``base``) checked by the matrix schema's rules for those keys, each error naming
    ``<where>.<key>``, before anything runs."""
    names = [k for k in keys if k in data]
    schema = {"type": "object", "properties": {k: _SCHEMA["properties"][k] for k in names}}
    errors = sorted(_Validator(schema).iter_errors({k: data[k] for k in names}),
                    key=lambda e: list(e.absolute_path))
    if errors:
        raise MatrixError("\n".join(f"{path}: {where}.{_key(e.absolute_path)}: {_explain(e)}"
                                     for e in errors[:MAX_ERRORS]))


def _check_schema(path: Path, data: Dict[str, Any]) -> None:
    validator = _Validator(_SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    lines = [f"{path}: {_key(e.absolute_path)}: {_explain(e)}" for e in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        more = len(errors) - MAX_ERRORS
        lines.append(f"{path}: ... and {more} more error{'s' * (more != 1)}")
    raise MatrixError("\n".join(lines))


def _key(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        part = part if isinstance(part, int) else cut(str(part), 80)
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


def _explain(error: jsonschema.ValidationError) -> str:
    """What is wrong, quoting at most an excerpt of the value."""
    value = excerpt(error.instance)
    if error.validator == "additionalProperties":
        allowed = ", ".join(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})), key=str)
        keys = ", ".join(excerpt(k, 80) for k in extra[:5])
        more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        return f"unknown key {keys}{more}; expected one of: {allowed}"
    if error.validator == "minItems":
        return "empty list; an axis needs at least one value"
    if error.validator == "enum":
        return f"{value} is not one of {', '.join(map(str, error.validator_value))}"
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"expected {expected}, got {type(error.instance).__name__} {value}"
    if error.validator == "pattern":
        return f"{value} does not match {error.validator_value}"
    if error.validator == "oneOf":
        return f"{value} is neither a single value nor a list of values"
    return cut(error.message)


def _type(validator: Any, types: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    types = types if isinstance(types, list) else [types]
    if not any(validator.is_type(instance, t) for t in types):
        yield ValidationError(f"{excerpt(instance)} is not of type {', '.join(map(repr, types))}")


def _enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not any(validator.evolve(schema={"const": each}).is_valid(instance) for each in enums):
        yield ValidationError(f"{excerpt(instance)} is not one of {enums!r}")


def _one_of(validator: Any, one_of: Any, instance: Any, schema: Any
            ) -> Iterator[ValidationError]:
    errors: List[ValidationError] = []
    valid = 0
    for index, subschema in enumerate(one_of):
        found = list(validator.descend(instance, subschema, schema_path=index))
        valid += not found
        errors += found
    if valid != 1:
        which = "none" if valid == 0 else "more than one"
        yield ValidationError(f"{excerpt(instance)} is valid under {which} of the given schemas",
                              context=errors if valid == 0 else [])


# Draft 2020-12 whose type, enum and oneOf messages quote an excerpt of the value: jsonschema's
# own hold its whole repr, built even when never shown (for a YAML alias bomb, gigabytes).
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"type": _type, "enum": _enum, "oneOf": _one_of})


def _expand_vars(value: str) -> "tuple[str, str | None]":
    """Expand ${VAR} and ${VAR:-default}; return (text, name of an unset variable or None).
    An unset variable of :mod:`commstack.matrix.found` takes the value found on this machine."""
    missing: List[str] = []

    def sub(match: "re.Match[str]") -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        found = found_value(name)
        if found:
            return found
        missing.append(name)
        return match.group(0)

    text = _VAR.sub(sub, value)
    return text, (missing[0] if missing else None)


def _stack(path: Path, name: str, spec: Dict[str, Any]) -> Stack:
    fields: Dict[str, Any] = {}
    unresolved = None
    for key in ("prefix", "view", "bin", "launcher"):
        values = spec.get(key, [])
        for value in values if isinstance(values, list) else [values]:
            text, missing = _expand_vars(value)
            if key == "bin":  # several folders are kept as one search path
                text = os.path.abspath(os.path.expanduser(text))
                text = os.pathsep.join(filter(None, (fields.get(key), text)))
            fields[key] = text
            if missing:  # reported when the stack is used (see launch.stack.resolve)
                how = f" (build it: {how_to_get(missing)})" if how_to_get(missing) else ""
                unresolved = unresolved or f"{key} uses ${{{missing}}}, which is not set{how}"
    if "spack" in spec:
        fields["view"], unresolved = _spack_view(path, name, spec["spack"]["env"],
                                                 spec["spack"]["view"], unresolved)
    for key in ("prefix", "view"):
        if key in fields:
            fields[key] = os.path.abspath(os.path.expanduser(fields[key]))
    env = tuple(sorted((str(k), _env_value(v)) for k, v in spec.get("env", {}).items()))
    conduits, conduit = flavours.get(spec["flavour"]).conduits, spec.get("conduit")
    if conduits and conduit not in conduits:
        raise MatrixError(f"{path}: stacks.{name}.conduit: a {spec['flavour']} stack needs its "
                          f"conduit ({', '.join(conduits)})")
    if not conduits and conduit is not None:
        raise MatrixError(f"{path}: stacks.{name}.conduit: only {_with_conduits()} stacks have a "
                          f"conduit; this one is {spec['flavour']}")
    if spec.get("noise") and not flavours.get(spec["flavour"]).simulated:
        raise MatrixError(f"{path}: stacks.{name}.noise: only a simulated stack takes injected "
                          f"noise; a {spec['flavour']} stack's runs have their own")
    return Stack(
        name=name,
        flavour=spec["flavour"],
        launcher_args=tuple(spec.get("launcher_args", ())),
        allocation_launcher=str(spec.get("allocation_launcher", "machine")),
        env=env,
        optional=bool(spec.get("optional", False)),
        conduit=spec.get("conduit"),
        unresolved=unresolved,
        deviations=tuple(str(d) for d in spec.get("deviations", ())),
        noise=float(spec.get("noise", 0.0)),
        **fields,
    )


def _with_conduits() -> str:
    return " or ".join(name for name, f in flavours.FLAVOURS.items() if f.conduits)


def find_environment(matrix_path: Path, env: str) -> Path:
    """environments/<env>/spack.yaml: under $COMMSTACK_ENVIRONMENTS, else in the first ancestor
    of the matrix that has an environments/ folder."""
    roots = [Path(os.environ["COMMSTACK_ENVIRONMENTS"])] if os.environ.get(
        "COMMSTACK_ENVIRONMENTS") else []
    roots += [folder / "environments" for folder in matrix_path.resolve().parents]
    for root in roots:
        if (root / env / "spack.yaml").is_file():
            return root / env
    raise FileNotFoundError(f"Spack environment {env!r} not found (looked for "
                            f"environments/{env}/spack.yaml above {matrix_path})")


def _spack_view(path: Path, name: str, env: str, view: str, unresolved: "str | None"
                ) -> "tuple[str, str | None]":
    """The root directory of a named view of a Spack environment."""
    try:
        env_dir = find_environment(path, env)
    except FileNotFoundError as exc:
        raise MatrixError(f"{path}: stacks.{name}.spack.env: {exc}") from None
    config = (yaml.safe_load((env_dir / "spack.yaml").read_text()) or {}).get("spack", {})
    views = config.get("view")
    if not isinstance(views, dict) or view not in views:
        known = ", ".join(views) if isinstance(views, dict) else "no named views"
        raise MatrixError(f"{path}: stacks.{name}.spack.view: {view!r} is not a view of "
                          f"{env_dir / 'spack.yaml'} ({known})")
    root = views[view]["root"] if isinstance(views[view], dict) else views[view]
    root_path = (env_dir / root) if not os.path.isabs(root) else Path(root)
    if not root_path.exists() and unresolved is None:
        unresolved = (f"view {view!r} of environment {env!r} is not installed ({root_path} "
                      f"is missing): run `spack -e {env_dir} install`")
    return str(root_path), unresolved


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _check_names(m: Matrix) -> None:
    """Names are known, each appears once, stacks exist, values fit their parameter."""
    where: Dict[str, str] = {}

    def claim(name: str, place: str) -> None:
        if name in where:
            raise MatrixError(f"{m.path}: {place}: {excerpt(name)} is already given in "
                              f"{where[name]}")
        where[name] = place

    for name in m.parameters:
        claim(name, f"parameters.{name}")
    for name in m.product:
        claim(name, f"product.{name}")
    for i, group in enumerate(m.zip):
        lengths = {k: len(v) for k, v in group.items()}
        if len(set(lengths.values())) > 1:
            detail = ", ".join(f"{k}: {n}" for k, n in lengths.items())
            raise MatrixError(f"{m.path}: zip[{i}]: zipped lists must have equal lengths ({detail})")
        for name in group:
            claim(name, f"zip[{i}].{name}")

    try:
        S.check(m.settings, m.benchmark)
    except ValueError as exc:
        raise MatrixError(f"{m.path}: settings.{exc}") from None
    for name, place in where.items():
        try:
            P.classify(name, m.benchmark, settings=m.settings)
        except ValueError as exc:
            raise MatrixError(f"{m.path}: {place}: {exc}") from None
    for param, axis in S.parameters_of(m.settings).items():
        if param in where:
            raise MatrixError(f"{m.path}: {where[param]}: also set by the named settings of "
                              f"{axis} (settings.{axis}); one parameter, one place")

    for i, rule in enumerate(m.exclude):
        for name in rule:
            if name not in where:
                raise MatrixError(
                    f"{m.path}: exclude[{i}].{cut(str(name), 80)}: not a parameter of this "
                    f"matrix (known: {cut(', '.join(where))})"
                )

    for name, place in where.items():
        for value in _values(m, name):
            _check_value(m, place, name, value)
    for axis, named in m.settings.items():
        for setting, params in named.items():
            for param, value in params.items():
                _check_value(m, f"settings.{axis}.{setting}.{param}", param, value)


def _values(m: Matrix, name: str) -> List[Any]:
    if name in m.parameters:
        return [m.parameters[name]]
    if name in m.product:
        return m.product[name]
    for group in m.zip:
        if name in group:
            return group[name]
    return []


def _check_value(m: Matrix, place: str, name: str, value: Any) -> None:
    def bad(expected: str) -> MatrixError:
        return MatrixError(f"{m.path}: {place}: {excerpt(value)} is not valid; expected {expected}")

    if name == "stack" and value not in m.stacks:
        raise bad(f"a stack defined under `stacks` ({', '.join(m.stacks)})")
    most = {"nodes": bounds.MAX_NODES, "ranks_per_node": bounds.MAX_RANKS,
            "cpus_per_task": bounds.MAX_CPUS}.get(name)
    if most is not None and not (
        isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most
    ):
        raise bad(f"a positive integer of at most {most} (no machine has more)")
    if name == "mapping" and value not in P.MAPPINGS:
        raise bad(" or ".join(P.MAPPINGS))
    if name == "oversubscribe" and value not in (True, False, "auto"):
        raise bad("true, false or auto")
    if name in m.settings and S.unknown_value(m.settings, name, value):
        raise MatrixError(f"{m.path}: {place}: {S.unknown_value(m.settings, name, value)}")
    option = m.benchmark.options.get(name)
    if option is not None:
        try:
            option.render(value)
        except ValueError as exc:
            raise bad(str(exc).replace("expected ", "")) from None
