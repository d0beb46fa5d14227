"""How often one point's way to its launch line goes back to a module it has left (issue 29).

Plans a matrix for review (nothing is launched) and follows, as the program runs, the calls
into commstack's functions while the first point's command is built (``_command`` of the plan):
a stay is a run of calls in one module, a return a stay in a module left before. Not counted:
what only hands a value over (properties, dunder methods, the __init__ a dataclass generates)
nor comprehensions and lambdas (their own frames in Python 3.11).
Also counted: the lookups of a flavour by name (commstack.flavours.get) per point over the whole
plan.

Usage: python bench/planning_walk.py [MATRIX] [--slurm] [--out FILE]
(with PYTHONPATH naming the src/ of the tree to measure; an older tree's sweep.prepare is found)
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import sys
from pathlib import Path
from typing import Callable, Dict, List

from commstack import flavours
from commstack.machine import find_machine
from commstack.matrix.load import load_matrix
from commstack.schedulers.allocation import Allocation

ROOT = Path(__file__).resolve().parents[1]


def _planner() -> tuple:
    """(module holding prepare and _command, its name): commstack.plan, else commstack.sweep."""
    for name in ("commstack.plan", "commstack.sweep"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module.__dict__.get("prepare"), "__code__") and \
                module.prepare.__module__ == name:
            return module, name
    raise SystemExit("no commstack.plan.prepare or commstack.sweep.prepare")


def _trace(run: Callable[[], object], start: str) -> List[str]:
    """The commstack modules entered, call by call, inside the first call of ``start``."""
    modules: List[str] = []
    depth = [0]  # calls open inside ``start``; 0 before it and after it

    def profile(frame, event, arg):  # noqa: ANN001 (sys.setprofile's signature)
        if event == "return" and depth[0]:
            depth[0] -= 1
            if not depth[0]:
                sys.setprofile(None)
        elif event == "call" and (depth[0] or frame.f_code.co_name == start):
            depth[0] += 1
            module = frame.f_globals.get("__name__", "")
            if module.startswith("commstack.") and _counted(frame.f_code, frame.f_globals):
                modules.append(module)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return modules


def _counted(code, names: Dict[str, object]) -> bool:  # noqa: ANN001 (a code object)
    if code.co_filename.startswith("<") or code.co_name.startswith(("__", "<")):
        return False
    owner, _, attribute = code.co_qualname.rpartition(".")
    held = names.get(owner) if owner and "<" not in owner else None
    return not isinstance(getattr(held, "__dict__", {}).get(attribute), property)


def walk(modules: List[str]) -> Dict[str, object]:
    stays = [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]
    entered = collections.Counter(stays)
    return {"stays": len(stays), "modules": len(entered),
            "returns": len(stays) - len(entered),
            "most_entered": dict(entered.most_common(6)), "route": stays}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrix", type=Path, nargs="?", default=None,
                        help="default: matrices/local/stacks-imb.yaml, with --slurm "
                             "matrices/betzy/allcores.yaml")
    parser.add_argument("--slurm", action="store_true",
                        help="plan the points as steps of a Slurm job (else launches on this node)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.matrix is None:
        args.matrix = ROOT / "matrices" / ("betzy/allcores.yaml" if args.slurm
                                           else "local/stacks-imb.yaml")
    planner, name = _planner()
    matrix = load_matrix(args.matrix)
    machine = find_machine(args.matrix.resolve().parent.name, matrix.path.parent, matrix.node_type)
    allocation = Allocation("(review)") if args.slurm else None

    def plan() -> object:
        return planner.prepare(matrix, machine, allocation, review=True)

    first = walk(_trace(plan, "_command"))
    lookups = collections.Counter()
    get = flavours.get

    def counted(flavour: str):  # noqa: ANN202
        lookups["get"] += 1
        return get(flavour)

    flavours.get = counted
    try:
        points = len(plan().points)
    finally:
        flavours.get = get
    result = {"planner": f"{name}.prepare", "matrix": str(args.matrix),
              "launch": "slurm step" if args.slurm else "this node",
              "first_point": first, "points": points,
              "flavour_lookups_per_point": round(lookups["get"] / max(1, points), 2)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
