"""Which machine a `commstack machine` action reads: one named (a site config or a
machine.yaml), else the site config that recognises this host, else local."""

from __future__ import annotations

from pathlib import Path
from typing import List

from commstack.machine import Machine, MachineError, find_machine, load_machine_file

SITE_CONFIGS = Path(__file__).resolve().parents[3] / "site-configs"


def resolve(name: str) -> Machine:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return load_machine_file(path)
    if path.is_dir() and (path / "machine.yaml").is_file():
        return load_machine_file(path / "machine.yaml")
    machine = find_machine(name, Path.cwd())
    if machine is None:
        known = sorted(p.parent.name for p in SITE_CONFIGS.glob("*/machine.yaml"))
        raise MachineError(f"machine {name!r}: no site-configs/{name}/machine.yaml (known: "
                           f"{', '.join(known)}) and no such file")
    return machine


def default_machine() -> Machine:
    """The site config that recognises this host (verify.this_machine), else local."""
    from commstack.machine.check.identity import this_machine

    candidates: List[Machine] = [load_machine_file(p)
                                 for p in sorted(SITE_CONFIGS.glob("*/machine.yaml"))]
    for machine in candidates:
        markers = machine.facts.get("verify", {}).get("this_machine")
        if markers and this_machine(markers)[0]:
            return machine
    return resolve("local")
