"""Published tuning decisions as data (the Oracle BM.Optimized3.36 study), and agreement checks.

The study's CSV (shared research: oci_tuning_decisions.csv) has one row per (nodes, ppn,
collective, component). `import_reference` normalises it to commstack's parameter names;
`compare` lines a new tuning's decisions up against it.
"""

from __future__ import annotations

import csv
import io
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
    flags = (int(settings.get("mca.coll_hcoll_enable", 1)), int(settings.get("mca.coll_ucc_enable", 0)))
    return {(0, 0): "none", (0, 1): "ucc", (1, 0): "hcoll"}.get(flags, "hcoll+ucc")


def compare(decisions: List[Dict[str, Any]], reference: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per tuned case and parameter the reference also decided: agree or differ."""
    index = {tuple(r[k] for k in KEYS): r for r in reference}
    out = []
    for row in decisions:
        key = (row.get("nodes"), row.get("ranks_per_node"), row.get("benchmarks"),
               component_of(row))
        ref = index.get(key)
        if ref is None:
            out.append({**dict(zip(KEYS, key)), "parameter": "-", "ours": "-",
                        "reference": "no published case", "agree": None})
            continue
        for name, ours in row.items():
            if name in KEYS or name not in ref or name.startswith("mca.coll_"):
                continue
            out.append({**dict(zip(KEYS, key)), "parameter": name, "ours": ours,
                        "reference": ref[name], "agree": str(ours).lower() == str(ref[name]).lower()})
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
