"""What `commstack machine check` checks: every fact machine.yaml and packages.yaml declare that
the machine can confirm, plus machine.yaml's verify.checks, each read by a probe."""

from __future__ import annotations

import getpass
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from commstack.machine import Machine, MachineError
from commstack.machine.check import externals as ext
from commstack.machine.check import probes
from commstack.machine.check.identity import this_machine
from commstack.machine.check.result import CONTRADICTION, NOT_HERE, OK, UNKNOWN, Check, Outcome, Unreadable
from commstack.machine.check.tools import output

NODE_FACTS = ("sockets", "cores_per_socket", "threads_per_core", "numa_per_socket", "l3_per_numa")
Reading = Tuple[Any, str]  # (measured value, how it was read)


@dataclass
class Spec:
    fact: str
    declared: Any
    read: Callable[[], Reading]
    agrees: Callable[[Any, Any], bool]
    source: str = "machine.yaml"
    why: str = ""
    cheap: bool = False


def equal(declared: Any, measured: Any) -> bool:
    return declared == measured


def contains(declared: Any, measured: Any) -> bool:
    wanted = declared if isinstance(declared, list) else [declared]
    return all(w in measured for w in wanted)


def _node_fact(scheduler: str, name: str) -> Callable[[], Reading]:
    def read() -> Reading:
        layout, how = probes.node_layout(scheduler)
        if name not in layout:
            raise Unreadable(f"{how} does not give {name}"
                             + (" (read inside an allocation)" if "scontrol" in how else ""))
        return layout[name], how
    return read


def _mpi_plugins() -> Reading:
    return probes.srun_mpi_plugins()


def _file(path: str) -> Callable[[], Reading]:
    return lambda: (Path(path).exists(), f"{path} {'exists' if Path(path).exists() else 'is absent'}")


def derived_specs(machine: Machine) -> List[Spec]:
    """The checks machine.yaml's own facts imply."""
    kind = machine.scheduler.get("kind", "local")
    specs = [Spec(f"node.{name}", machine.node[name], _node_fact(kind, name), equal, cheap=True)
             for name in NODE_FACTS if name in machine.node]
    devices = machine.facts.get("network", {}).get("devices") or []
    if devices:
        specs.append(Spec("network.devices", devices, probes.rdma_devices, contains))
    for flavour, launcher in sorted(machine.facts.get("launchers", {}).items()):
        if launcher.get("command") == "srun":
            for arg in launcher.get("args", []):
                if arg.startswith("--mpi="):
                    specs.append(Spec(f"launchers.{flavour}: srun {arg}", arg.split("=", 1)[1],
                                      _mpi_plugins, contains, cheap=True))
        for var, value in sorted((launcher.get("env") or {}).items()):
            if str(value).startswith("/"):
                specs.append(Spec(f"launchers.{flavour}.env.{var}", str(value), _file(str(value)),
                                  lambda d, m: m is True))
    declared_os = machine.facts.get("os") or {}
    if declared_os.get("spack_os"):
        specs.append(Spec("os.spack_os", declared_os["spack_os"], probes.spack_os, equal))
    if declared_os.get("glibc"):
        specs.append(Spec("os.glibc", str(declared_os["glibc"]), probes.glibc_version, equal))
    partition = machine.scheduler.get("partition")
    if kind == "slurm" and partition:
        specs.append(Spec("scheduler.partition", partition, probes.slurm_partitions, contains))
    return specs


def external_specs(packages: Path) -> List[Spec]:
    """Each Spack external's prefix, version (as the tool reports it) and modules."""
    specs: List[Spec] = []
    for e in ext.read_externals(packages):
        prefix = e.prefix
        if prefix:
            specs.append(Spec(f"external {e.label}: prefix", prefix, _file(prefix),
                              lambda d, m: m is True, source="packages.yaml"))
        probe = ext.VERSION_PROBES.get(e.package)
        if probe and e.version:
            # @os (NERSC's spelling): whatever version the site installs; read, never wrong.
            agrees = ext.same_version if e.version != ext.ANY_VERSION else lambda d, m: True
            specs.append(Spec(f"external {e.label}: version", e.version,
                              _version(e, probe), agrees, source="packages.yaml"))
        for module in e.modules:
            specs.append(Spec(f"external {e.label}: module {module}", True,
                              lambda m=module: probes.environment_module(m), equal,
                              source="packages.yaml"))
    return specs


def _version(e: ext.External, probe: Callable[[ext.External], Reading]) -> Callable[[], Reading]:
    def read() -> Reading:
        if e.prefix and not Path(e.prefix).exists():
            raise Unreadable(f"prefix {e.prefix} is absent")
        return probe(e)
    return read


def _library(name: str) -> Reading:
    found, how = probes.shared_libraries()
    hits = sorted(path for soname, path in found.items() if soname.startswith(name))
    return bool(hits), f"{how}: {', '.join(hits) if hits else f'no {name}*'}"


def _accounts() -> Reading:
    user = os.environ.get("USER") or getpass.getuser()
    text = output(["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", "format=account"])
    return sorted(set(text.split())), f"sacctmgr show assoc user={user}"


def _kernel_module(name: str) -> Reading:
    loaded, how = probes.kernel_modules()
    return name in loaded, f"{how}: {name} {'loaded' if name in loaded else 'not loaded'}"


def _command(name: str) -> Reading:
    path = shutil.which(name)
    return path is not None, path or f"{name} not on PATH"


def _ofi_provider(name: str) -> Reading:
    providers, how = probes.ofi_providers()
    return providers, how


# verify.checks[].probe -> (read(arg), how declared and measured agree, default expectation)
PROBES: Dict[str, Tuple[Callable[[str], Reading], Callable[[Any, Any], bool], Any]] = {
    "kernel_module": (_kernel_module, equal, True),
    "library": (_library, equal, True),
    "path": (lambda arg: _file(arg)(), equal, True),
    "command": (_command, equal, True),
    "env_module": (probes.environment_module, equal, True),
    "ofi_provider": (_ofi_provider, lambda d, m: d is True or contains(d, m), True),
    "os_release": (lambda arg: probes.os_release(),
                   lambda d, m: re.search(str(d), m) is not None, None),
    "slurm_accounts": (lambda arg: _accounts(), contains, None),
    "slurm_version": (lambda arg: probes.slurm_version(), lambda d, m: ext.same_version(str(d), m),
                      None),
}


# Fact families commstack derives checks for; one may be empty for a machine (no externals).
FAMILIES_READ = ("node", "network", "launchers", "scheduler", "external", "slurm")


def explicit_specs(machine: Machine, derived: List[Spec]) -> List[Spec]:
    """verify.checks: a probe of its own, or the why of derived checks (`fact` their prefix)."""
    specs: List[Spec] = []
    for number, item in enumerate(machine.facts.get("verify", {}).get("checks", [])):
        fact, why = item["fact"], item.get("why", "")
        probe = item.get("probe")
        if probe is None:
            matched = [s for s in derived if s.fact.startswith(fact)]
            if not matched and fact.split(".")[0] in FAMILIES_READ:
                continue  # e.g. `external` where no packages.yaml sits beside machine.yaml
            if not matched:
                raise MachineError(f"{machine.path}: verify.checks[{number}]: fact {fact!r} is "
                                   "no fact commstack reads; give it a probe")
            for spec in matched:
                spec.why = "; ".join(filter(None, [spec.why, why]))
            continue
        read, agrees, default = PROBES[probe]
        arg = str(item.get("arg", ""))
        expected = item.get("expect", default)
        if probe == "ofi_provider" and "expect" not in item:
            expected = arg
        if expected is None and probe == "slurm_accounts":
            expected = machine.scheduler.get("account")
        if expected is None:
            raise MachineError(f"{machine.path}: verify.checks[{number}] ({fact}): probe "
                               f"{probe} needs `expect`")
        specs.append(Spec(fact, expected, lambda r=read, a=arg: r(a), agrees, why=why,
                          cheap=bool(item.get("cheap", False))))
    return specs


def packages_file(machine: Machine) -> Optional[Path]:
    if machine.path is None:
        return None
    path = machine.path.parent / "packages.yaml"
    return path if path.is_file() else None


def all_specs(machine: Machine, packages: Optional[Path] = None) -> List[Spec]:
    derived = derived_specs(machine)
    packages = packages or packages_file(machine)
    if packages is not None:
        derived += external_specs(packages)
    return derived + explicit_specs(machine, derived)


def evaluate(spec: Spec) -> Check:
    base = dict(fact=spec.fact, declared=spec.declared, source=spec.source, why=spec.why,
                cheap=spec.cheap)
    try:
        measured, how = spec.read()
    except Unreadable as exc:
        return Check(measured=None, verdict=UNKNOWN, how=f"could not be read here: {exc}", **base)
    if is_verify(spec.declared):
        return Check(measured=measured, verdict=UNKNOWN, how=f"declared {VERIFY}: {how} says "
                     f"{show(measured)} (`commstack machine capture` writes it)", **base)
    if spec.agrees(spec.declared, measured):
        return Check(measured=measured, verdict=OK, how=how, **base)
    reason = (how if isinstance(measured, bool) else
              f"{spec.source} says {show(spec.declared)}, {how} says {show(measured)}")
    return Check(measured=measured, verdict=CONTRADICTION, how=reason, **base)


# A fact no public source states: read on the machine (machine check: ?, capture fills it in).
VERIFY = "VERIFY"


def is_verify(declared: Any) -> bool:
    return declared == VERIFY or isinstance(declared, list) and VERIFY in declared


def show(value: Any) -> str:
    if value is None:
        return "—"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "(none)"
    return str(value)


def check_machine(machine: Machine, packages: Optional[Path] = None,
                  cheap_only: bool = False) -> Outcome:
    """Every check (or only the cheap ones) of ``machine``, read on this host."""
    specs = all_specs(machine, packages)
    if cheap_only:
        specs = [s for s in specs if s.cheap]
    here, identity = this_machine(machine.facts.get("verify", {}).get("this_machine") or {})
    if not here:
        checks = [Check(s.fact, s.declared, None, NOT_HERE, "not read: this host is not "
                        f"{machine.name}", s.source, s.why, s.cheap) for s in specs]
        return Outcome(machine.name, False, identity, checks)
    return Outcome(machine.name, True, identity, [evaluate(s) for s in specs])
