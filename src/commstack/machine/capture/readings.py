"""Each fact `machine capture` reads on this host, beside what the committed files say."""

from __future__ import annotations

import re
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from commstack import flavours
from commstack.machine import Machine
from commstack.machine.check import checks, probes
from commstack.machine.check import externals as ext
from commstack.machine.check.checks import NODE_FACTS, is_verify
from commstack.machine.check.result import Unreadable

# The communication stack's packages `spack external find` is asked for.
SPACK_FIND = (*flavours.spack_externals(), "ucx", "ucc", "hcoll", "pmix", "slurm", "libfabric",
              "hwloc", "xpmem", "knem", "rdma-core")
SPACK_FIND_TIMEOUT = 600


@dataclass(frozen=True)
class Provenance:
    host: str
    date: str  # UTC, minutes

    @classmethod
    def here(cls) -> "Provenance":
        return cls(socket.gethostname(),
                   datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


@dataclass
class Reading:
    """One captured fact: committed vs captured, how it was read, and where it goes."""

    fact: str
    committed: Any
    value: Any = None  # None: not read here (``note`` says why)
    command: str = ""
    file: str = "machine.yaml"
    path: Optional[Tuple[Any, ...]] = None  # where the value goes in ``file`` (None: report only)
    note: str = ""
    agrees: Callable[[Any, Any], bool] = field(default=checks.equal, repr=False)

    @property
    def read(self) -> bool:
        return self.value is not None

    @property
    def differs(self) -> bool:
        """Read here and not what the committed files say (a fact they lack but have a place
        for included; a reading they have no fact for, like srun's plugins, is not)."""
        if not self.read or self.committed is None and self.path is None:
            return False
        return (self.committed is None or is_verify(self.committed)
                or not self.agrees(self.committed, self.value))

    def to_dict(self, prov: Provenance) -> Dict[str, Any]:
        return {"fact": self.fact, "committed": self.committed, "captured": self.value,
                "command": scrub(self.command), "host": prov.host, "date": prov.date,
                "file": self.file, "placed": self.path is not None and self.differs,
                "note": scrub(self.note)}


def scrub(text: Any) -> Any:
    """No home directory in anything written: $HOME (and /home/<user>) become ~."""
    if isinstance(text, list):
        return [scrub(t) for t in text]
    if not isinstance(text, str):
        return text
    home = str(Path.home())
    if home not in ("/", "") and home in text:
        text = text.replace(home, "~")
    return re.sub(r"/home/[^/\s]+", "~", text)


def _read(reading: Reading, probe: Callable[[], Tuple[Any, str]]) -> Reading:
    try:
        reading.value, reading.command = probe()
    except Unreadable as exc:
        reading.note = f"not read here: {exc}"
    return reading


def node_readings(machine: Machine) -> List[Reading]:
    kind = machine.scheduler.get("kind", "local")
    out = []
    for name in NODE_FACTS:
        reading = Reading(f"node.{name}", machine.node.get(name), path=("node", name))
        try:
            layout, how = probes.node_layout(kind)
            if name in layout:
                reading.value, reading.command = layout[name], how
            else:
                reading.note = f"{how} does not give {name}"
        except Unreadable as exc:
            reading.note = f"not read here: {exc}"
        if reading.read or reading.committed is not None:
            out.append(reading)
    return out


def os_readings(machine: Machine) -> List[Reading]:
    declared = machine.facts.get("os") or {}
    return [_read(Reading("os.name", declared.get("name"), path=("os", "name"),
                          agrees=lambda d, m: True), probes.os_release),
            _read(Reading("os.spack_os", declared.get("spack_os"), path=("os", "spack_os")),
                  probes.spack_os),
            _read(Reading("os.glibc", declared.get("glibc"), path=("os", "glibc")),
                  probes.glibc_version)]


def slurm_readings(machine: Machine) -> List[Reading]:
    if machine.scheduler.get("kind") != "slurm":
        return []
    out = [_read(Reading("slurm.version", None, agrees=ext.same_version), probes.slurm_version)]
    for number, item in enumerate(machine.facts.get("verify", {}).get("checks", [])):
        if item.get("probe") == "slurm_version":
            out[0].committed = str(item.get("expect"))
            out[0].path = ("verify", "checks", number, "expect")
    plugins = _read(Reading("slurm.mpi_plugins", None, agrees=checks.contains),
                    probes.srun_mpi_plugins)
    out.append(plugins)
    for flavour, launcher in sorted(machine.facts.get("launchers", {}).items()):
        for arg in launcher.get("args", []) if launcher.get("command") == "srun" else []:
            if arg.startswith("--mpi="):
                wanted = arg.split("=", 1)[1]
                reading = Reading(f"launchers.{flavour}: srun {arg}", wanted,
                                  agrees=lambda d, m: m is True)
                if plugins.read:
                    reading.value, reading.command = wanted in plugins.value, plugins.command
                    if not reading.value:
                        reading.note = f"srun --mpi=list has {', '.join(plugins.value)}"
                out.append(reading)
    return out


def network_readings(machine: Machine) -> List[Reading]:
    devices = machine.facts.get("network", {}).get("devices")
    out = [_read(Reading("network.devices", devices, path=("network", "devices") if devices
                         is not None else None,
                         agrees=lambda d, m: sorted(d or []) == sorted(m)), probes.rdma_devices),
           _read(Reading("network.ofi_providers", None, agrees=lambda d, m: True),
                 probes.ofi_providers)]
    return out


def verify_readings(machine: Machine) -> List[Reading]:
    """verify.checks with a probe of presence: kernel modules, libraries, paths, commands."""
    out = []
    for item in machine.facts.get("verify", {}).get("checks", []):
        probe, arg = item.get("probe"), str(item.get("arg", ""))
        if probe not in ("kernel_module", "library", "path", "command", "env_module"):
            continue
        reading = Reading(f"{probe} {arg}", item.get("expect", True))
        _read(reading, lambda p=probe, a=arg: checks.PROBES[p][0](a))
        out.append(reading)
    return out


def launcher_readings(machine: Machine) -> List[Reading]:
    """The launchers' PMI libraries (an env value naming a file): present, or the library of
    the same name ldconfig knows here."""
    out = []
    for flavour, launcher in sorted(machine.facts.get("launchers", {}).items()):
        for var, value in sorted((launcher.get("env") or {}).items()):
            value = str(value)
            if not value.startswith("/"):
                continue
            reading = Reading(f"launchers.{flavour}.env.{var}", value,
                              path=("launchers", flavour, "env", var))
            if Path(value).exists():
                reading.value, reading.command = value, f"{value} exists"
            else:
                stem = re.sub(r"\.so.*", ".so", Path(value).name)
                try:
                    found, how = probes.shared_libraries()
                    hits = sorted(p for name, p in found.items() if name.startswith(stem))
                    if hits:
                        reading.value, reading.command = hits[0], f"{how} ({stem}*)"
                    else:
                        reading.note = f"{value} is absent and {how} has no {stem}*"
                except Unreadable as exc:
                    reading.note = f"{value} is absent; {exc}"
            out.append(reading)
    return out


def external_readings(packages: Optional[Path]) -> List[Reading]:
    """Each external's version as its own tool reports it, its prefix and its modules."""
    if packages is None:
        return []
    out = []
    for e in ext.read_externals(packages):
        if e.prefix and not Path(e.prefix).exists():
            out.append(Reading(f"external {e.label}: prefix", e.prefix, value=False,
                               command=f"{e.prefix} is absent", file="packages.yaml",
                               agrees=lambda d, m: m is True))
            continue
        probe = ext.VERSION_PROBES.get(e.package)
        if probe and e.version:
            agrees = ext.same_version if e.version != ext.ANY_VERSION else lambda d, m: True
            out.append(_read(Reading(f"external {e.package}: version", e.version,
                                     file="packages.yaml", path=("external", e.spec),
                                     agrees=agrees), lambda p=probe, x=e: p(x)))
        for module in e.modules:
            out.append(_read(Reading(f"external {e.label}: module {module}", True,
                                     file="packages.yaml"),
                             lambda m=module: probes.environment_module(m)))
    return out


def spack_external_find(packages: Optional[Path]) -> List[Reading]:
    """`spack external find` of the stack's packages, into a scratch scope: what Spack detects
    here, beside the committed externals (same prefix: its version; else: not declared)."""
    from commstack import spack as spack_support

    executable = spack_support.find_spack()
    if executable is None:
        return [Reading("spack external find", None, note="not read here: no spack "
                        "($COMMSTACK_SPACK, spack on PATH or ~/.cache/commstack/spack)")]
    committed = ext.read_externals(packages) if packages else []
    with tempfile.TemporaryDirectory(prefix="commstack-capture-") as scratch:
        # A scratch user scope and cache: nothing shared is written or waited for.
        env = {**spack_support.spack_environ(), "SPACK_USER_CONFIG_PATH": scratch,
               "SPACK_USER_CACHE_PATH": str(Path(scratch) / "cache")}
        env.pop("SPACK_DISABLE_LOCAL_CONFIG", None)  # the user scope is the scratch folder
        argv = [str(executable), "external", "find", "--scope", "user", *SPACK_FIND]
        command = f"spack external find --scope user {' '.join(SPACK_FIND)}"
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=SPACK_FIND_TIMEOUT)
        except subprocess.TimeoutExpired:
            return [Reading("spack external find", None,
                            note=f"not read here: took more than {SPACK_FIND_TIMEOUT} s")]
        if proc.returncode != 0:
            last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:]
            return [Reading("spack external find", None, note="not read here: failed "
                            f"(exit {proc.returncode}){': ' + last[0][:200] if last else ''}")]
        found_file = Path(scratch) / "packages.yaml"
        found = ext.read_externals(found_file) if found_file.is_file() else []
    out = []
    for f in found:
        same = [c for c in committed if c.package == f.package and c.prefix == f.prefix]
        if same and same[0].version:
            out.append(Reading(f"external {f.package} at {f.prefix}: spack version",
                               same[0].version, value=f.version, command=command,
                               file="packages.yaml", path=("external", same[0].spec),
                               agrees=ext.same_version))
        else:
            out.append(Reading(f"external {f.package} at {f.prefix}: spack detects",
                               "(not declared)", value=f.spec, command=command,
                               file="packages.yaml", agrees=lambda d, m: False,
                               note="not in the committed packages.yaml: add it if a stack "
                                    "needs it"))
    if not found:
        out.append(Reading("spack external find", None, value=[], command=command,
                           agrees=lambda d, m: True, note="none of the stack's packages found"))
    return out


def capture_readings(machine: Machine, packages: Optional[Path],
                     use_spack: bool = True) -> List[Reading]:
    readings = (node_readings(machine) + os_readings(machine) + slurm_readings(machine)
                + network_readings(machine) + launcher_readings(machine)
                + verify_readings(machine) + external_readings(packages))
    if use_spack:
        readings += spack_external_find(packages)
    return readings

