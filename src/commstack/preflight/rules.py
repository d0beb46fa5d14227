"""The pre-flight's refusal rules, one small function each; a rule returns a ``Finding`` or None.

A finding about a *name* the tools do not list is ``overridable`` (``--allow-unlisted NAME``
lets it through, recorded as unchecked); one about a value this installation certainly cannot
honour (an absent transport or device, a value UCX's parser rejects) is not.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable, List, Optional

from commstack.preflight.capabilities import Components, Listing, UcxResources

# UCX 1.13's transport aliases (ucp_context.c, ucp_tl_aliases): an alias is usable when one of
# its transports is.
UCX_TL_ALIASES = {
    "mm": ("posix", "sysv", "xpmem"),
    "sm": ("posix", "sysv", "xpmem", "knem", "cma"),
    "shm": ("posix", "sysv", "xpmem", "knem", "cma"),
    "ib": ("rc_verbs", "ud_verbs", "rc_mlx5", "ud_mlx5", "dc_mlx5"),
    "ud_v": ("ud_verbs",), "ud_x": ("ud_mlx5",), "ud": ("ud_mlx5", "ud_verbs"),
    "rc_v": ("rc_verbs",), "rc_x": ("rc_mlx5",), "rc": ("rc_mlx5", "rc_verbs"),
    "dc": ("dc_mlx5",), "dc_x": ("dc_mlx5",),
    "ugni": ("ugni_smsg", "ugni_rdma"),
    "cuda": ("cuda_copy", "cuda_ipc", "gdr_copy"),
    "rocm": ("rocm_copy", "rocm_ipc", "rocm_gdr"),
}
HCOLL_NOTE = ("HCOLL is proprietary and ships with HPC-X / MLNX OFED; this Open MPI was not "
              "built with it")


@dataclass(frozen=True)
class Finding:
    reason: str
    overridable: bool = False


def did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _items(value: str) -> List[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def listed_name(name: str, listing: Listing) -> Optional[Finding]:
    """A UCX_/UCC_/I_MPI_/MPIR_CVAR_ name the installation's tool does not list."""
    assert listing.names is not None
    if name in listing.names:
        return None
    return Finding(f"unknown variable: {listing.source} does not list {name}"
                   f"{did_you_mean(name, listing.names)}", overridable=True)


def mca_parameter(param: str, value: str, comps: Components) -> Optional[Finding]:
    """mca.<param>: a framework's selection naming an absent component, a parameter of a component
    this Open MPI lacks, or a parameter name ompi_info does not list."""
    framework = param.split("_", 1)[0]
    if param == framework and framework in comps.frameworks:
        return _selection(framework, value, comps)
    if param in comps.params:
        return None
    present = comps.frameworks.get(framework)
    rest = param[len(framework) + 1:]
    if present and rest and not rest.startswith("base_") and \
            not any(rest == c or rest.startswith(c + "_") for c in present):
        component = rest.split("_", 1)[0]
        note = f" ({HCOLL_NOTE})" if (framework, component) == ("coll", "hcoll") else ""
        return Finding(f"this Open MPI has no {framework}/{component} component{note}; "
                       f"{comps.source} lists {framework}: {', '.join(sorted(present)) or 'none'}",
                       overridable=True)
    return Finding(f"unknown MCA parameter: {comps.source} does not list {param}"
                   f"{did_you_mean(param, comps.params)}", overridable=True)


def _selection(framework: str, value: str, comps: Components) -> Optional[Finding]:
    """`pml: ucx`, `coll: ^hcoll`: included components must exist (excluding an absent one is
    harmless, and Open MPI fails at start-up on an absent included one)."""
    if value.strip().startswith("^"):
        return None
    present = comps.frameworks[framework]
    absent = [c for c in _items(value) if c not in present]
    if not absent:
        return None
    return Finding(f"selects {framework} component(s) {', '.join(absent)} this Open MPI lacks; "
                   f"{comps.source} lists {framework}: {', '.join(sorted(present)) or 'none'}")


def ucx_transports(value: str, ucx: UcxResources) -> Optional[Finding]:
    """UCX_TLS naming a transport (or alias of transports) ucx_info -d does not show here."""
    if value.strip().startswith("^"):
        return None
    absent = []
    for item in _items(value):
        tl = item.split(":", 1)[0]  # rc:aux and the like
        if tl == "all" or tl in ucx.transports:
            continue
        if any(member in ucx.transports for member in UCX_TL_ALIASES.get(tl, ())):
            continue
        absent.append(tl)
    if not absent:
        return None
    aliases = sorted(a for a, members in UCX_TL_ALIASES.items()
                     if any(m in ucx.transports for m in members))
    return Finding(f"UCX {ucx.version} has no transport {', '.join(absent)} here (ucx_info -d "
                   f"lists {', '.join(sorted(ucx.transports))}"
                   + (f"; aliases {', '.join(aliases)}" if aliases else "") + ")")


def ucx_devices(value: str, ucx: UcxResources) -> Optional[Finding]:
    """UCX_NET_DEVICES naming a device ucx_info -d does not show here."""
    if value.strip().startswith("^"):
        return None
    absent = [d for d in _items(value) if d != "all" and d not in ucx.devices]
    if not absent:
        return None
    return Finding(f"UCX {ucx.version} has no device {', '.join(absent)} here (ucx_info -d lists "
                   f"{', '.join(sorted(ucx.devices))})")


def ucx_value(name: str, value: str, errors: Optional[str], version: str) -> Optional[Finding]:
    """A value this UCX version's own parser rejects (ucx_info -c -a prints the error)."""
    if not errors:
        return None
    return Finding(f"UCX {version} rejects {name}={value}: {errors}")
