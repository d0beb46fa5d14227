"""Published tuning decisions as data (the Oracle BM.Optimized3.36 study), and agreement checks.

The study's CSV (shared research: oci_tuning_decisions.csv) has one row per (nodes, ppn,
collective, component). `import_reference` normalises it to commstack's parameter names;
`compare` lines a new tuning's decisions up against it.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any, Dict, List

COMPONENT_FLAGS = {  # the study's three components as MCA flags (its section 4)
    "none": {"mca.coll_hcoll_enable": 0, "mca.coll_ucc_enable": 0},
    "ucc": {"mca.coll_hcoll_enable": 0, "mca.coll_ucc_enable": 1},
    "hcoll": {"mca.coll_hcoll_enable": 1, "mca.coll_ucc_enable": 0},
}
COLLECTIVES = {"alltoall": "Alltoall", "allgather": "Allgather", "allreduce": "Allreduce"}
KEYS = ("nodes", "ranks_per_node", "benchmarks", "component")


def import_reference(text: str) -> List[Dict[str, Any]]:
    rows = []
    for raw in csv.DictReader(io.StringIO(text)):
        row: Dict[str, Any] = {
            "nodes": int(raw["nodes"]),
            "ranks_per_node": int(raw["ppn"]),
            "benchmarks": COLLECTIVES[raw["collective"]],
            "component": raw["component"],
            "UCX_RNDV_THRESH": raw["ucx_rndv_thresh_env"],
            "mapping": raw["mapping"],
            "nps": int(raw["nps"]),
            "source": f"{raw['section']} (oci_tuning_decisions.csv)",
        }
        if raw["ucx_tls"]:
            row["UCX_TLS"] = raw["ucx_tls"]
        if raw["zcopy_thresh"]:
            row["UCX_ZCOPY_THRESH"] = raw["zcopy_thresh"]
        row.update(COMPONENT_FLAGS[raw["component"]])
        rows.append(row)
    return rows


def component_of(settings: Dict[str, Any]) -> str:
    """A row's collective component: its named setting ``component``, else from the MCA flags."""
    if settings.get("component") in COMPONENT_FLAGS:
        return str(settings["component"])
    flags = (int(settings.get("mca.coll_hcoll_enable", 1)), int(settings.get("mca.coll_ucc_enable", 0)))
    return {(0, 0): "none", (0, 1): "ucc", (1, 0): "hcoll"}.get(flags, "hcoll+ucc")


PER_COMPONENT = re.compile(r"^(?P<name>.+) \[component=(?P<component>[^\]]+)\]$")


def per_component(row: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """A decisions-table row as the choices for each component it decided: the case-wide values
    (UCX_TLS, ...) with the component's own choices (columns ``mapping [component=ucc]``) over
    them. The study decides NPS, mapping and (on one node) UCX_RNDV_THRESH per component."""
    shared = {k: v for k, v in row.items() if k not in KEYS and not PER_COMPONENT.match(k)}
    out: Dict[str, Dict[str, Any]] = {component_of(row): dict(shared)}
    for key, value in row.items():
        match = PER_COMPONENT.match(key)
        if match:
            out.setdefault(match["component"], dict(shared))[match["name"]] = value
    return out


def compare(decisions: List[Dict[str, Any]], reference: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per tuned case, component and parameter the reference also decided: agree or
    differ. A published decision was made at one NPS (a BIOS setting, so one tuning run each):
    a run on another NPS says so (``agree`` empty) instead of comparing its choices with it."""
    index = {tuple(r[k] for k in KEYS): r for r in reference}
    out = []
    for row in decisions:
        case = (row.get("nodes"), row.get("ranks_per_node"), row.get("benchmarks"))
        for component, values in per_component(row).items():
            key = (*case, component)
            ref = index.get(key)
            if ref is None:
                out.append({**dict(zip(KEYS, key)), "parameter": "-", "ours": "-",
                            "reference": "no published case", "agree": None})
                continue
            if "nps" in values and "nps" in ref and str(values["nps"]) != str(ref["nps"]):
                out.append({**dict(zip(KEYS, key)), "parameter": "nps", "ours": values["nps"],
                            "reference": f"{ref['nps']} (compared in the NPS{ref['nps']} run)",
                            "agree": None})
                continue
            for name, ours in values.items():
                if name not in ref or name.startswith("mca.coll_") or name == "source":
                    continue
                out.append({**dict(zip(KEYS, key)), "parameter": name, "ours": ours,
                            "reference": ref[name],
                            "agree": str(ours).lower() == str(ref[name]).lower()})
    return out


def write_reference(rows: List[Dict[str, Any]], path: Path) -> None:
    from commstack.store.files import replace
    from commstack.tune.export import table_csv

    path.parent.mkdir(parents=True, exist_ok=True)
    replace(path, table_csv(rows).encode())


def read_reference(path: Path) -> List[Dict[str, Any]]:
    rows = []
    for raw in csv.DictReader(io.StringIO(Path(path).read_text())):
        row: Dict[str, Any] = {k: v for k, v in raw.items() if v != ""}
        for k in ("nodes", "ranks_per_node", "nps", "mca.coll_hcoll_enable", "mca.coll_ucc_enable"):
            if k in row:
                row[k] = int(row[k])
        rows.append(row)
    return rows
