"""The proposed machine.yaml and packages.yaml: the committed text with each captured value
that differs put in place (comments and layout kept), its provenance in a comment beside it."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

import yaml

from commstack.machine import Machine
from commstack.machine.capture.readings import Provenance, Reading, scrub


class CannotPlace(Exception):
    """The value's place is not a plain `key: value` line (a flow mapping, a block list)."""


@dataclass
class Proposal:
    machine_path: Path
    packages_path: Optional[Path]
    provenance: Provenance
    readings: List[Reading]
    machine: Tuple[str, str] = ("", "")  # committed, proposed
    packages: Tuple[str, str] = ("", "")
    unplaced: List[Reading] = field(default_factory=list)  # differs, but no line to put it on

    @property
    def changed(self) -> List[Reading]:
        return [r for r in self.readings if r.differs]

    def diff(self, label: str = "") -> str:
        out: List[str] = []
        for name, (old, new) in (("machine.yaml", self.machine), ("packages.yaml", self.packages)):
            if old != new:
                where = f"{label}/{name}" if label else name
                a, b = ("a", "b") if where.startswith("/") else ("a/", "b/")
                out += difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                            a + where, b + where)
        return "".join(out)


def flow(value: Any) -> str:
    """A YAML scalar or flow list, as it goes after `key: `."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text[:-4].strip() if text.endswith("\n...") or text.endswith(" ...") else text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _block_end(lines: Sequence[str], start: int) -> int:
    """The first line after ``start`` indented no deeper than ``start`` (its block's end)."""
    own = _indent(lines[start])
    for i in range(start + 1, len(lines)):
        if _content(lines[i]) and _indent(lines[i]) <= own:
            return i
    return len(lines)


def find_key(lines: Sequence[str], path: Sequence[Any]) -> int:
    """The line holding the last key of ``path`` in block-style YAML (an int: the n-th list item
    of the block above it)."""
    start, end, parent = 0, len(lines), -1
    for depth, key in enumerate(path):
        children = [i for i in range(start, end) if _content(lines[i]) and _indent(lines[i]) > parent]
        if not children:
            raise CannotPlace(f"no block under {'.'.join(map(str, path[:depth]))}")
        level = min(_indent(lines[i]) for i in children)
        if isinstance(key, int):
            items = [i for i in children if _indent(lines[i]) == level
                     and lines[i].lstrip().startswith("- ")]
            if key >= len(items):
                raise CannotPlace(f"no item {key} under {'.'.join(map(str, path[:depth]))}")
            return items[key]
        hits = [i for i in children if _indent(lines[i]) == level
                and re.match(rf"\s*{re.escape(str(key))}:(\s|$)", lines[i])]
        if not hits:
            raise CannotPlace(f"no line `{key}:` under {'.'.join(map(str, path[:depth])) or 'the top'}")
        start, end, parent = hits[0] + 1, _block_end(lines, hits[0]), level
        if depth == len(path) - 1:
            return hits[0]
    raise CannotPlace("empty path")


def set_value(text: str, path: Sequence[Any], value: Any, comment: str) -> str:
    lines = text.splitlines(True)
    if isinstance(path[-2], int):  # an item of a flow-mapping list: - {..., key: value, ...}
        row = find_key(lines, path[:-1])
        new, count = re.subn(rf"(\b{re.escape(path[-1])}:\s*)(\"[^\"]*\"|'[^']*'|[^,}}]+)",
                             lambda m: m.group(1) + flow(value), lines[row], count=1)
        if not count:
            raise CannotPlace(f"no {path[-1]}: in {lines[row].strip()[:60]}")
        lines[row] = new.rstrip("\n") + f"  # {comment}\n"
        return "".join(lines)
    try:
        row = find_key(lines, path)
    except CannotPlace:
        return _add_key(lines, path, value, comment)
    match = re.match(r"(\s*(?:- )?[\w.-]+:)(\s*)([^#\n]*?)(\s*#.*)?\n?$", lines[row])
    if not match or not match.group(3).strip() or match.group(3).strip() in ("|", ">", ">-"):
        raise CannotPlace(f"`{lines[row].strip()[:60]}` holds no one-line value")
    lines[row] = f"{match.group(1)} {flow(value)}  # {comment}\n"
    return "".join(lines)


def _add_key(lines: List[str], path: Sequence[Any], value: Any, comment: str) -> str:
    """A key the block lacks, added as its last line (the block must be block style)."""
    parent = find_key(lines, path[:-1])
    if lines[parent].rstrip().split("#")[0].rstrip()[-1:] != ":":
        raise CannotPlace(f"`{lines[parent].strip()[:60]}` is no block to add {path[-1]} to")
    end = _block_end(lines, parent)
    body = [i for i in range(parent + 1, end) if _content(lines[i])]
    indent = _indent(lines[body[0]]) if body else _indent(lines[parent]) + 2
    last = body[-1] + 1 if body else parent + 1
    lines.insert(last, " " * indent + f"{path[-1]}: {flow(value)}  # {comment}\n")
    return "".join(lines)


def set_external_version(text: str, spec: str, package: str, old: str, new: str,
                         comment: str) -> str:
    lines = text.splitlines(True)
    rows = [i for i, line in enumerate(lines)
            if re.match(rf"\s*- spec:\s*['\"]?{re.escape(spec)}['\"]?\s*(#.*)?$", line)]
    if not rows:
        raise CannotPlace(f"no `- spec: {spec}` line")
    for i in reversed(rows):
        lines[i] = re.sub(rf"\b{re.escape(package)}@=?{re.escape(old)}\b",
                          f"{package}@{new}", lines[i], count=1)
        lines.insert(i, " " * _indent(lines[i]) + f"# {comment}\n")
    return "".join(lines)


def lookup(data: Any, path: Sequence[Any]) -> Any:
    for key in path:
        data = data[key]
    return data


def _os_block(readings: List[Reading], prov: Provenance) -> str:
    got = {r.fact.split(".", 1)[1]: r for r in readings if r.fact.startswith("os.") and r.read}
    if not {"name", "spack_os", "glibc"} <= set(got):
        raise CannotPlace("OS name, Spack os and glibc not all read here")
    commands = "; ".join(got[k].command for k in ("name", "spack_os", "glibc"))
    return (f"os:\n  # the compute nodes' OS and C library, captured on {prov.host} "
            f"{prov.date}\n  name: {flow(got['name'].value)}\n  spack_os: "
            f"{flow(got['spack_os'].value)}\n  glibc: {flow(str(got['glibc'].value))}\n"
            f"  source: {flow(scrub(f'captured on {prov.host} {prov.date} ({commands})'))}\n")


def propose(machine: Machine, packages: Optional[Path], readings: List[Reading],
            prov: Provenance) -> Proposal:
    assert machine.path is not None
    machine_text = machine.path.read_text()
    packages_text = packages.read_text() if packages else ""
    proposal = Proposal(machine.path, packages, prov, readings)
    new_machine, new_packages = machine_text, packages_text
    os_changed = False
    for reading in proposal.changed:
        if reading.path is None:
            proposal.unplaced.append(reading)
            continue
        comment = scrub(f"captured on {prov.host} {prov.date}: {reading.command}"
                        + ("" if reading.committed is None else f" (was {flow(reading.committed)})"))
        try:
            if reading.file == "packages.yaml":
                spec = reading.path[1]
                package = re.match(r"\s*([\w-]+)", spec).group(1)
                old = re.search(rf"{re.escape(package)}@=?([^\s%+~]+)", spec).group(1)
                candidate = set_external_version(new_packages, spec, package, old,
                                                 str(reading.value), comment)
                yaml.safe_load(candidate)
                new_packages = candidate
                continue
            if reading.path[0] == "os" and "os" not in machine.facts:
                continue  # the whole block is added below
            value = str(reading.value) if reading.fact == "os.glibc" else reading.value
            candidate = set_value(new_machine, reading.path, value, comment)
            if lookup(yaml.safe_load(candidate), reading.path) != value:
                raise CannotPlace("the edited file does not read back the value")
            new_machine = candidate
            os_changed |= reading.path[0] == "os" and reading.fact != "os.name"
        except (CannotPlace, AttributeError, KeyError, IndexError, TypeError,
                yaml.YAMLError) as exc:
            reading.note = "; ".join(filter(None, [reading.note, f"not placed: {exc}"]))
            proposal.unplaced.append(reading)
    os_readings = [r for r in readings if r.fact.startswith("os.")]
    try:
        if "os" not in machine.facts:
            block = _os_block(os_readings, prov)
            lines = new_machine.splitlines(True)
            at = next((i for i, line in enumerate(lines) if re.match(r"(verify|node):", line)),
                      len(lines))
            new_machine = "".join(lines[:at] + [block] + lines[at:])
        elif os_changed:
            commands = "; ".join(r.command for r in os_readings if r.read)
            new_machine = set_value(new_machine, ("os", "source"),
                                    scrub(f"captured on {prov.host} {prov.date} ({commands})"),
                                    f"was: {machine.facts['os'].get('source', '')[:80]}")
    except CannotPlace as exc:
        for reading in os_readings:
            reading.note = "; ".join(filter(None, [reading.note, f"not placed: {exc}"]))
    proposal.machine = (machine_text, new_machine)
    proposal.packages = (packages_text, new_packages)
    return proposal
