"""The published Betzy cartex result files (GHEX-BENCH ``cartex/results/betzy/``) -> a layout
and one value per table cell with explicit dimensions.

The family: Markdown with ``## `` parts (one configuration each, described in prose:
``halfcores`` (64 ranks per compute node, ``hwcart`` decomposition ``--node 3 3 3 ...``),
``### `` sections (``Chosen results``, ``Full results``, ``halo width: 1, number of fields: 1``),
label lines ``Cartesian communicator numbering order: **XYZ**`` and fenced blocks of MATLAB-style
tables whose labels name dimensions:

=========================  ====================================================================
label                      dimensions
=========================  ====================================================================
``benchmark_ghex_comm_ucx`` executable (row label or table title)
``ompi`` ``impi``            toolchain (table title)
``standard`` ``staged``      algorithm (table title)
``h5f8``                    halo 5, fields 8 (column)
``8``, ``8 (impi)``          fields 8 (column; the suffix: toolchain/algorithm/decomposition); rows
                           ``1`` ``5`` are then the halo width
``mpicart ompi``            decomposition and toolchain (column; ``MPICart``/``HWCart`` too)
=========================  ====================================================================

Columns without a suffix take the part's default (``ompi``, as the files say; ``standard``).
Values are "execution time [s] of 10000 exchange calls" (``time_10000_calls_s``).

Published slips are corrected when the numbers prove it, and every correction is noted: a block
whose order label repeats an earlier one while its numbers equal the other order's (allcores full
results: the second **XYZ** is **ZYX**), and a table whose title line is missing (halfcores ZYX
full results: ``benchmark_ghex_comm_mpi``), taken from the same position in the section's other
block and checked against the numbers printed elsewhere.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from commstack import bounds
from commstack.benchmarks.base import ParseError
from commstack.importers.matlab_table import Line, RawTable, parse_tables
from commstack.report.layout import Block, Label, Layout, Part, Section, Table, format_value

METRIC = "time_10000_calls_s"
UNIT = "s per 10000 exchange calls"

# Words in titles and column labels -> (dimension, value).
VOCABULARY: Dict[str, Tuple[str, str]] = {
    "ompi": ("toolchain", "ompi"), "impi": ("toolchain", "impi"),
    "standard": ("algorithm", "standard"), "staged": ("algorithm", "staged"),
    "hwcart": ("decomposition", "hwcart"), "mpicart": ("decomposition", "mpicart"),
}
# Value of a dimension for columns without a suffix, when the file does not say otherwise.
DEFAULTS = {"toolchain": "ompi", "algorithm": "standard"}
HWCART_LEVELS = ("node", "socket", "numa", "l3", "core", "hwthread")

_EXECUTABLE = re.compile(r"^benchmark_\w+$")
_HXFY = re.compile(r"^h(\d+)f(\d+)$")
_FIELDS = re.compile(r"^(\d+)(?: \((\w+)\))?$")
_ORDER_LINE = re.compile(r"numbering order: \*\*(\w+)\*\*")
_HALO_FIELDS = re.compile(r"halo width: (\d+), number of fields: (\d+)")
_CORES = re.compile(r"`(\w+)` \((\d+) ranks per compute node")
_GRID = re.compile(r"(?<!\d)(\d+)\^3 per-rank grid")  # (?<!\d): linear on a run of digits
_HWCART_ARGS = re.compile(r"`((?:--(?:%s) \d+ \d+ \d+\s*)+)`" % "|".join(HWCART_LEVELS))
_MPICART_ARGS = re.compile(r"`--MPICart (\d+ \d+ \d+)`")
_DECOMPOSITION = re.compile(r"`(hwcart|mpicart)` decomposition")
_SUFFIX_DEFAULT = re.compile(r"columns without a suffix\s+are results for the `(\w+)` toolchain")
_NODES = re.compile(r"(?<!\d)(\d+)-nodes")
_QUANTITY = "execution time [s] of 10000 exchange calls"
Raws = Dict[int, RawTable]  # id(Table) -> the table as read, with its printed numbers


@dataclass
class Appearance:
    """Where a number is printed in the source file."""

    part: Optional[str]
    section: Optional[str]
    block: Optional[str]
    table: Optional[str]
    row: str
    column: str
    text: str
    line: int


@dataclass
class Cell:
    dims: Dict[str, Any]
    value: float
    appearances: List[Appearance] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # corrections that concern this number


@dataclass
class ParsedFile:
    """A published file read into a layout (labels only) and its numbers."""

    layout: Layout
    cells: List[Cell]              # one per distinct set of dimensions
    missing: int                   # cells printed as NaN
    corrections: List[str]
    decomposition_args: Dict[Tuple[Optional[str], str], Dict[str, str]]  # (part, decomp) -> params
    notes: List[str] = field(default_factory=list)


def looks_like_betzy(text: str) -> bool:
    return _QUANTITY in text.lower() and "```" in text


# --- labels -> dimensions ----------------------------------------------------------------------


def word_dims(words: str, where: str, line: int) -> Dict[str, Any]:
    dims: Dict[str, Any] = {}
    for word in words.split():
        if word.lower() not in VOCABULARY:
            raise ParseError(f"{where} {words!r}: unknown word {word!r}; known: "
                             f"{', '.join(VOCABULARY)}, executables benchmark_*", line)
        name, value = VOCABULARY[word.lower()]
        dims[name] = value
    return dims


def title_dims(title: Optional[str], line: int) -> Dict[str, Any]:
    if title is None:
        return {}
    if _EXECUTABLE.match(title):
        return {"executable": title}
    return word_dims(title, "table title", line)


def row_dims(label: str, line: int) -> Dict[str, Any]:
    if _EXECUTABLE.match(label):
        return {"executable": label}
    if label.isdigit():
        return {"halo": int(label)}  # "Table rows are halo width."
    raise ParseError(f"row label {label!r}: expected an executable or a halo width", line)


def column_dims(label: str, line: int) -> Dict[str, Any]:
    m = _HXFY.match(label)
    if m:
        return {"halo": int(m.group(1)), "nfields": int(m.group(2))}
    m = _FIELDS.match(label)
    if m:  # "Table columns are number of fields"; a suffix names the compared variant
        dims: Dict[str, Any] = {"nfields": int(m.group(1))}
        if m.group(2):
            dims.update(word_dims(m.group(2), "column suffix", line))
        return dims
    return word_dims(label, "column label", line)


# --- the document ------------------------------------------------------------------------------


@dataclass
class _RawBlock:
    label: Optional[str]
    label_line: int
    tables: List[RawTable]


@dataclass
class _RawSection:
    heading: Optional[str]
    prose: List[str] = field(default_factory=list)
    blocks: List[_RawBlock] = field(default_factory=list)


@dataclass
class _RawPart:
    heading: Optional[str]
    prose: List[str] = field(default_factory=list)
    sections: List[_RawSection] = field(default_factory=list)


def _read_structure(text: str) -> List[_RawPart]:
    parts: List[_RawPart] = []
    label: Optional[Tuple[str, int]] = None
    fence: Optional[List[Line]] = None
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is not None:
            if line.strip().startswith("```"):
                if not parts or not parts[-1].sections:
                    raise ParseError("table block outside a ### section", number)
                tables = parse_tables(fence)
                if tables:
                    parts[-1].sections[-1].blocks.append(_RawBlock(
                        label[0] if label else None, label[1] if label else 0, tables))
                fence, label = None, None
            else:
                fence.append((number, line))
            continue
        if line.strip().startswith("```"):
            fence = []
        elif line.startswith("## "):
            parts.append(_RawPart(line.rstrip()))
            label = None
        elif line.startswith("### "):
            if not parts:
                parts.append(_RawPart(None))
            parts[-1].sections.append(_RawSection(line.rstrip()))
            label = None
        elif _ORDER_LINE.search(line):
            label = (line.rstrip(), number)
        elif line.strip():
            if not parts:
                parts.append(_RawPart(None))
            part = parts[-1]
            (part.sections[-1].prose if part.sections else part.prose).append(line.strip())
    if fence is not None:
        raise ParseError("code block not closed")
    return parts


def _part_context(part: _RawPart) -> Tuple[Dict[str, Any], Dict[str, Dict[str, str]], List[str]]:
    """Dimensions stated in a part's prose, the arguments of each decomposition, notes."""
    prose = " ".join(part.prose + [p for s in part.sections for p in s.prose])
    if _QUANTITY not in prose.lower():
        raise ParseError(f"part {part.heading!r}: no '{_QUANTITY}' sentence: unknown quantity")
    dims: Dict[str, Any] = {}
    m = _CORES.search(prose)
    if m:
        dims["cores_config"] = m.group(1)
        dims["ranks_per_node"] = bounds.integer(m.group(2), f"part {_cut(part.heading)}: ranks "
                                                "per compute node", None, bounds.MAX_RANKS, 1)
    m = _GRID.search(prose)
    if m:
        dims["domain"] = " ".join([m.group(1)] * 3)
    args: Dict[str, Dict[str, str]] = {}
    m = _HWCART_ARGS.search(prose)
    if m:
        words = m.group(1).split()
        args["hwcart"] = {words[i][2:]: " ".join(words[i + 1:i + 4]) for i in range(0, len(words), 4)}
    m = _MPICART_ARGS.search(prose)
    if m:
        args["mpicart"] = {"mpicart": m.group(1)}
    m = _DECOMPOSITION.search(prose)
    if m:
        dims["decomposition"] = m.group(1)
    node = args.get("hwcart", {}).get("node")
    m = _NODES.search(part.heading or "")
    if node:
        grid = [bounds.integer(x, f"part {_cut(part.heading)}: --node", None, bounds.MAX_NODES, 1)
                for x in node.split()]
        dims["nodes"] = bounds.integer(str(math.prod(grid)), f"part {_cut(part.heading)}: nodes "
                                       "of the --node grid", None, bounds.MAX_NODES, 1)
    elif m:
        dims["nodes"] = bounds.integer(m.group(1), f"part {_cut(part.heading)}: nodes", None,
                                       bounds.MAX_NODES, 1)
    elif "hwcart" in args:
        dims["nodes"] = 1  # an hwcart grid without --node is one node
    m = _SUFFIX_DEFAULT.search(prose)
    if m:
        dims["toolchain"] = m.group(1)
    notes = [s.strip() + "." for s in prose.split(".") if "`NaN`" in s]
    return dims, args, notes


def parse_betzy(text: str, name: str) -> ParsedFile:
    """Read one published file; raises :class:`ParseError` with the line of any problem."""
    layout = Layout(parts=[], metric=METRIC, unit=UNIT,
                    source={"file": name, "sha256": hashlib.sha256(text.encode()).hexdigest(),
                            "format": "betzy-cartex-tables"})
    decomposition_args: Dict[Tuple[Optional[str], str], Dict[str, str]] = {}
    notes: List[str] = []
    raws: Raws = {}
    raw_parts = _read_structure(text)
    if not any(b for p in raw_parts for s in p.sections for b in s.blocks):
        raise ParseError(f"{name}: no tables found")
    for raw in raw_parts:
        if not any(s.blocks for s in raw.sections):
            continue
        dims, args, part_notes = _part_context(raw)
        notes += part_notes
        for decomposition, params in args.items():
            decomposition_args[(raw.heading, decomposition)] = params
        part = Part(heading=raw.heading, sections=[], dims=dims)
        for raw_section in raw.sections:
            if raw_section.blocks:
                part.sections.append(_section(raw_section, raws))
        _part_defaults(part)
        layout.parts.append(part)
    cells, missing = _collect(layout, raws)
    by_line = {row.line: block.notes + tab.notes for _, _, block, tab in layout.tables()
               for row in raws[id(tab)].rows}
    for cell in cells:
        cell.notes = sorted({n for a in cell.appearances for n in by_line.get(a.line, [])})
    corrections = [n for _, _, block, tab in layout.tables()
                   for n in (block.notes if tab is block.tables[0] else []) + tab.notes]
    return ParsedFile(layout, cells, missing, corrections, decomposition_args, notes)


def _section(raw: _RawSection, raws: Raws) -> Section:
    dims: Dict[str, Any] = {}
    m = _HALO_FIELDS.search(raw.heading or "")
    if m:
        dims = {"halo": int(m.group(1)), "nfields": int(m.group(2))}
    section = Section(heading=raw.heading, blocks=[], dims=dims)
    for raw_block in raw.blocks:
        block_dims: Dict[str, Any] = {}
        m = _ORDER_LINE.search(raw_block.label or "")
        if m:
            block_dims["order"] = m.group(1)
        tables = [Table(rows=[Label(r.label, row_dims(r.label, r.line)) for r in t.rows],
                        columns=[Label(c, column_dims(c, t.line)) for c in t.columns],
                        title=t.title, dims=title_dims(t.title, t.line - 1))
                  for t in raw_block.tables]
        for tab, raw_table in zip(tables, raw_block.tables):
            raws[id(tab)] = raw_table  # the printed numbers, read in _collect
        section.blocks.append(Block(tables=tables, label=raw_block.label, dims=block_dims))
    _infer_missing_titles(section, raws)
    return section


def _infer_missing_titles(section: Section, raws: Raws) -> None:
    """A table that needs an executable title (rows are halo widths) but has none takes the
    title at the same position in the section's other blocks, when they all agree and it is
    the one executable the block lacks. The numbers are checked later."""
    for block in section.blocks:
        for index, tab in enumerate(block.tables):
            if tab.title is not None or not any("halo" in r.dims for r in tab.rows):
                continue
            have = {t.title for t in block.tables if t.title}
            others = {b.tables[index].title for b in section.blocks
                      if b is not block and len(b.tables) == len(block.tables)}
            others.discard(None)
            if len(others) != 1 or next(iter(others)) in have:
                raise ParseError(f"table without title in {section.heading!r} "
                                 f"({block.label!r}): cannot tell which executable it shows",
                                 raws[id(tab)].line)
            title = next(iter(others))
            tab.corrected_title = title
            tab.dims = title_dims(title, 0)
            note = (f"{section.heading.lstrip('# ')}, {_strip(block.label)}: table "
                    f"{index + 1} has no title line in the published file; it is {title} "
                    f"(same position in the section's other block; numbers checked)")
            tab.notes.append(note)


def _part_defaults(part: Part) -> None:
    """Columns without a suffix: the default value of each dimension a label sets in this part."""
    named = {k for _, _, _, tab in _tables(part) for lab in tab.columns + tab.rows
             for k in lab.dims} | {k for _, _, _, tab in _tables(part) for k in tab.dims}
    for name, value in DEFAULTS.items():
        if name in named and name not in part.dims:
            part.dims[name] = value


def _tables(part: Part):
    for section in part.sections:
        for block in section.blocks:
            for tab in block.tables:
                yield part, section, block, tab


def _cut(heading: Optional[str]) -> str:
    """A heading as an error quotes it: a hostile one is cut, never printed whole."""
    text = repr(heading)
    return text if len(text) <= 80 else text[:77] + "..."


def _name(heading: Optional[str]) -> str:
    return (heading or "").lstrip("# ").strip()


def _strip(label: Optional[str]) -> str:
    return (label or "").replace("*", "").strip()


def _key(dims: Dict[str, Any]) -> Tuple:
    return tuple(sorted((k, str(v)) for k, v in dims.items()))


def _block_cells(raws: Raws, part: Part, section: Section, block: Block,
                 order: Optional[str] = None) -> List[Tuple[Dict[str, Any], Optional[float], Appearance]]:
    out = []
    block_dims = dict(block.dims, **({"order": order} if order else {}))
    for tab in block.tables:
        raw = raws[id(tab)]
        base = {**part.dims, **section.dims, **block_dims, **tab.dims}
        for row, raw_row in zip(tab.rows, raw.rows):
            for col, text in zip(tab.columns, raw_row.cells):
                value = None if text == "NaN" else _number(text, raw_row.line)
                where = Appearance(part.heading, section.heading, block.label,
                                   tab.title, row.text, col.text, text, raw_row.line)
                out.append(({**base, **row.dims, **col.dims}, value, where))
    return out


def _number(text: str, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParseError(f"not a number: {text!r}", line) from None
    if format_value(value) != text:
        raise ParseError(f"{text!r} is not printed with 5 significant digits; the renderer "
                         f"would print {format_value(value)!r}", line)
    return value


def _collect(layout: Layout, raws: Raws) -> Tuple[List[Cell], int]:
    """One Cell per distinct dimensions, in document order; a block whose numbers contradict
    earlier ones is corrected when another order label makes every overlap agree."""
    seen: Dict[Tuple, Cell] = {}
    nans: Dict[Tuple, Appearance] = {}
    missing = 0
    orders = sorted({b.dims["order"] for _, _, b, _ in layout.tables() if "order" in b.dims})
    for part in layout.parts:
        for section in part.sections:
            for block in section.blocks:
                cells = _block_cells(raws, part, section, block)
                conflicts = _conflicts(cells, seen)
                if conflicts and "order" in block.dims:
                    for order in orders:
                        if order == block.dims["order"]:
                            continue
                        moved = _block_cells(raws, part, section, block, order)
                        if not _conflicts(moved, seen) and _overlap(moved, seen):
                            earlier = section.blocks[:[id(b) for b in section.blocks]
                                                     .index(id(block))]
                            repeated = any(b.label == block.label for b in earlier)
                            why = ("repeats that label, but" if repeated else
                                   "contradicts the earlier sections (which is wrong cannot be "
                                   "told from the file):")
                            note = (f"{_name(section.heading)}: the block labelled "
                                    f"{_strip(block.label)} (tables from line {block_line(raws, block)}) "
                                    f"{why} its numbers are the {order} ones printed earlier; "
                                    f"imported as {order}")
                            block.corrected_label = block.label.replace(
                                f"**{block.dims['order']}**", f"**{order}**")
                            block.dims["order"] = order
                            block.notes.append(note)
                            cells, conflicts = moved, []
                            break
                _check_inferred_titles(raws, part, section, block, seen)
                if conflicts:
                    dims, value, where, other = conflicts[0]
                    raise ParseError(
                        f"{where.text} ({where.row}, {where.column}) contradicts "
                        f"{other.appearances[0].text} printed at line "
                        f"{other.appearances[0].line} for the same dimensions {dims}", where.line)
                for dims, value, where in cells:
                    key = _key(dims)
                    other = nans.get(key) if value is not None else (
                        seen[key].appearances[0] if key in seen else None)
                    if other is not None:
                        raise ParseError(f"{where.text} ({where.row}, {where.column}) but "
                                         f"{other.text} at line {other.line} for the same "
                                         f"dimensions {dims}", where.line)
                    if value is None:
                        missing += 1
                        nans[key] = where
                        continue
                    cell = seen.setdefault(key, Cell(dims, value))
                    cell.appearances.append(where)
    return list(seen.values()), missing


def _check_inferred_titles(raws: Raws, part: Part, section: Section, block: Block,
                           seen: Dict[Tuple, Cell]) -> None:
    """A title taken from another block must be confirmed by numbers printed elsewhere."""
    for tab in block.tables:
        if tab.corrected_title is None:
            continue
        one = Block(tables=[tab], label=block.label, dims=block.dims)
        cells = _block_cells(raws, part, section, one)
        agree = _overlap(cells, seen) - len(_conflicts(cells, seen))
        if agree == 0 or _conflicts(cells, seen):
            raise ParseError(f"table without title: {tab.corrected_title} (from the other block)"
                             " is not confirmed by numbers printed elsewhere",
                             raws[id(tab)].line)
        tab.notes[-1] = tab.notes[-1].replace(
            "numbers checked", f"{agree} of its numbers equal those printed elsewhere")


def block_line(raws: Raws, block: Block) -> int:
    return raws[id(block.tables[0])].line


def _conflicts(cells, seen: Dict[Tuple, Cell]) -> list:
    out = []
    for dims, value, where in cells:
        other = seen.get(_key(dims))
        if value is not None and other is not None and other.value != value:
            out.append((dims, value, where, other))
    return out


def _overlap(cells, seen: Dict[Tuple, Cell]) -> int:
    return sum(1 for dims, value, _ in cells if value is not None and _key(dims) in seen)


def parse_file(path: Path) -> ParsedFile:
    text = bounds.read_text(path, bounds.MAX_OUTPUT_BYTES, "a published result file")
    try:
        return parse_betzy(text, Path(path).name)
    except ParseError as exc:
        raise ParseError(f"{path}: {exc}") from None
