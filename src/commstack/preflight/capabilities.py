"""What one stack can do, as its own tools say: Open MPI's components and MCA parameters
(ompi_info), UCX's transports, devices and variables (ucx_info), the variable names Intel MPI
(impi_info) and MPICH (mpivars) list. Read lazily (only what a point asks about) through a
``ToolCache``; a tool that is missing or fails leaves the answer ``None`` with the reason."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Optional, Set, Tuple

from commstack import flavours
from commstack.launch.stack import ResolvedStack
from commstack.preflight.tools import ToolCache, ToolOutput, find_tool

_COMPONENT = re.compile(r'^mca:([a-z0-9_]+):([a-z0-9_]+):version:"component:', re.M)
_PARAM = re.compile(r"^mca:([a-z0-9_]+):([a-z0-9_]+):param:([a-z0-9_]+):", re.M)
_TRANSPORT = re.compile(r"^#\s+Transport:\s+(\S+)", re.M)
_DEVICE = re.compile(r"^#\s+Device:\s+(\S+)", re.M)
_UCX_VERSION = re.compile(r"^#\s*(?:Library )?[Vv]ersion:?\s*(\d\S*)", re.M)
_UCX_ERROR = re.compile(r"UCX\s+ERROR\s+(.+)$", re.M)


@dataclass(frozen=True)
class Components:
    """Open MPI's MCA components per framework and every parameter name ompi_info lists."""

    frameworks: Dict[str, FrozenSet[str]]  # framework -> components ("base" left out)
    params: FrozenSet[str]
    source: str

    def has(self, framework: str, component: str) -> bool:
        return component in self.frameworks.get(framework, frozenset())


@dataclass(frozen=True)
class Listing:
    """Variable names of one family a tool lists; ``names`` None when it could not say."""

    prefix: str
    names: Optional[FrozenSet[str]]
    source: str  # the command, or why there is no answer


@dataclass(frozen=True)
class UcxResources:
    transports: FrozenSet[str]
    devices: FrozenSet[str]
    version: str


@dataclass
class StackCapabilities:
    stack: ResolvedStack
    tools: ToolCache
    _memo: Dict[Tuple[str, ...], object] = field(default_factory=dict)

    @property
    def flavour(self) -> flavours.Flavour:
        return self.stack.kind

    def listing_env(self) -> Dict[str, str]:
        """The stack's environment without UCX_*/UCC_* settings: a listing shows the installation,
        not what the caller's shell or the stack's `env` narrowed it to."""
        return {k: v for k, v in self.stack.full_env().items() if not k.startswith(("UCX_", "UCC_"))}

    def _run(self, argv: Tuple[str, ...], extra: Optional[Dict[str, str]] = None
             ) -> Tuple[Optional[ToolOutput], str]:
        """The tool's output, or None and why (not found)."""
        env = self.listing_env()
        exe = find_tool(argv[0], env, self.stack.launcher)
        if exe is None:
            return None, f"{argv[0]} not found on the stack's PATH"
        env.update(extra or {})
        return self.tools.run(exe, argv[1:], env), " ".join(argv)

    def components(self) -> "Components | str":
        """Open MPI's components, or why they could not be read."""
        argv = self.flavour.component_tool()
        if argv is None:
            return f"{self.flavour.label} has no component listing"
        key = ("components",)
        if key not in self._memo:
            out, source = self._run(argv)
            self._memo[key] = _components(out, source) if out is not None else source
        return self._memo[key]  # type: ignore[return-value]

    def names(self, prefix: str) -> Listing:
        key = ("names", prefix)
        if key not in self._memo:
            argv = self.flavour.variable_tools()[prefix]
            out, source = self._run(argv)
            self._memo[key] = _listing(prefix, out, source)
        return self._memo[key]  # type: ignore[return-value]

    def ucx(self) -> "UcxResources | str":
        """UCX's transports and devices here (ucx_info -d) and its version (ucx_info -v)."""
        key = ("ucx",)
        if key not in self._memo:
            out, source = self._run(("ucx_info", "-d"))
            if out is None or out.returncode != 0 or not _TRANSPORT.search(out.text):
                self._memo[key] = _failed(out, source, "transports")
            else:
                version, _ = self._run(("ucx_info", "-v"))
                found = _UCX_VERSION.search(version.text) if version else None
                self._memo[key] = UcxResources(frozenset(_TRANSPORT.findall(out.text)),
                                               frozenset(_DEVICE.findall(out.text)),
                                               found.group(1) if found else "(version unknown)")
        return self._memo[key]  # type: ignore[return-value]

    def ucx_value_errors(self, name: str, value: str) -> Optional[str]:
        """What this UCX's own parser says of ``name=value`` (ucx_info -c -a with it set), or
        None when it accepts it (or ucx_info is missing: the name check says so already)."""
        key = ("value", name, value)
        if key not in self._memo:
            out, _ = self._run(("ucx_info", "-c", "-a"), {name: value})
            errors = sorted(set(_UCX_ERROR.findall(out.text))) if out is not None else []
            self._memo[key] = "; ".join(e.strip() for e in errors) or None
        return self._memo[key]  # type: ignore[return-value]


def _failed(out: Optional[ToolOutput], source: str, what: str) -> str:
    if out is None:
        return source
    first = next((line for line in out.text.splitlines() if line.strip()), "no output")
    return f"{out.command} listed no {what} (exit {out.returncode}: {first.strip()[:200]})"


def _components(out: ToolOutput, source: str) -> "Components | str":
    found: Dict[str, Set[str]] = {}
    params: Set[str] = set()
    for framework, component in _COMPONENT.findall(out.text):
        found.setdefault(framework, set()).add(component)
    for framework, _component, param in _PARAM.findall(out.text):
        found.setdefault(framework, set())
        params.add(param)
    if out.returncode != 0 or not params:
        return _failed(out, source, "MCA parameters")
    return Components({fw: frozenset(c - {"base"}) for fw, c in found.items()}, frozenset(params),
                      out.command)


def _listing(prefix: str, out: Optional[ToolOutput], source: str) -> Listing:
    if out is None:
        return Listing(prefix, None, source)
    # Names start a line, after a table's "| " (impi_info) or a tab (mpivars).
    pattern = re.compile(rf"^[\s|]*({re.escape(prefix)}[A-Z0-9_]+)", re.M)
    names = frozenset(pattern.findall(out.text))
    if out.returncode != 0 or not names:
        return Listing(prefix, None, _failed(out, source, f"{prefix}* variables"))
    return Listing(prefix, names, out.command)
