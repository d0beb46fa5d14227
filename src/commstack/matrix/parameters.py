"""What a matrix parameter name means, and which MPI flavours honour it.

Five kinds of parameter exist:
  * core       -- stack, nodes, ranks_per_node, mapping, oversubscribe, cpus_per_task, executable
  * benchmark  -- an option of the chosen benchmark (see commstack.benchmarks.registry)
  * env        -- an environment variable: UCX_TLS, I_MPI_FABRICS, FI_PROVIDER, ... or env.ANY_NAME
  * mca        -- an Open MPI MCA parameter: mca.coll_hcoll_enable -> OMPI_MCA_coll_hcoll_enable
  * option     -- a flavour's own setting: smpi.allreduce -> SimGrid SMPI's --cfg=smpi/allreduce
  * setting    -- the axis of a matrix's named settings (``settings:``, see matrix/settings.py),
                  e.g. component: ucc; the name launches nothing, the parameters it sets do
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection, Dict, Optional

from commstack import flavours
from commstack.benchmarks.registry import Benchmark
from commstack.matrix.model import Point

CORE = {
    "stack": "name of a stack in `stacks`",
    "nodes": "number of nodes (local launcher: 1)",
    "ranks_per_node": "MPI ranks per node",
    "mapping": "block | cyclic placement of ranks over NUMA domains",
    "oversubscribe": "auto | true | false (auto: only when ranks exceed the cores here)",
    "cpus_per_task": "srun --cpus-per-task (default: threads per core x floor(cores / ranks per node))",
    "executable": "benchmark executable name or path (cartex: benchmark_mpi_comm, ...)",
}

MAPPINGS = flavours.MAPPINGS
FLAVOURS = tuple(flavours.names())
# Environment-variable families and the flavours whose libraries read them (flavour modules).
ENV_FAMILIES = flavours.env_families()
MCA_READERS = " or ".join(f.label for f in flavours.FLAVOURS.values() if f.mca and not f.simulated)
OPTION_PREFIXES = flavours.option_prefixes()  # "smpi" -> "smpi"

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_MCA_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass(frozen=True)
class ParameterKind:
    kind: str  # core | benchmark | env | mca | option | setting
    env_name: Optional[str] = None  # for env and mca
    # env prefix, "mca", an option prefix ("smpi"), or None when any flavour honours it
    family: Optional[str] = None


def matrix_name(variable: str) -> str:
    """The parameter a matrix writes for an environment variable: OMPI_MCA_x is mca.x (the
    inverse of the ``mca`` kind's env_name), other variables go by their own name."""
    return "mca." + variable[len("OMPI_MCA_"):] if variable.startswith("OMPI_MCA_") else variable


def classify(name: str, benchmark: Benchmark, settings: Optional[Collection[str]] = None
             ) -> ParameterKind:
    """Classify a parameter name; raise ValueError saying what names are accepted.

    ``settings``: the axes of named settings the matrix declares (validation: any other bare
    lower-case name is unknown). Without it (a point already validated) every bare lower-case
    name that is no other kind is a setting axis."""
    if name in CORE:
        return ParameterKind("core")
    if name in benchmark.options:
        return ParameterKind("benchmark")
    if name.startswith("mca."):
        mca = name[4:]
        if not _MCA_NAME.match(mca):
            raise ValueError(f"MCA parameter name {mca!r} is not of the form lower_case_name")
        return ParameterKind("mca", env_name=f"OMPI_MCA_{mca}", family="mca")
    prefix, dot, option = name.partition(".")
    if dot and prefix in OPTION_PREFIXES:
        if not _OPTION_NAME.match(option):
            raise ValueError(f"{prefix} setting name {option!r} is not of the form lower-case_name")
        return ParameterKind("option", family=prefix)
    if name.startswith("env."):
        var = name[4:]
        if not _ENV_NAME.match(var):
            raise ValueError(f"environment variable name {var!r} must be UPPER_CASE")
        return ParameterKind("env", env_name=var)
    for prefix in ENV_FAMILIES:
        if name.startswith(prefix) and _ENV_NAME.match(name):
            return ParameterKind("env", env_name=name, family=prefix)
    if _MCA_NAME.match(name) and (settings is None or name in settings):
        return ParameterKind("setting")
    raise ValueError(
        f"unknown parameter; expected one of: {', '.join(CORE)}; an option of "
        f"{benchmark.name} ({', '.join(benchmark.options)}); an environment variable "
        f"({', '.join(p + '*' for p in ENV_FAMILIES)}, or env.NAME); mca.<name>; "
        f"{''.join(p + '.<name>; ' for p in OPTION_PREFIXES)}or an axis declared under `settings:`"
    )


def flavour_honours(kind: ParameterKind, flavour: str) -> bool:
    if kind.family is None:
        return True
    if kind.family == "mca":
        return flavours.get(flavour).mca
    if kind.kind == "option":
        return flavours.get(flavour).option_prefix == kind.family
    return flavour in ENV_FAMILIES[kind.family]


def point_env(point: Point, benchmark: Benchmark) -> Dict[str, str]:
    """Environment variables the point's env and mca parameters set."""
    env: Dict[str, str] = {}
    for name, value in point.params:
        kind = classify(name, benchmark)
        if kind.env_name:
            env[kind.env_name] = "1" if value is True else "0" if value is False else str(value)
    return env


def flavour_options(point: Point, benchmark: Benchmark) -> Dict[str, str]:
    """The point's flavour settings (``smpi.allreduce: rdb`` -> {"allreduce": "rdb"})."""
    options: Dict[str, str] = {}
    for name, value in point.params:
        if classify(name, benchmark).kind == "option":
            options[name.partition(".")[2]] = ("1" if value is True else "0" if value is False
                                               else str(value))
    return options


def benchmark_params(point: Point, benchmark: Benchmark) -> Dict[str, object]:
    """The point's benchmark options, and the executable when it names one."""
    return {k: v for k, v in point.params if k in benchmark.options or k == "executable"}


@dataclass(frozen=True)
class LaunchInputs:
    """What a launch reads of a point: the benchmark's options, the variables its env and mca
    parameters set, the flavour's own settings."""

    options: Dict[str, object]
    env: Dict[str, str]
    flavour_options: Dict[str, str]


def launch_inputs(point: Point, benchmark: Benchmark) -> LaunchInputs:
    return LaunchInputs(benchmark_params(point, benchmark), point_env(point, benchmark),
                        flavour_options(point, benchmark))
