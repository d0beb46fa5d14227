"""Which named settings a stack can run, by the pre-flight's view of it (ompi_info's components).

A setting that switches on or tunes a component the stack lacks (``hcoll: {mca.coll_hcoll_enable:
1}`` on an Open MPI without HCOLL, ``ucc`` on Debian's Open MPI, ``UCC_*``/``HCOLL_*`` variables
without that component) is *skipped*: nothing is launched for it and the step says why. A
parameter that only switches off an absent component (``mca.coll_hcoll_enable: 0`` there) is left
out of what is launched: the component is off already, and the pre-flight would refuse the name.
Anything else (a misspelt parameter of a present component) is left for the pre-flight to refuse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from commstack.preflight.capabilities import Components

NOTES = {("coll", "hcoll"): "HCOLL ships with HPC-X / MLNX OFED",
         ("coll", "ucc"): "Open MPI 4.1.4 or later built with UCC, e.g. the ompi-ucc view"}
# Variable families read by one component only.
ENV_COMPONENTS = {"UCC_": ("coll", "ucc"), "HCOLL_": ("coll", "hcoll")}
_OFF = {"0", "false", "no", "off"}


@dataclass
class SettingCheck:
    """One named setting on one stack."""

    params: Dict[str, Any]  # what is launched
    skipped: Optional[str] = None  # why the stack cannot run it
    left_out: List[str] = field(default_factory=list)  # "mca.x=0: why"


def absent_component(param: str, value: Any, comps: Components) -> Optional[Tuple[str, str]]:
    """(framework, component) when ``param`` (a matrix name: mca.x, UCC_X) needs a component
    this Open MPI lacks; None when it does not or this cannot tell (the pre-flight judges it)."""
    for prefix, (framework, component) in ENV_COMPONENTS.items():
        if param.startswith(prefix):
            return None if comps.has(framework, component) else (framework, component)
    if not param.startswith("mca."):
        return None
    name = param[4:]
    framework, _, rest = name.partition("_")
    present = comps.frameworks.get(framework)
    if present is None:
        return None
    if not rest:  # a selection: `coll: ucc,tuned` (exclusions with ^ need nothing)
        wanted = [c.strip() for c in str(value).split(",") if c.strip()]
        if str(value).strip().startswith("^"):
            return None
        missing = [c for c in wanted if c not in present]
        return (framework, missing[0]) if missing else None
    if name in comps.params or rest.startswith("base_") or any(
            rest == c or rest.startswith(c + "_") for c in present):
        return None
    return framework, rest.split("_", 1)[0]


def switches_off(param: str, value: Any) -> bool:
    return param.endswith("_enable") and str(value).strip().lower() in _OFF


def reason(framework: str, component: str, comps: Components) -> str:
    note = NOTES.get((framework, component))
    listed = ", ".join(sorted(comps.frameworks.get(framework, ()))) or "none"
    return (f"this Open MPI has no {framework}/{component}" + (f" ({note})" if note else "")
            + f"; {comps.source} lists {framework}: {listed}")


def check_setting(params: Mapping[str, Any], comps: Components) -> SettingCheck:
    out = SettingCheck(dict(params))
    for param, value in params.items():
        absent = absent_component(param, value, comps)
        if absent is None:
            continue
        if switches_off(param, value):
            del out.params[param]
            out.left_out.append(f"{param}={value}: this Open MPI has no {'/'.join(absent)} "
                                "(off already)")
        elif out.skipped is None:
            out.skipped = reason(*absent, comps)
    return out


def skipped_text(setting: str, why: str) -> str:
    return f"{setting}: skipped — {why}"
