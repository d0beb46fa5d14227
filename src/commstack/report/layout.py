"""Layouts of tables as published (the Betzy cartex results), printed as text or Markdown.

A :class:`Layout` holds labels and structure only, never numbers: parts (``## `` headings) hold
sections (``### `` headings), which hold blocks (a label line such as ``Cartesian communicator
numbering order: **XYZ**`` and one fenced code block), which hold tables (an optional title line,
column labels, row labels). Every level fixes some dimensions (record parameters such as
``order``, ``toolchain``, ``halo``); a cell's dimensions are the union along its path, and its
number is looked up in the records. So importing a published file and rendering its layout from
the imported records reproduces the file, and the same layout renders any campaign that has
records with those dimensions.

The text layout is MATLAB's ``table`` display, which the published files were made with: row
labels indented by 4 and left-aligned, columns 4 apart, each column as wide as its widest label
or number, numbers right-aligned among themselves and that block centred in the column, column
labels centred and underlined, 5 significant digits, ``NaN`` where there is no number.

A cell is the median over a point's repeats with its 95 % interval and the count,
``2.5159 [2.4903–2.5511] (6)`` (:func:`commstack.report.numbers.interval_cell`, each number in
MATLAB's 5 digits), markers of unclean runs (``⚠ov``) after it. Only the round trip of an
imported file (``intervals=False``) prints the median alone, as the published file did.

A cell of simulated runs (:mod:`commstack.simulated`) says so: a column whose every number is
simulated has ``(simulated)`` after its label; in a column that mixes simulated and measured
numbers, each simulated cell has it after its number.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from commstack import stats
from commstack.aggregate import is_subrun, result_rows
from commstack.benchmarks import registry
from commstack.figures import dimensions
from commstack.markdown_table import table
from commstack.report.numbers import interval_cell, unclean_markers
from commstack.simulated import MARK, marked, platform
from commstack.store.record import Record


@dataclass(frozen=True)
class Cell:
    """A cell's numbers: the median over its point's repeats with the interval and count, and
    the markers of unclean runs (``⚠ov``, ``⚠sub``)."""

    center: stats.Center
    markers: Tuple[str, ...] = ()
    simulated: Optional[str] = None  # the platform a simulator ran; None: measured


# A cell's dimensions -> its numbers (None: no record).
Lookup = Callable[[Dict[str, Any]], Optional[Cell]]

INDENT, GAP = 4, 4
DIGITS = 5


@dataclass
class Label:
    """A row or column label as printed, and the dimensions it stands for."""

    text: str
    dims: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Table:
    """One MATLAB-style table. ``title`` is the printed line above it (None: no line);
    ``corrected_title`` replaces it when the published title was missing or wrong."""

    rows: List[Label]
    columns: List[Label]
    title: Optional[str] = None
    dims: Dict[str, Any] = field(default_factory=dict)
    corrected_title: Optional[str] = None
    notes: List[str] = field(default_factory=list)


@dataclass
class Block:
    """A label line (None: none) and one fenced code block of tables."""

    tables: List[Table]
    label: Optional[str] = None
    dims: Dict[str, Any] = field(default_factory=dict)
    corrected_label: Optional[str] = None
    notes: List[str] = field(default_factory=list)


@dataclass
class Section:
    heading: Optional[str]
    blocks: List[Block]
    dims: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Part:
    heading: Optional[str]
    sections: List[Section]
    dims: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Layout:
    """Everything needed to print a family of tables except the numbers.

    ``metric`` names the parsed value printed (``time_10000_calls_s``); ``source`` says where
    the layout came from (a published file, or ``auto`` for one built from records).
    """

    parts: List[Part]
    metric: str
    unit: str = ""
    source: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Layout":
        def table(t: dict) -> Table:
            return Table(rows=[Label(**r) for r in t["rows"]],
                         columns=[Label(**c) for c in t["columns"]],
                         **{k: v for k, v in t.items() if k not in ("rows", "columns")})

        def block(b: dict) -> Block:
            return Block(tables=[table(t) for t in b["tables"]],
                         **{k: v for k, v in b.items() if k != "tables"})

        parts = [Part(heading=p["heading"], dims=p.get("dims", {}), sections=[
            Section(heading=s["heading"], dims=s.get("dims", {}),
                    blocks=[block(b) for b in s["blocks"]]) for s in p["sections"]])
            for p in data["parts"]]
        return cls(parts=parts, metric=data["metric"], unit=data.get("unit", ""),
                   source=data.get("source", {}))

    def tables(self) -> Iterator[Tuple[Part, Section, Block, Table]]:
        for part in self.parts:
            for section in part.sections:
                for block in section.blocks:
                    for tab in block.tables:
                        yield part, section, block, tab

    def cells(self) -> Iterator[Tuple[Table, Label, Label, Dict[str, Any]]]:
        """Every cell with its full dimensions."""
        for part, section, block, tab in self.tables():
            base = {**part.dims, **section.dims, **block.dims, **tab.dims}
            for row in tab.rows:
                for col in tab.columns:
                    yield tab, row, col, {**base, **row.dims, **col.dims}


# --- formatting -----------------------------------------------------------------------------


def format_value(value: Optional[float], digits: int = DIGITS) -> str:
    """5 significant digits as MATLAB prints them (``2.9035``, ``16.56``, ``14``); ``NaN``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NaN"
    return f"{value:.{digits}g}"


def format_cell(value: Optional[Cell], intervals: bool = True) -> str:
    """``2.5159 [2.4903–2.5511] (6)``, markers after; ``NaN`` without a number. Without
    ``intervals`` the median alone (the round trip of a published file), markers still after."""
    if value is None or math.isnan(value.center.median):
        return format_value(None)
    c = value.center
    if not intervals:
        return " ".join([format_value(c.median), *value.markers])
    return interval_cell(format_value(c.median), format_value(c.low) if c.has_interval else None,
                         format_value(c.high) if c.has_interval else None, c.n, value.markers)


def _center(text: str, width: int) -> str:
    extra = width - len(text)
    left = extra // 2
    return " " * left + text + " " * (extra - left)


def matlab_table(rows: List[str], columns: List[str], cells: List[List[str]],
                 title: Optional[str] = None) -> List[str]:
    """Lines of one table in MATLAB's display layout (see the module docstring)."""
    label_width = max((len(r) for r in rows), default=0)
    number_widths = [max((len(row[j]) for row in cells), default=0) for j in range(len(columns))]
    widths = [max(len(head), nw) for head, nw in zip(columns, number_widths)]
    lead = " " * (INDENT + label_width)
    gap = " " * GAP
    lines = [title] if title is not None else []
    lines.append(lead + "".join(gap + _center(h, w) for h, w in zip(columns, widths)))
    lines.append(lead + "".join(gap + "_" * w for w in widths))
    lines.append("")
    for label, values in zip(rows, cells):
        lines.append(" " * INDENT + label.ljust(label_width) + "".join(
            gap + _center(v.rjust(nw), w) for v, nw, w in zip(values, number_widths, widths)))
    return lines


# --- rendering -------------------------------------------------------------------------------


def table_cells(layout: Layout, lookup: Lookup) -> Dict[int, List[List[Optional[Cell]]]]:
    """Cells of every table (keyed by id of the Table), rows x columns."""
    out: Dict[int, List[List[Optional[Cell]]]] = {}
    for part, section, block, tab in layout.tables():
        base = {**part.dims, **section.dims, **block.dims, **tab.dims}
        out[id(tab)] = [[lookup({**base, **row.dims, **col.dims}) for col in tab.columns]
                        for row in tab.rows]
    return out


def _title(tab: Table, as_published: bool) -> Optional[str]:
    return tab.title if as_published or tab.corrected_title is None else tab.corrected_title


def _block_label(block: Block, as_published: bool) -> Optional[str]:
    return block.label if as_published or block.corrected_label is None else block.corrected_label


def render_text(layout: Layout, lookup: Lookup, as_published: bool = True,
                intervals: bool = True) -> str:
    """The whole layout as Markdown with MATLAB-style tables in fenced blocks, as published.

    ``as_published=False`` prints corrected labels where the import found the published ones
    missing or wrong (the numbers are the same either way); ``intervals=False`` prints each
    median alone, as the published file did (its round trip).
    """
    numbers = table_cells(layout, lookup)
    out: List[str] = []
    for part in layout.parts:
        if part.heading:
            out += [part.heading, ""]
        for section in part.sections:
            if section.heading:
                out += [section.heading, ""]
            for block in section.blocks:
                label = _block_label(block, as_published)
                if label:
                    out += [label, ""]
                out.append("```")
                for index, tab in enumerate(block.tables):
                    if index:
                        out.append("")
                    columns, cells = _marked(tab, numbers[id(tab)], intervals)
                    out += matlab_table([r.text for r in tab.rows], columns, cells,
                                        _title(tab, as_published))
                out += ["```", ""]
    return "\n".join(out)


def render_markdown(layout: Layout, lookup: Lookup, as_published: bool = False) -> str:
    """The same tables as GitHub Markdown (corrected labels by default)."""
    numbers = table_cells(layout, lookup)
    out: List[str] = []
    for part in layout.parts:
        if part.heading:
            out += [_demote(part.heading), ""]
        for section in part.sections:
            if section.heading:
                out += [_demote(section.heading), ""]
            for block in section.blocks:
                label = _block_label(block, as_published)
                for tab in block.tables:
                    caption = " — ".join(x for x in (_title(tab, as_published), label) if x)
                    if caption:
                        out += [f"*{caption.replace('*', '')}*", ""]
                    columns, cells = _marked(tab, numbers[id(tab)])
                    out += table(["", *columns], [[label, *row] for label, row in zip(
                        [r.text for r in tab.rows], cells)], align="l" + "r" * len(columns))
                    notes = tab.notes + (block.notes if tab is block.tables[0] else [])
                    out += [""] + [f"> note: {n}" for n in notes] + ([""] if notes else [])
    return "\n".join(out)


def _demote(heading: str) -> str:
    """One level deeper, so that the published ``##`` sits under the report's own ``##``."""
    return "#" + heading if heading.startswith("#") else heading


def _marked(tab: Table, values: List[List[Optional[Cell]]], intervals: bool = True
            ) -> Tuple[List[str], List[List[str]]]:
    """The table's column labels and cell texts, simulated numbers marked: a column whose every
    number is simulated has ``(simulated)`` after its label, a simulated cell of a column that
    mixes them after its number."""
    columns, cells = [], [[format_cell(v, intervals) for v in row] for row in values]
    for j, col in enumerate(tab.columns):
        found = [row[j] for row in values if row[j] is not None
                 and not math.isnan(row[j].center.median)]
        whole = bool(found) and all(c.simulated for c in found)
        columns.append(marked(col.text, whole))
        if not whole:
            for i, row in enumerate(values):
                if row[j] is not None and row[j].simulated and cells[i][j] != "NaN":
                    cells[i][j] += " " + MARK
    return columns, cells


def markdown_table(rows: List[str], columns: List[str],
                   values: List[List[Optional[Cell]]]) -> List[str]:
    return table(["", *columns], [[label, *(format_cell(v) for v in row)]
                                  for label, row in zip(rows, values)], align="l" + "r" * len(columns))


def counted(layout: Layout, lookup: Lookup) -> Tuple[int, int, List[str]]:
    """(cells with a number, those of them without an interval, the markers present): what a
    caption must explain."""
    cells = [c for grid in table_cells(layout, lookup).values() for row in grid for c in row
             if c is not None and not math.isnan(c.center.median)]
    markers = sorted({m for c in cells for m in c.markers})
    return len(cells), sum(not c.center.has_interval for c in cells), markers


# --- cell lookup from records ----------------------------------------------------------------


class AmbiguousCell(ValueError):
    """Several points match one cell: the layout does not fix every dimension that varies."""


def _same(a: Any, b: Any) -> bool:
    return a == b or str(a) == str(b)


@dataclass
class CellIndex:
    """Numbers of records by their dimensions; a cell takes the points whose dimensions contain
    the cell's, and the median over that point's repeats with its interval (:mod:`stats`)."""

    # (dims, point id, value, markers of the run) per result row of a successful record
    entries: List[Tuple[Dict[str, Any], str, float, Tuple[str, ...]]]
    rate: bool = False  # the metric is a rate (its median of an even count: harmonic)
    simulated: Dict[str, str] = field(default_factory=dict)  # point id -> platform simulated

    @classmethod
    def from_records(cls, records: List[Record], metric: str) -> "CellIndex":
        entries = []
        simulated: Dict[str, str] = {}
        for rec, item in result_rows(records):
            value = item.get(metric) if isinstance(item, dict) else None
            if isinstance(value, (int, float)) and not math.isnan(value):
                marks = tuple(unclean_markers(bool(rec.oversubscribed), is_subrun(rec, item)))
                entries.append((dimensions(rec), rec.point_id, float(value), marks))
                if rec.simulation:
                    simulated[rec.point_id] = platform(rec.simulation)
        return cls(entries, rate=not registry.lower_is_better(metric), simulated=simulated)

    def lookup(self, dims: Dict[str, Any]) -> Optional[Cell]:
        by_point: Dict[str, List[float]] = {}
        marks: Dict[str, set] = {}
        extra: Dict[str, int] = {}
        for have, pid, value, flags in self.entries:
            if all(k in have and _same(have[k], v) for k, v in dims.items()):
                by_point.setdefault(pid, []).append(value)
                marks.setdefault(pid, set()).update(flags)
                extra[pid] = len(set(have) - set(dims))
        if not by_point:
            return None
        # The most specific match wins: a point with dimensions the cell does not name (say
        # `algorithm`, from another file) is not the one meant when a point without them exists.
        fewest = min(extra.values())
        best = [pid for pid in by_point if extra[pid] == fewest]
        if len(best) > 1:
            raise AmbiguousCell(f"{len(best)} points match the cell {dims}; "
                                "the layout must fix every dimension that varies")
        found = marks[best[0]]
        return Cell(stats.describe(by_point[best[0]], rate=self.rate),
                    tuple(m for m in unclean_markers(True, True) if m in found),
                    self.simulated.get(best[0]))


# --- layouts built from records ----------------------------------------------------------------

_FIXED_ORDER = ("order", "toolchain", "algorithm", "decomposition")


def auto_layout(records: List[Record], metric: str = "time_10000_calls_s",
                unit: str = "s per 10000 exchange calls") -> Optional[Layout]:
    """A "chosen results"-style layout for a cartex campaign: rows executables, columns
    ``hXfY`` (halo x fields), one table per combination of the other dimensions that vary,
    blocks per rank order. None when the records have no executable/halo/fields dimensions."""
    dims = [dimensions(r) for r in records if r.ok]
    if not dims or not all("executable" in d for d in dims):
        return None
    varying = _varying(dims)
    halos = sorted({int(d.get("halo", 1)) for d in dims})
    fields = sorted({int(d.get("nfields", 1)) for d in dims})
    executables = sorted({str(d["executable"]) for d in dims})
    columns = [Label(f"h{h}f{f}", {"halo": h, "nfields": f}) for f in fields for h in halos]
    rows = [Label(e, {"executable": e}) for e in executables]
    split = [k for k in varying if k not in ("executable", "halo", "nfields", "order")]
    orders = sorted({str(d.get("order", "XYZ")) for d in dims})
    blocks = []
    for order in orders:
        combos = sorted({tuple((k, str(d.get(k))) for k in split) for d in dims
                         if str(d.get("order", "XYZ")) == order})
        tables = [Table(rows=rows, columns=columns, dims=dict(combo),
                        title=", ".join(v if k in _FIXED_ORDER else f"{k}={v}" for k, v in combo)
                        or None) for combo in combos]
        blocks.append(Block(tables=tables, dims={"order": order},
                            label=f"Cartesian communicator numbering order: **{order}**"))
    part = Part(heading=None, sections=[Section(heading="### Chosen results", blocks=blocks)])
    return Layout(parts=[part], metric=metric, unit=unit, source={"kind": "auto"})


def _varying(dims: List[Dict[str, Any]]) -> List[str]:
    names: List[str] = []
    for d in dims:
        names += [k for k in d if k not in names]
    return [k for k in names if len({str(d.get(k)) for d in dims}) > 1]
