"""Parsers of the binding reports MPIs, srun and Flux's job shell print; each returns (bindings, notes).

Spellings read (real examples in tests/fixtures/placement/, its external/ corpus from public
sources, and tests/test_placement.py). ``find_reports`` runs every parser and adds notes on what a
report does not print (hosts, ranks between those listed, the process count its command asked).

* Open MPI 4 ``--report-bindings`` (stderr):
  ``[vm:9822] MCW rank 0 bound to socket 0[core 0[hwt 0]]: [B/.]`` (one bracket per package,
  ``/`` between cores, one character per hardware thread) and
  ``[vm:9822] MCW rank 1 is not bound (or bound to all available processors)``.
  Also read: the map alone on the next line (mail archives wrap it); ``[B . . .]`` (spaces);
  cgroup markers ``[[<B/././.>][[]`` and ``~`` (a processor outside the cgroup, still counted);
  lines without the ``[host:pid]`` prefix, or with ``--tag-output``'s ``[1,0]<stderr>:`` before
  it; Open MPI 3's locality string ``MCW rank 1 bound to NM1:SK1:L31:...:CR16-31:HT32-63`` (its
  ``HT`` list, else ``CR``); the JOB MAP of ``--display-map``: ``Process rank: 0 Bound:
  ...:[[<BB/..>][[<../..>]`` or ``Bound: UNBOUND`` (host from the "Data for node:" above it).
* Open MPI 5 / PRRTE: ``[host:pid] Rank 0 bound to package[0][core:0-3]``, ``MCW rank 0 bound
  to package[0][core:0]``, ``[core:L0]`` (logical), ``[hwt:0-1]``.
* Intel MPI ``I_MPI_DEBUG>=4`` (stdout), after ``===== CPU pinning =====``:
  ``[0] MPI startup(): 0       17275    vm         {0}`` (OS processor numbers, ``{0-1}``,
  ``{0,40}``). Before 2021 the table has no banner and starts at its column header ``Rank  Pid
  Node name  Pin cpu``; sets may wrap onto the next line (``{0,`` / ``1,15}``) or come without
  braces (``0``, ``0,1,2,3``); 2021 prints a NIC table (``Rank  Pin nic``) first.
* hydra (MPICH) ``HYDRA_TOPO_DEBUG=1`` (stdout): ``process 0 binding: 1000`` (a character per
  OS processor; the index counts the processes of one node). Older hydra printed ``1 0 0 0 ``
  and did not bind at all in that mode.
* SimGrid SMPI ``smpirun -map`` (stderr): ``[0.000000] [smpi/INFO] [rank 0] -> node0-numa0``,
  each simulated rank's host (a simulated NUMA domain of commstack's platforms).
* Slurm ``srun --cpu-bind=verbose`` (stderr): ``cpu-bind=MASK - n1, task  2  0 [14943]: mask
  0x1 set`` (task = global rank, then the rank on its node); older Slurm ``cpu_bind=``;
  ``cpu-bind=NONE - ...: mask 0x0`` for an unbound task.
* Flux's job shell ``-o cpu-affinity=verbose,per-task`` (or ``verbose,map:LIST``; stderr, after
  ``flux run -v``'s elapsed-time prefix): ``0.061s: flux-shell[0]: cpu-affinity: task 2: cpus:
  1`` (task = global rank, shell rank = the job's node, OS processor lists ``0-1``, ``0,2``),
  beside the shell's own ``cpu-affinity: cpus: 0-1`` line (flux-core 0.81 src/shell/affinity.c).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple

from commstack import bounds
from commstack.benchmarks.base import ParseError
from commstack.placement.model import Binding

Parsed = Tuple[List[Binding], List[str]]


def _line(text: str, at: int) -> int:
    """The 1-based line of position ``at`` in ``text``."""
    return text.count("\n", 0, at) + 1


def _rank(m: "re.Match[str]", group: str, text: str, what: str = "rank") -> int:
    """A rank (or a node-local process index) as printed, within bounds.MAX_RANKS."""
    return bounds.integer(m[group], what, _line(text, m.start(group)), bounds.MAX_RANKS)


# Processor numbers one report may list in all, over its ranks (2^22: 2^16 ranks of 64, or a
# node of 2^16 processors 64 times): the work of reading a report is bounded by it, not by the
# ranges it prints ("[core:0-65535]" repeated a million times).
MAX_LISTED = 1 << 22


class _Budget:
    """Processor numbers a parser may still read of one report."""

    def __init__(self) -> None:
        self.left = MAX_LISTED


def _cpu_count(count: int, text: str, at: int, budget: _Budget) -> None:
    """A bit mask, processor map or range of ``count`` processors: past bounds.MAX_CPUS, or past
    what is left of the report's budget, it is refused."""
    budget.left -= count
    if count > bounds.MAX_CPUS:
        raise ParseError(f"a binding of {count} processors is past what any node has (read up "
                         f"to {bounds.MAX_CPUS})", _line(text, at))
    if budget.left < 0:
        raise ParseError(f"the report lists more than {MAX_LISTED} processor numbers in all: "
                         "past what any run has", _line(text, at))


_BLANKS = re.compile(r"\s+")
_ID_RANGE = re.compile(r"[LP]?(\d+)(?:-[LP]?(\d+))?")


def _id_list(text: str, where: Tuple[str, int], budget: _Budget) -> Optional[FrozenSet[int]]:
    """"0-3,8,L10" -> {0, 1, 2, 3, 8, 10}; None when a part is not a number or range. A number past
    bounds.MAX_CPUS is a ParseError naming the line of ``where`` = (whole text, position)."""
    ids = set()
    for part in _BLANKS.sub("", text).split(","):
        if not part:
            continue
        m = _ID_RANGE.fullmatch(part)
        if not m:
            return None
        try:
            first = bounds.integer(m.group(1), "processor", None, bounds.MAX_CPUS)
            last = bounds.integer(m.group(2) or m.group(1), "processor", None, bounds.MAX_CPUS)
        except ParseError as exc:  # the line is counted only now: counting is O(text)
            raise ParseError(str(exc), _line(*where)) from None
        _cpu_count(max(0, last + 1 - first), *where, budget)
        ids.update(range(first, last + 1))
    return frozenset(ids)


# --- Open MPI --------------------------------------------------------------------------------
# "[host:pid] MCW rank 0", "[host:pid] Rank 0" (PRRTE) or, quoted without its prefix, "MCW rank 0";
# --tag-output puts "[1,0]<stderr>:" first.
_OMPI_WHO = (r"^[ \t]*(?:\[\d+,\d+\]<std(?:err|out)>:[ \t]*)?"
             r"(?:\[(?P<host>[^\]:]*)(?::\d+)?\]\s+(?:MCW\s+)?[Rr]ank|MCW\s+rank)\s+(?P<rank>\d+)\s+")
_OMPI_BOUND = re.compile(_OMPI_WHO + r"bound to\s+(?P<what>.*?)\s*$", re.M)
_OMPI_UNBOUND = re.compile(_OMPI_WHO + r"is not bound", re.M)
_MAP_CHARS = r"[\[\]<>~./B ]"
_OMPI4_MAP = re.compile(r":\s*(\[" + _MAP_CHARS + r"*\])$")
_MAP_LINE = re.compile(r"[ \t]*(\[" + _MAP_CHARS + r"*\])[ \t]*")
_PRRTE_SET = re.compile(r"\[(core|hwt):([^\]]*)\]")
_LOCALITY = re.compile(r"^(?:[A-Z]+[0-9][0-9,\-]*:)*(?:CR(?P<cores>[0-9,\-]+))?(?::HT(?P<pus>[0-9,\-]+))?$")


def openmpi(text: str) -> Parsed:
    budget = _Budget()
    bindings: Dict[int, Binding] = {}
    notes: List[str] = []
    text = _join_wrapped(text)
    for m in _OMPI_UNBOUND.finditer(text):
        rank = _rank(m, "rank", text)
        bindings[rank] = Binding(rank, host=_host(m["host"]))
    for m in _OMPI_BOUND.finditer(text):
        rank, what, host = _rank(m, "rank", text), m["what"], _host(m["host"])
        ompi4 = _OMPI4_MAP.search(what)
        if ompi4:  # [BB/..][../..]: a character per hardware thread, in logical order
            pus = [c for c in ompi4.group(1) if c in ".B~"]
            _cpu_count(len(pus), text, m.start("what"), budget)
            bindings[rank] = Binding(rank, host=host,
                                     logical_pus=frozenset(i for i, c in enumerate(pus) if c == "B"))
            continue
        cores: set = set()
        pus_set: set = set()
        for kind, ids in _PRRTE_SET.findall(what):
            if ids.strip().startswith("P"):
                notes.append(f"rank {rank}: physical {kind} numbers ({ids}) are not read")
                continue
            parsed = _id_list(ids, (text, m.start("what")), budget)
            if parsed is None:
                notes.append(f"rank {rank}: cannot read {kind}:{ids}")
                continue
            (cores if kind == "core" else pus_set).update(parsed)
        locality = _LOCALITY.match(what) if not (cores or pus_set) else None
        if locality and (locality["pus"] or locality["cores"]):  # Open MPI 3: ...:CR0-15:HT0-31
            where = (text, m.start("what"))
            if locality["pus"]:
                pus_set.update(_id_list(locality["pus"], where, budget) or ())
            else:
                cores.update(_id_list(locality["cores"], where, budget) or ())
        if cores:
            bindings[rank] = Binding(rank, host=host, logical_cores=frozenset(cores))
        elif pus_set:
            bindings[rank] = Binding(rank, host=host, logical_pus=frozenset(pus_set))
        elif what:
            notes.append(f"rank {rank}: cannot read the binding {what!r}")
    for rank, binding in _job_map(text, budget).items():
        bindings.setdefault(rank, binding)
    return [bindings[r] for r in sorted(bindings)], notes


_JOB_MAP_NODE = re.compile(r"^\s*Data for node:\s*(\S+)", re.M)
_JOB_MAP_PROC = re.compile(r"Process rank:\s*(?P<rank>\d+)\s+Bound:\s*(.*?)\s*$", re.M)


def _join_wrapped(text: str) -> str:
    """The map wrapped onto the next line (mail archives) joined to its "... bound to ...:" line;
    the map's line is left empty, so that line numbers stay those of the text. Line by line: a
    regex from each "bound to" to the line's last colon takes time quadratic in a long line."""
    lines = text.split("\n")
    for i in range(len(lines) - 1):
        head = lines[i].rstrip(" \t\r")
        if head.endswith(":") and "bound to " in head:
            wrapped = _MAP_LINE.fullmatch(lines[i + 1])
            if wrapped:
                lines[i], lines[i + 1] = f"{head} {wrapped.group(1)}", ""
    return "\n".join(lines)


def _job_map(text: str, budget: _Budget) -> Dict[int, Binding]:
    """Open MPI's --display-map (``--map-by ...:DISPLAY``) JOB MAP: "Data for node: n1" then, per
    rank, "Process rank: 0 Bound: socket 0[core 0[hwt 0-1]]:[[<BB/..>][[<../..>]" or "UNBOUND"."""
    nodes = [(m.start(), m.group(1)) for m in _JOB_MAP_NODE.finditer(text)]
    found: Dict[int, Binding] = {}
    for m in _JOB_MAP_PROC.finditer(text):
        rank, what = _rank(m, "rank", text), m.group(2)
        host = next((name for start, name in reversed(nodes) if start < m.start()), None)
        ompi4 = _OMPI4_MAP.search(what)
        if what == "UNBOUND":
            found[rank] = Binding(rank, host=host)
        elif ompi4:
            pus = [c for c in ompi4.group(1) if c in ".B~"]
            _cpu_count(len(pus), text, m.start(), budget)
            found[rank] = Binding(rank, host=host,
                                  logical_pus=frozenset(i for i, c in enumerate(pus) if c == "B"))
    return found


def _host(text: Optional[str]) -> Optional[str]:
    return None if text in (None, "", "...") else text


# --- Intel MPI -------------------------------------------------------------------------------
_IMPI_HEADER = re.compile(
    r"MPI startup\(\):\s+(?:=+\s*CPU pinning\s*=+|Rank\s+Pid\s+Node name\s+Pin cpu)")
# "[0] MPI startup(): <rank> <pid> <node> <cpus>"; cpus "{0,1}" (may wrap over lines) or bare "0,1";
# "0: " (srun -l) or a second "[0] " (-prepend-rank) may come first.
_IMPI_ROW = re.compile(r"^(?:\d+:[ \t]*|\[\d+\][ \t]*)?\[\d+\]\s+MPI startup\(\):[ \t]+(?P<rank>\d+)[ \t]+\d+[ \t]+"
                       r"(\S+)[ \t]+(?:\{([^}]*)\}|(\d[\d,\-]*))[ \t\r]*$", re.M)


def intelmpi(text: str) -> Parsed:
    budget = _Budget()
    header = _IMPI_HEADER.search(text)
    if not header:
        return [], []
    bindings: Dict[int, Binding] = {}
    notes: List[str] = []
    for m in _IMPI_ROW.finditer(text, header.end()):
        printed = m.group(3) if m.group(3) is not None else m.group(4)
        rank, host = _rank(m, "rank", text), m.group(2)
        cpus = _id_list(printed, (text, m.start()), budget)
        if cpus is None:
            notes.append(f"rank {rank}: cannot read the pinned processors {{{printed}}}")
            continue
        bindings.setdefault(rank, Binding(rank, cpus=cpus, host=host))
    return [bindings[r] for r in sorted(bindings)], notes


# --- hydra (MPICH) ---------------------------------------------------------------------------
_HYDRA = re.compile(r"^(?:\[[^\]]*\]\s*)?process (?P<local>\d+) binding: ([01](?: ?[01])*) ?$", re.M)
OLD_HYDRA_NOTE = ("hydra printed its binding plan with spaces, as hydra before MPICH 4 does when "
                  "HYDRA_TOPO_DEBUG is set, and that hydra does not bind: the ranks are unbound")


def hydra(text: str) -> Parsed:
    """Hydra names neither host nor global rank: the n-th line for process i is taken to be
    node n's (nodes are told apart, not named)."""
    budget = _Budget()
    seen: Dict[int, int] = {}
    bindings: List[Binding] = []
    notes: List[str] = []
    for m in _HYDRA.finditer(text):
        local, bits = _rank(m, "local", text, "process"), m.group(2)
        _cpu_count(len(bits.replace(" ", "")), text, m.start(), budget)
        node = seen.get(local, 0)
        seen[local] = node + 1
        if " " in bits:
            if OLD_HYDRA_NOTE not in notes:
                notes.append(OLD_HYDRA_NOTE)
            bindings.append(Binding(None, local=local, node=node))
            continue
        cpus = frozenset(i for i, c in enumerate(bits) if c == "1")
        bindings.append(Binding(None, cpus=cpus, local=local, node=node))
    return sorted(bindings, key=lambda b: (b.node or 0, b.local or 0)), notes


# --- Slurm -----------------------------------------------------------------------------------
_SLURM = re.compile(
    r"cpu[-_]bind(?:[-_][a-z]+)?=(?P<kind>[A-Z_]+)\s*-\s*(?P<host>[^,\s]+),\s*task\s+"
    r"(?P<rank>\d+)\s+(?P<local>\d+)\s+\[\d+\]:\s*mask\s+(?P<mask>0x[0-9a-fA-F]+)(?P<set>\s+set)?")


_SLURM_CANNOT_BIND = re.compile(r"cluster configuration lacks support for cpu binding")


def slurm(text: str) -> Parsed:
    budget = _Budget()
    bindings: Dict[int, Binding] = {}
    notes = ([f"srun: {_SLURM_CANNOT_BIND.pattern} (Slurm's task plugin binds no task)"]
             if _SLURM_CANNOT_BIND.search(text) else [])
    for m in _SLURM.finditer(text):
        rank, local = _rank(m, "rank", text), _rank(m, "local", text, "local task")
        if m["kind"] == "NONE" or not m["set"]:
            bindings[rank] = Binding(rank, host=m["host"], local=local)
            continue
        _cpu_count(4 * len(m["mask"][2:].lstrip("0")), text, m.start("mask"), budget)
        mask = int(m["mask"], 16)
        cpus = frozenset(i for i in range(mask.bit_length()) if mask >> i & 1)
        bindings[rank] = Binding(rank, cpus=cpus, host=m["host"], local=local)
    return [bindings[r] for r in sorted(bindings)], notes


# --- SimGrid SMPI ----------------------------------------------------------------------------
_SMPI = re.compile(r"\[rank (?P<rank>\d+)\] -> (?P<host>[^\s\]]+)")


def smpi(text: str) -> Parsed:
    """smpirun -map's ``[rank 0] -> node0-numa1`` lines (stderr, after SimGrid's log prefix):
    each simulated rank's host; a simulated process is bound to nothing."""
    bindings: Dict[int, Binding] = {}
    for m in _SMPI.finditer(text):
        rank = _rank(m, "rank", text)
        bindings[rank] = Binding(rank, host=m["host"])
    return [bindings[r] for r in sorted(bindings)], []


# --- Flux ------------------------------------------------------------------------------------
_FLUX = re.compile(r"flux-shell\[(?P<node>\d+)\]: cpu-affinity: task (?P<rank>\d+): cpus: "
                   r"(?P<cpus>[\d,-]+)")


def flux(text: str) -> Parsed:
    """The job shell's verbose cpu-affinity lines: each task's processors, its node as the shell
    rank (the report names no host)."""
    budget = _Budget()
    bindings: Dict[int, Binding] = {}
    for m in _FLUX.finditer(text):
        rank, node = _rank(m, "rank", text), _rank(m, "node", text, "job shell rank")
        cpus = _id_list(m["cpus"], (text, m.start("cpus")), budget)
        bindings[rank] = Binding(rank, cpus=cpus, node=node)
    return [bindings[r] for r in sorted(bindings)], []


PARSERS: Dict[str, Callable[[str], Parsed]] = {
    "openmpi": openmpi, "intelmpi": intelmpi, "hydra": hydra, "slurm": slurm, "smpi": smpi,
    "flux": flux,
}
LABELS = {
    "openmpi": "Open MPI --report-bindings",
    "intelmpi": "Intel MPI pin table (I_MPI_DEBUG=4)",
    "hydra": "hydra binding report (HYDRA_TOPO_DEBUG=1)",
    "slurm": "srun --cpu-bind=verbose",
    "smpi": "SimGrid SMPI's rank map (smpirun -map)",
    "flux": "Flux job shell cpu-affinity=verbose",
}

# How each parser's processor numbers are to be read (Binding says which field holds them).
NUMBERING = {"cpus": "os", "logical_pus": "logical processor", "logical_cores": "logical core"}


@dataclass(frozen=True)
class Report:
    """One binding report found in a text: which parser read it, its ranks and its notes."""

    parser: str
    bindings: List[Binding]
    notes: List[str]

    @property
    def label(self) -> str:
        return LABELS[self.parser]


def find_reports(text: str) -> List[Report]:
    """Every binding report in ``text`` that gives at least one rank, the MPI's own first."""
    found = []
    for name, parse in PARSERS.items():
        bindings, notes = parse(text)
        if bindings:
            found.append(Report(name, bindings, notes + _missing(name, bindings, text)))
    return found


def printed_cpus(binding: Binding) -> Tuple[Optional[str], List[int]]:
    """(numbering, sorted numbers) as the report printed them; (None, []) for an unbound rank."""
    for field, numbering in NUMBERING.items():
        value = getattr(binding, field)
        if value is not None:
            return numbering, sorted(value)
    return None, []


def _missing(parser: str, bindings: List[Binding], text: str) -> List[str]:
    """What the report does not print: host names, ranks between those it lists, a version."""
    notes = []
    if all(b.host is None for b in bindings):
        notes.append("the report names no host" + (
            ": hydra numbers processes per node, `node` tells nodes apart in output order"
            if parser == "hydra" else ": Flux numbers the job's nodes by shell rank"
            if parser == "flux" else ""))
    ranks = sorted({b.rank for b in bindings if b.rank is not None})
    if ranks:
        gaps = _gaps(ranks)  # sized by the ranks listed, not by the largest number
        absent = ranks[-1] + 1 - len(ranks)
        if absent:
            listed = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in gaps[:20])
            notes.append(f"{len(ranks)} ranks listed, numbered up to {ranks[-1]}: "
                         + (f"ranks {listed}" if len(gaps) <= 20 and len(listed) <= 40
                            else f"{absent} ranks")
                         + " not printed (cut off, or printed elsewhere)")
    asked = {int(n) for n in _process_counts(text) if len(n) <= 9}
    if asked and len(bindings) not in asked:
        notes.append(f"the command line in the file asks for {' or '.join(map(str, sorted(asked)))} "
                     f"processes; the report lists {len(bindings)}")
    if parser == "intelmpi" and not _IMPI_VERSION.search(text):
        notes.append("no 'Intel(R) MPI Library, Version' line: the Intel MPI version is not printed")
    return notes


_IMPI_VERSION = re.compile(r"MPI startup\(\): Intel\(R\) MPI Library, Version")
# A launcher's command line quoted with the report: "mpirun -np 4", "prterun -n 4", "srun -n4",
# "flux run -N2 -n4".
# Searched line by line from the first launcher word (one regex from each launcher word to the
# option would take time quadratic in a line full of launcher words).
_LAUNCHER = re.compile(r"\b(?:mpirun|mpiexec|prterun|oshrun|srun|flux run)\b")
_COUNT_OPTION = re.compile(r"\s(?:-np|-n|--np|--ntasks)(?:[ =]|(?=\d))(\d+)\b")


def _process_counts(text: str) -> List[str]:
    counts = []
    for line in text.splitlines():
        launcher = _LAUNCHER.search(line)
        if launcher:
            counts += _COUNT_OPTION.findall(line, launcher.end())
    return counts


def _gaps(ranks: List[int]) -> List[Tuple[int, int]]:
    """(first, last) of each run of numbers from 0 to max(ranks) that ``ranks`` (sorted) lacks."""
    gaps, expected = [], 0
    for rank in ranks:
        if rank > expected:
            gaps.append((expected, rank - 1))
        expected = rank + 1
    return gaps


def _ranges(numbers: List[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    parts: List[str] = []
    start = prev = numbers[0]
    for n in numbers[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(parts)


def cpu_ranges(numbers: List[int]) -> str:
    return _ranges(numbers) if numbers else "-"
