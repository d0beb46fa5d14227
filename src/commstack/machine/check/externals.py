"""Spack externals (site-configs/<machine>/packages.yaml): each prefix, version and module."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml

from commstack import flavours
from commstack.machine.check.result import Unreadable
from commstack.machine.check.tools import output, read, which

VERSION = re.compile(r"(?<!\d)\d+(?:[._]\d+)+(?:p\d+)?")  # (?<!\d): linear on a run of digits
# An external's version that names no version: the one the OS or site installs, updated by the
# site at will (NERSC declares cray-pmi@os, slurm@os).
ANY_VERSION = "os"


@dataclass
class External:
    package: str
    spec: str
    version: Optional[str]
    prefix: Optional[str]
    modules: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.package}@{self.version}" if self.version else self.package


def read_externals(path: Path) -> List[External]:
    data = yaml.safe_load(Path(path).read_text()) or {}
    found: List[External] = []
    for key, settings in (data.get("packages") or {}).items():
        for entry in (settings or {}).get("externals") or []:
            spec = str(entry.get("spec", ""))
            match = re.match(r"\s*([\w-]+)(?:@=?([^\s%+~]+))?", spec)
            package = match.group(1) if match else key.rstrip(":")
            found.append(External(package, spec, match.group(2) if match else None,
                                  entry.get("prefix"), list(entry.get("modules") or []),
                                  entry.get("extra_attributes") or {}))
    return found


def first_version(text: str) -> Optional[str]:
    match = VERSION.search(text)
    return match.group(0).replace("_", ".") if match else None


def _tool(program: str, *args: str, stderr_too: bool = False) -> Callable[[External], Tuple[str, str]]:
    def probe(ext: External) -> Tuple[str, str]:
        path = which(program, ext.prefix)
        if path is None:
            raise Unreadable(f"no {program} in {ext.prefix}/bin")
        text = output([path, *args], stderr_too=stderr_too)
        version = first_version(text)
        if version is None:
            raise Unreadable(f"{program} {' '.join(args)}: no version in {text.strip()[:60]!r}")
        return version, f"{path} {' '.join(args)}"
    return probe


def _header(relative: str, macro: str) -> Callable[[External], Tuple[str, str]]:
    """A version macro in a header under the prefix (also include/<multiarch>/...)."""
    def probe(ext: External) -> Tuple[str, str]:
        include = Path(ext.prefix or "/nonexistent") / "include"
        candidates = [include / relative, *sorted(include.glob(f"*/{relative}"))]
        for header in candidates:
            if header.is_file():
                match = re.search(rf"#\s*define\s+{macro}\s+\"?([^\"\s]+)", read(str(header)))
                version = first_version(match.group(1)) if match else None
                if version:
                    return version, f"{macro} in {header}"
        raise Unreadable(f"no {relative} with {macro} under {include}")
    return probe


def _gcc(ext: External) -> Tuple[str, str]:
    compiler = (ext.extra.get("compilers") or {}).get("c") or which("gcc", ext.prefix) or "gcc"
    return output([compiler, "-dumpfullversion"]).strip(), f"{compiler} -dumpfullversion"


# package -> how its version is read on the machine; packages without one get the prefix check.
VERSION_PROBES: Dict[str, Callable[[External], Tuple[str, str]]] = {
    **{package: _tool(*argv) for package, argv in flavours.external_probes().items()},
    "ucx": _tool("ucx_info", "-v"),
    "hwloc": _tool("lstopo", "--version"),
    "libfabric": _tool("fi_info", "--version"),
    "slurm": _tool("srun", "--version"),
    "cmake": _tool("cmake", "--version"),
    "gmake": _tool("make", "--version"),
    "pkgconf": _tool("pkgconf", "--version"),
    "perl": _tool("perl", "-e", "print $^V"),
    "autoconf": _tool("autoconf", "--version"),
    "automake": _tool("automake", "--version"),
    "libtool": _tool("libtoolize", "--version"),
    "m4": _tool("m4", "--version"),
    "openssh": _tool("ssh", "-V", stderr_too=True),
    "gcc": _gcc,
    "boost": _header("boost/version.hpp", "BOOST_LIB_VERSION"),
    "zlib": _header("zlib.h", "ZLIB_VERSION"),
    "libevent": _header("event2/event-config.h", "EVENT__VERSION"),
    "hcoll": _header("hcoll/api/hcoll_version.h", "HCOLL_VERNO_STRING"),
}


def same_version(declared: str, measured: str) -> bool:
    """12.3 agrees with 12.3.0; 4.1.4 does not agree with 4.1.5."""
    return measured == declared or measured.startswith(declared + ".") or \
        declared.startswith(measured + ".") and set(declared[len(measured) + 1:]) <= set("0.")
