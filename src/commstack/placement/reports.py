"""Parsers of the binding reports MPIs and srun print; each returns (bindings, notes).

Spellings read (real examples in tests/fixtures/placement/ and tests/test_placement.py):

* Open MPI 4 ``--report-bindings`` (stderr):
  ``[vm:9822] MCW rank 0 bound to socket 0[core 0[hwt 0]]: [B/.]`` (one bracket per package,
  ``/`` between cores, one character per hardware thread) and
  ``[vm:9822] MCW rank 1 is not bound (or bound to all available processors)``.
* Open MPI 5 / PRRTE: ``[host:pid] Rank 0 bound to package[0][core:0-3]``, ``MCW rank 0 bound
  to package[0][core:0]``, ``[core:L0]`` (logical), ``[hwt:0-1]``.
* Intel MPI ``I_MPI_DEBUG>=4`` (stdout), after ``===== CPU pinning =====``:
  ``[0] MPI startup(): 0       17275    vm         {0}`` (OS processor numbers, ``{0-1}``,
  ``{0,40}``).
* hydra (MPICH) ``HYDRA_TOPO_DEBUG=1`` (stdout): ``process 0 binding: 1000`` (a character per
  OS processor; the index counts the processes of one node). Older hydra printed ``1 0 0 0 ``
  and did not bind at all in that mode.
* Slurm ``srun --cpu-bind=verbose`` (stderr): ``cpu-bind=MASK - n1, task  2  0 [14943]: mask
  0x1 set`` (task = global rank, then the rank on its node); older Slurm ``cpu_bind=``;
  ``cpu-bind=NONE - ...: mask 0x0`` for an unbound task.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple

from commstack.placement.model import Binding

Parsed = Tuple[List[Binding], List[str]]


def _id_list(text: str) -> Optional[FrozenSet[int]]:
    """"0-3,8,L10" -> {0, 1, 2, 3, 8, 10}; None when a part is not a number or range."""
    ids = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"[LP]?(\d+)(?:-[LP]?(\d+))?", part)
        if not m:
            return None
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        ids.update(range(first, last + 1))
    return frozenset(ids)


# --- Open MPI --------------------------------------------------------------------------------
_OMPI_BOUND = re.compile(
    r"^\[(?P<host>[^\]:]*)(?::\d+)?\]\s+(?:MCW\s+)?[Rr]ank\s+(?P<rank>\d+)\s+bound to\s+"
    r"(?P<what>.*?)\s*$", re.M)
_OMPI_UNBOUND = re.compile(
    r"^\[(?P<host>[^\]:]*)(?::\d+)?\]\s+(?:MCW\s+)?[Rr]ank\s+(?P<rank>\d+)\s+is not bound", re.M)
_OMPI4_MAP = re.compile(r":\s*((?:\[[^\]\[]*\])+)$")
_PRRTE_SET = re.compile(r"\[(core|hwt):([^\]]*)\]")


def openmpi(text: str) -> Parsed:
    bindings: Dict[int, Binding] = {}
    notes: List[str] = []
    for m in _OMPI_UNBOUND.finditer(text):
        rank = int(m["rank"])
        bindings[rank] = Binding(rank, host=_host(m["host"]))
    for m in _OMPI_BOUND.finditer(text):
        rank, what, host = int(m["rank"]), m["what"], _host(m["host"])
        ompi4 = _OMPI4_MAP.search(what)
        if ompi4:  # [BB/..][../..]: a character per hardware thread, in logical order
            pus = [c for c in ompi4.group(1).replace("][", "/").strip("[]").replace("/", "")]
            bindings[rank] = Binding(rank, host=host,
                                     logical_pus=frozenset(i for i, c in enumerate(pus) if c == "B"))
            continue
        cores: set = set()
        pus_set: set = set()
        for kind, ids in _PRRTE_SET.findall(what):
            if ids.strip().startswith("P"):
                notes.append(f"rank {rank}: physical {kind} numbers ({ids}) are not read")
                continue
            parsed = _id_list(ids)
            if parsed is None:
                notes.append(f"rank {rank}: cannot read {kind}:{ids}")
                continue
            (cores if kind == "core" else pus_set).update(parsed)
        if cores:
            bindings[rank] = Binding(rank, host=host, logical_cores=frozenset(cores))
        elif pus_set:
            bindings[rank] = Binding(rank, host=host, logical_pus=frozenset(pus_set))
        elif what:
            notes.append(f"rank {rank}: cannot read the binding {what!r}")
    return [bindings[r] for r in sorted(bindings)], notes


def _host(text: str) -> Optional[str]:
    return None if text in ("", "...") else text


# --- Intel MPI -------------------------------------------------------------------------------
_IMPI_HEADER = re.compile(r"MPI startup\(\):\s+=+\s*CPU pinning\s*=+")
_IMPI_ROW = re.compile(r"^\[\d+\]\s+MPI startup\(\):\s+(\d+)\s+\d+\s+(\S+)\s+\{([^}]*)\}\s*$", re.M)


def intelmpi(text: str) -> Parsed:
    header = _IMPI_HEADER.search(text)
    if not header:
        return [], []
    bindings: Dict[int, Binding] = {}
    notes: List[str] = []
    for m in _IMPI_ROW.finditer(text, header.end()):
        rank, host, cpus = int(m.group(1)), m.group(2), _id_list(m.group(3))
        if cpus is None:
            notes.append(f"rank {rank}: cannot read the pinned processors {{{m.group(3)}}}")
            continue
        bindings.setdefault(rank, Binding(rank, cpus=cpus, host=host))
    return [bindings[r] for r in sorted(bindings)], notes


# --- hydra (MPICH) ---------------------------------------------------------------------------
_HYDRA = re.compile(r"^(?:\[[^\]]*\]\s*)?process (\d+) binding: ([01](?: ?[01])*) ?$", re.M)
OLD_HYDRA_NOTE = ("hydra printed its binding plan with spaces, as hydra before MPICH 4 does when "
                  "HYDRA_TOPO_DEBUG is set, and that hydra does not bind: the ranks are unbound")


def hydra(text: str) -> Parsed:
    """Hydra names neither host nor global rank: the n-th line for process i is taken to be
    node n's (nodes are told apart, not named)."""
    seen: Dict[int, int] = {}
    bindings: List[Binding] = []
    notes: List[str] = []
    for m in _HYDRA.finditer(text):
        local, bits = int(m.group(1)), m.group(2)
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
    bindings: Dict[int, Binding] = {}
    notes = ([f"srun: {_SLURM_CANNOT_BIND.pattern} (Slurm's task plugin binds no task)"]
             if _SLURM_CANNOT_BIND.search(text) else [])
    for m in _SLURM.finditer(text):
        rank, local = int(m["rank"]), int(m["local"])
        if m["kind"] == "NONE" or not m["set"]:
            bindings[rank] = Binding(rank, host=m["host"], local=local)
            continue
        mask = int(m["mask"], 16)
        cpus = frozenset(i for i in range(mask.bit_length()) if mask >> i & 1)
        bindings[rank] = Binding(rank, cpus=cpus, host=m["host"], local=local)
    return [bindings[r] for r in sorted(bindings)], notes


PARSERS: Dict[str, Callable[[str], Parsed]] = {
    "openmpi": openmpi, "intelmpi": intelmpi, "hydra": hydra, "slurm": slurm,
}
LABELS = {
    "openmpi": "Open MPI --report-bindings",
    "intelmpi": "Intel MPI pin table (I_MPI_DEBUG=4)",
    "hydra": "hydra binding report (HYDRA_TOPO_DEBUG=1)",
    "slurm": "srun --cpu-bind=verbose",
}
