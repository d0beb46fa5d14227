"""Named settings: an axis whose values each set several parameters.

```yaml
settings:
  component:                       # the axis name (a lower-case word)
    none: {mca.coll_ucc_enable: 0, mca.coll_hcoll_enable: 0}
    ucc:  {mca.coll_ucc_enable: 1, mca.coll_ucc_priority: 100, mca.coll_hcoll_enable: 0}
product: {component: [none, ucc], mapping: [block, cyclic]}
```

A point keeps the name (``component: ucc``) as a parameter, which launches nothing itself, and
gets the setting's parameters, which are what is launched (and recorded).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping

from commstack.benchmarks.registry import Benchmark
from commstack.matrix import parameters as P

Settings = Dict[str, Dict[str, Dict[str, Any]]]  # axis -> setting name -> parameter -> value

NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def check(settings: Mapping[str, Any], benchmark: Benchmark) -> None:
    """Raise ValueError (text after ``settings.``) for a malformed block: an axis name that is
    already a parameter, a setting that is not a mapping of parameters, a parameter that is
    unknown or itself a named setting, a parameter set by two axes."""
    owner: Dict[str, str] = {}
    for axis, named in settings.items():
        if not isinstance(axis, str) or not NAME.match(axis):
            raise ValueError(f"{axis}: an axis of named settings needs a lower-case name")
        if P.classify(axis, benchmark, settings=settings).kind != "setting":
            raise ValueError(f"{axis}: already a parameter name; name the axis otherwise "
                             "(e.g. component)")
        if not isinstance(named, dict) or not named:
            raise ValueError(f"{axis}: expected a mapping of setting names to parameters, e.g. "
                             "{none: {mca.coll_ucc_enable: 0}, ucc: {mca.coll_ucc_enable: 1}}")
        for name, params in named.items():
            where = f"{axis}.{name}"
            if params is None:
                continue
            if not isinstance(params, dict):
                raise ValueError(f"{where}: expected a mapping of parameters to values "
                                 "({} for none)")
            for param, value in params.items():
                try:
                    kind = P.classify(str(param), benchmark, settings=settings)
                except ValueError as exc:
                    raise ValueError(f"{where}.{param}: {exc}") from None
                if kind.kind == "setting":
                    raise ValueError(f"{where}.{param}: a named setting cannot set another one")
                if kind.kind == "core" and param == "stack":
                    raise ValueError(f"{where}.stack: a setting cannot choose the stack")
                if isinstance(value, (list, dict)) or value is None:
                    raise ValueError(f"{where}.{param}: expected a single value, got {value!r}")
                if owner.setdefault(param, axis) != axis:
                    raise ValueError(f"{where}.{param}: also set by the named settings of "
                                     f"{owner[param]}; one parameter, one axis")


def unknown_value(settings: Mapping[str, Dict[str, Any]], axis: str, value: Any) -> str:
    """The error for a value that names no setting of ``axis`` ('' when it names one)."""
    if str(value) in settings[axis]:
        return ""
    return (f"{value!r} is not a named setting of {axis} (settings.{axis} has "
            f"{', '.join(map(str, settings[axis]))})")


def parameters_of(settings: Mapping[str, Dict[str, Any]]) -> Dict[str, str]:
    """Every parameter a named setting sets -> its axis."""
    return {p: axis for axis, named in settings.items() for params in named.values()
            for p in params or {}}


def apply(values: Mapping[str, Any], settings: Mapping[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The values with each named setting's parameters added (the name stays)."""
    out = dict(values)
    for axis, named in settings.items():
        if axis in values:
            out.update(named[str(values[axis])] or {})
    return out
