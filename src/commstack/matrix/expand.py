"""Expand a matrix into points: the product of all axes, zipped groups as one axis, minus excludes.

Semantics (Ramble-like):
  * ``parameters``: fixed values, the same in every point;
  * ``product``: each key is an axis, crossed with every other axis;
  * ``zip``: each group is ONE axis whose i-th value sets every key of the group to its i-th item;
  * ``exclude``: a point matching every key of a rule (a scalar, or any value of a list) is dropped;
  * ``settings``: a point with ``component: ucc`` also gets the parameters ``settings.component.ucc``
    sets (the name stays a parameter; see commstack.matrix.settings).
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, List

from commstack.matrix import parameters as P
from commstack.matrix import settings as S
from commstack.matrix.model import Matrix, MatrixError, Point


def expand(matrix: Matrix) -> List[Point]:
    axes: List[List[Dict[str, Any]]] = [
        [{name: value} for value in values] for name, values in matrix.product.items()
    ]
    for group in matrix.zip:
        names = list(group)
        axes.append([dict(zip(names, items)) for items in zip(*group.values())])

    fixed = dict(matrix.parameters)
    if "stack" not in fixed and "stack" not in _axis_names(matrix):
        if len(matrix.stacks) != 1:
            raise MatrixError(
                f"{matrix.path}: stack: several stacks are defined ({', '.join(matrix.stacks)}); "
                "choose with `parameters.stack` or sweep them with `product.stack`"
            )
        fixed["stack"] = next(iter(matrix.stacks))

    points: List[Point] = []
    seen = set()
    checked = set()  # (stack, parameter names) already checked: the check reads nothing else
    for combo in itertools.product(*axes):
        values = dict(fixed)
        for part in combo:
            values.update(part)
        if any(matches(rule, values) for rule in matrix.exclude):
            continue
        values = S.apply(values, matrix.settings)
        names = (values["stack"], tuple(values))
        if names not in checked:
            _check_flavour(matrix, values)
            checked.add(names)
        point = Point(matrix.benchmark.name, tuple(sorted(values.items())))
        if point.id not in seen:
            seen.add(point.id)
            points.append(point)
    if not points:
        raise MatrixError(f"{matrix.path}: exclude: every point is excluded; nothing to run")
    return points


def _axis_names(matrix: Matrix) -> List[str]:
    names = list(matrix.product)
    for group in matrix.zip:
        names += list(group)
    return names


def matches(rule: Dict[str, Any], values: Dict[str, Any]) -> bool:
    """Every key of ``rule`` has the value (or one of the list of values) it names."""
    for name, wanted in rule.items():
        options = wanted if isinstance(wanted, list) else [wanted]
        if values.get(name) not in options:
            return False
    return True


def _check_flavour(matrix: Matrix, values: Dict[str, Any]) -> None:
    stack = matrix.stacks[values["stack"]]
    for name in values:
        kind = P.classify(name, matrix.benchmark)
        if not P.flavour_honours(kind, stack.flavour):
            if kind.family == "mca":
                what = f"an {P.MCA_READERS} MCA parameter"
            elif kind.kind == "option":
                what = f"a setting of {P.OPTION_PREFIXES[kind.family]} stacks"
            else:
                what = f"a {kind.family}* variable, read by {', '.join(P.ENV_FAMILIES[kind.family])}"
            raise MatrixError(
                f"{matrix.path}: {name}: {what}; stack {stack.name!r} is {stack.flavour} and "
                "would ignore it (exclude those points or drop the axis)"
            )
