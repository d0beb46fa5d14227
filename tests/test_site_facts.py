"""The remote machines' committed Spack locks carry their own facts, not the solving host's.

No Spack needed: each lock (environments/<m>/spack.lock) is read as JSON and compared with what
site-configs/<m>/machine.yaml declares (`os:` — the nodes' OS and glibc, with its source) and with
the root specs environments/<m>/spack.yaml asks for. scripts/site_lock.py makes such a lock.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
REMOTE = ["betzy", "bm-optimized3-36", "perlmutter"]


def _lock(machine: str) -> dict:
    return json.loads((REPO / "environments" / machine / "spack.lock").read_text())


def _declared_os(machine: str) -> dict:
    facts = yaml.safe_load((REPO / "site-configs" / machine / "machine.yaml").read_text())
    assert "os" in facts, f"site-configs/{machine}/machine.yaml declares no os: (OS and glibc)"
    return facts["os"]


def wrong_os_and_libc(lock: dict, spack_os: str, glibc: str) -> List[str]:
    """Every node of ``lock`` whose OS is not ``spack_os`` and every libc other than ``glibc``."""
    wrong = []
    for node in lock["concrete_specs"].values():
        label = f"{node['name']}@{node['version']}"
        node_os = node.get("arch", {}).get("platform_os")
        if node_os != spack_os:
            wrong.append(f"{label}: os={node_os}")
        if node["name"] in ("glibc", "musl") and (node["name"], node["version"]) != ("glibc",
                                                                                       glibc):
            wrong.append(f"libc {label}")
    return wrong


@pytest.mark.parametrize("machine", REMOTE)
def test_lock_carries_the_sites_os_and_glibc(machine: str) -> None:
    declared = _declared_os(machine)
    assert declared["source"].strip(), "say where the OS comes from"
    lock = _lock(machine)
    libcs = [n for n in lock["concrete_specs"].values() if n["name"] == "glibc"]
    assert libcs, "the lock records no glibc (its compilers' libc)"
    wrong = wrong_os_and_libc(lock, declared["spack_os"], declared["glibc"])
    assert not wrong, (f"environments/{machine}/spack.lock is not solved for {declared['name']} "
                       f"({declared['spack_os']}, glibc {declared['glibc']}): "
                       f"{', '.join(sorted(set(wrong))[:8])}; run .venv/bin/python "
                       f"scripts/site_lock.py {machine}")


def test_a_lock_solved_on_this_host_is_caught() -> None:
    """The check fails on a lock with the host's facts (here: one planted node)."""
    lock = _lock("betzy")
    declared = _declared_os("betzy")
    assert not wrong_os_and_libc(lock, declared["spack_os"], declared["glibc"])
    planted = json.loads(json.dumps(lock))
    glibc = next(n for n in planted["concrete_specs"].values() if n["name"] == "glibc")
    glibc["version"] = "2.36"
    glibc["arch"]["platform_os"] = "debian12"
    assert wrong_os_and_libc(planted, declared["spack_os"], declared["glibc"]) == [
        "glibc@2.36: os=debian12", "libc glibc@2.36"]


# --- the lock's roots are the spack.yaml's specs ----------------------------------------------


def _expand(env: dict) -> List[str]:
    """spack.yaml `specs` with `definitions` and `matrix` expanded ($name, $^name)."""
    defs: Dict[str, List[str]] = {}
    for entry in env.get("definitions", []):
        (name, values), = ((k, v) for k, v in entry.items() if k != "when")
        defs[name] = values

    def items(row: List[str]) -> List[str]:
        out = []
        for item in row:
            if item.startswith("$^"):
                out += ["^" + s for s in defs[item[2:]]]
            elif item.startswith("$"):
                out += defs[item[1:]]
            else:
                out.append(item)
        return out

    specs: List[str] = []
    for entry in env["specs"]:
        if isinstance(entry, dict):
            rows = [items(row) for row in entry["matrix"]]
            combos = [""]
            for row in rows:
                combos = [f"{c} {r}".strip() for c in combos for r in row]
            specs += combos
        else:
            specs.append(entry)
    return specs


TOKEN = re.compile(r"@[^\s+~^]+|[+~][\w-]+|[\w-]+:?=[^\s+~^]+")


def canonical(spec: str) -> str:
    """A spec string with its nodes, variants and multi-valued values in a fixed order."""
    nodes = []
    for part in spec.split("^"):
        part = part.strip()
        if not part:
            continue
        name = re.match(r"[\w-]+", part).group(0)
        tokens = []
        for token in TOKEN.findall(part[len(name):]):
            key, sep, value = re.match(r"([\w-]+)(:?=)?(.*)", token.lstrip("+~")).groups() \
                if "=" in token else (token, "", "")
            tokens.append(f"{key}{sep}{','.join(sorted(value.split(',')))}" if sep else token)
        nodes.append(" ".join([name, *sorted(tokens)]))
    return nodes[0] + "".join(f" ^{n}" for n in sorted(nodes[1:]))


def test_canonical_spec_ignores_order_only() -> None:
    assert canonical("openmpi@4.1.8 fabrics:=ucx,cma schedulers=slurm +legacylaunchers ^ucx ~xpmem") \
        == canonical("openmpi@4.1.8+legacylaunchers fabrics:=cma,ucx schedulers=slurm ^ucx~xpmem")
    assert canonical("ucx +xpmem") != canonical("ucx ~xpmem")
    assert canonical("ghexbench rma=none ^openmpi fabrics:=ucx,cma") != canonical(
        "ghexbench rma=xpmem ^openmpi fabrics:=ucx,cma")


@pytest.mark.parametrize("machine", REMOTE)
def test_lock_roots_are_the_environments_specs(machine: str) -> None:
    env = yaml.safe_load((REPO / "environments" / machine / "spack.yaml").read_text())["spack"]
    wanted = Counter(canonical(s) for s in _expand(env))
    locked = Counter(canonical(r["spec"]) for r in _lock(machine)["roots"])
    assert locked == wanted, (
        f"environments/{machine}/spack.lock is stale: only in spack.yaml: "
        f"{sorted((wanted - locked).elements())}; only in the lock: "
        f"{sorted((locked - wanted).elements())}; run .venv/bin/python scripts/site_lock.py "
        f"{machine}")
