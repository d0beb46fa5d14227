"""What a simulated run's knobs become in SimGrid SMPI: ``--cfg=smpi/<name>:<value>`` settings.

Three ways to name a collective algorithm, each translated to the SMPI algorithm that
implements the same algorithm (``smpi_algorithms.tsv``: Open MPI's and Intel MPI's algorithm
lists against SMPI's source, every row with its source):

* ``mca.coll_tuned_<op>_algorithm: N`` (Open MPI coll/tuned's forced algorithm; 0 is Open MPI's
  own decision, SMPI's ``ompi`` selector);
* ``I_MPI_ADJUST_<OP>: N`` (Intel MPI);
* ``smpi.<op>: <name>`` and every other ``smpi.<key>`` (``smpi.coll-selector: ompi``, the eager
  threshold ``smpi.send-is-detached-thresh: 65536``): SMPI's own settings, passed as they are.

Refused before anything is launched, each with one sentence: an id whose algorithm SMPI does
not implement, a per-size value (SMPI forces one algorithm per collective), and every knob of
a component SMPI has no model of (UCX, UCC, HCOLL, any other MCA parameter or Intel MPI
variable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from commstack.flavours.base import FlavourError

TABLE = Path(__file__).with_name("smpi_algorithms.tsv")
MCA = "OMPI_MCA_"
USE_RULES = MCA + "coll_tuned_use_dynamic_rules"
_OMPI = re.compile(r"^OMPI_MCA_coll_tuned_(?P<op>[a-z_]+)_algorithm$")
_IMPI = re.compile(r"^I_MPI_ADJUST_(?P<op>[A-Z_]+)$")
_KEY = re.compile(r"^[a-z][a-z0-9_-]*$")
FALSE = ("0", "false", "no", "off", "disabled")
# Components SMPI has no model of: a knob of theirs cannot be simulated.
UNMODELLED = {"UCX_": "UCX", "UCC_": "UCC", "HCOLL_": "HCOLL", "FI_": "libfabric",
              "PMIX_": "PMIx", "MPIR_CVAR_": "MPICH's control variables",
              "MPICH_": "MPICH's variables"}


_TAG = re.compile(r"^\[(?P<tag>[^\]]+)\]")
_COMPANION = re.compile(r"^smpi/(?P<op>[a-z_]+):(?P<alg>[\w-]+)$")
# Restriction tags of the table: the process counts at which a row is the same algorithm.
_COUNTS = {
    "p=2 only": ("2 processes", lambda p: p == 2),
    "pof2 only": ("a power-of-two process count", lambda p: p > 0 and p & (p - 1) == 0),
    "non-pof2 only": ("a process count that is no power of two", lambda p: p & (p - 1) != 0),
    "even p only": ("an even process count", lambda p: p % 2 == 0),
}
# The library whose own decisions serve the collectives a family's knob does not force.
SELECTOR = {"ompi": "ompi", "impi": "impi"}
FAMILY = {"ompi": "Open MPI", "impi": "Intel MPI"}


@dataclass(frozen=True)
class Algorithm:
    family: str  # ompi | impi
    collective: str
    ident: int
    name: str  # the MPI's own name for it
    smpi: Optional[str]  # None: no counterpart
    match: str  # same | none | selector
    source: str
    note: str

    @property
    def knob(self) -> str:
        return (f"mca.coll_tuned_{self.collective}_algorithm={self.ident}" if self.family == "ompi"
                else f"I_MPI_ADJUST_{self.collective.upper()}={self.ident}")

    @property
    def tags(self) -> List[str]:
        """The note's leading tags: "[pof2 only][params] ..." -> ["pof2 only", "params"]."""
        found, rest = [], self.note
        while True:
            m = _TAG.match(rest)
            if not m:
                return found
            found.append(m["tag"])
            rest = rest[m.end():]

    def companions(self) -> List[Tuple[str, str]]:
        """The settings without which SMPI's code is not the same algorithm, where the table
        names them ([needs smpi/reduce:ompi_basic_linear smpi/bcast:flattree]); a need that
        names no algorithm is met by the family's selector."""
        out = []
        for tag in self.tags:
            if tag.startswith("needs "):
                for word in tag[len("needs "):].split():
                    m = _COMPANION.match(word)
                    if m:
                        out.append((f"smpi/{m['op']}", m["alg"]))
        return out

    def refusal(self, ranks: Optional[int]) -> Optional[str]:
        """Why this row is not the same algorithm at ``ranks`` processes (None: it is, or the
        count is not known yet)."""
        for tag in self.tags:
            if tag in _COUNTS and ranks is not None and not _COUNTS[tag][1](ranks):
                return (f"SMPI's {self.smpi} is the same algorithm only at {_COUNTS[tag][0]}, "
                        f"and this launch has {ranks}")
        return None


def load_table(path: Path = TABLE) -> Dict[Tuple[str, str, int], Algorithm]:
    rows: Dict[Tuple[str, str, int], Algorithm] = {}
    header: Optional[List[str]] = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if header is None:
            header = cells
            continue
        row = dict(zip(header, cells))
        try:
            key = (row["family"], row["collective"], int(row["id"]))
            smpi = row["smpi"].strip()
            rows[key] = Algorithm(key[0], key[1], key[2], row["name"],
                                  None if smpi in ("", "-") else smpi, row["match"],
                                  row.get("source", ""), row.get("note", ""))
        except (KeyError, ValueError):
            raise ValueError(f"{path}:{number}: not a row of family, collective, id, name, smpi, "
                             "match, source, note") from None
    return rows


_TABLE: Optional[Dict[Tuple[str, str, int], Algorithm]] = None


def table() -> Dict[Tuple[str, str, int], Algorithm]:
    global _TABLE
    if _TABLE is None:
        _TABLE = load_table()
    return _TABLE


@dataclass(frozen=True)
class Settings:
    """SMPI's settings for one launch, and what each came from."""

    cfg: Tuple[Tuple[str, str], ...]  # (smpi/<key>, value), in order
    notes: Tuple[str, ...] = ()

    def args(self) -> List[str]:
        return [f"--cfg={key}:{value}" for key, value in self.cfg]


def translate(env: Dict[str, str], options: Dict[str, str],
              ranks: Optional[int] = None) -> Settings:
    """The settings a point's variables (``env``) and ``smpi.<key>`` parameters (``options``,
    keys without the prefix) ask of SMPI for a launch of ``ranks`` processes (None: not known
    yet); FlavourError for what cannot be simulated.

    A family's algorithm brings the settings the table says it needs ([needs ...]) and that
    family's selector for every collective it does not force (``smpi/coll-selector:ompi``:
    Open MPI's own decisions), unless the point names them itself."""
    cfg: Dict[str, str] = {}
    why: Dict[str, str] = {}
    notes: List[str] = []
    families = set()

    def put(key: str, value: str, source: str) -> None:
        if key in cfg and cfg[key] != value:
            raise FlavourError(f"{source} and {why[key]} ask for two values of {key} "
                               f"({value}, {cfg[key]}); set one")
        cfg[key], why[key] = value, source

    for name, value in sorted(env.items()):
        refusal = unmodelled(name)
        if refusal:
            raise FlavourError(refusal)
        algorithm = _algorithm(name, str(value).strip(), env, ranks)
        if algorithm is None:
            continue
        families.add(algorithm.family)
        if algorithm.match == "selector":  # id 0, no forced algorithm: the family's selector
            notes.append(f"{algorithm.knob}: {FAMILY[algorithm.family]}'s own decision for "
                         f"{algorithm.collective} (SMPI's {SELECTOR[algorithm.family]} selector)")
            continue
        put(f"smpi/{algorithm.collective}", str(algorithm.smpi), algorithm.knob)
        for key, companion in algorithm.companions():
            put(key, companion, f"{algorithm.knob} (it needs {key}:{companion})")
        notes.append(f"{algorithm.knob} ({algorithm.name}) simulated as SMPI's "
                     f"smpi/{algorithm.collective}:{algorithm.smpi}"
                     + (f"; {algorithm.note}" if algorithm.note else ""))
    if len(families) > 1:
        raise FlavourError("the point forces algorithms of both Open MPI and Intel MPI; a "
                           "simulated run follows one library's decisions")
    for key, value in sorted(options.items()):
        if not _KEY.match(key):
            raise FlavourError(f"smpi.{key}: not an SMPI setting name (smpi.<name>, e.g. "
                               "smpi.allreduce, smpi.coll-selector)")
        full = f"smpi/{key}"
        text = "1" if value is True else "0" if value is False else str(value)
        if full in cfg and cfg[full] != text:
            raise FlavourError(f"smpi.{key}={text} and {why[full]} ask for two values of "
                               f"{full}; set one")
        cfg[full], why[full] = text, f"smpi.{key}={text}"
    for family in families:
        if "smpi/coll-selector" not in cfg:
            cfg["smpi/coll-selector"] = SELECTOR[family]
            notes.append(f"the collectives not forced follow {FAMILY[family]}'s own decisions "
                         f"(SMPI's {SELECTOR[family]} selector)")
    return Settings(tuple(cfg.items()), tuple(notes))


def unmodelled(name: str) -> Optional[str]:
    """Why a variable of a component SMPI has no model of cannot be simulated; None for others."""
    for prefix, component in UNMODELLED.items():
        if name.startswith(prefix):
            return (f"{name}: SimGrid SMPI has no model of {component}, so this knob cannot be "
                    "simulated (drop it from simulated stacks)")
    if name.startswith(MCA) and not _OMPI.match(name) and name != USE_RULES:
        return (f"mca.{name[len(MCA):]}: SimGrid SMPI simulates only coll/tuned's forced "
                "algorithms (mca.coll_tuned_<op>_algorithm) of Open MPI's parameters; this one "
                "cannot be simulated")
    if name.startswith("I_MPI_") and not _IMPI.match(name):
        return (f"{name}: SimGrid SMPI simulates only Intel MPI's I_MPI_ADJUST_<OP> algorithms; "
                "this variable cannot be simulated")
    return None


def _algorithm(name: str, value: str, env: Dict[str, str],
               ranks: Optional[int] = None) -> Optional[Algorithm]:
    """The table's row for a knob that names an algorithm; None for any other variable."""
    ompi, impi = _OMPI.match(name), _IMPI.match(name)
    if not (ompi or impi):
        return None
    family = "ompi" if ompi else "impi"
    op = (ompi or impi)["op"].lower()  # type: ignore[index]
    shown = f"mca.{name[len(MCA):]}" if ompi else name
    if not value.isdigit() or len(value) > 4:
        raise FlavourError(f"{shown}={value!r}: SMPI forces one algorithm per collective for "
                           "every message size; a per-size value cannot be simulated (give one "
                           "algorithm number)")
    if ompi and env.get(USE_RULES, "1").strip().lower() in FALSE:
        raise FlavourError(f"{shown}={value} with mca.coll_tuned_use_dynamic_rules="
                           f"{env[USE_RULES]}: Open MPI ignores a forced algorithm then, so "
                           "there is nothing to simulate")
    found = table().get((family, op, int(value)))
    if found is None:
        known = sorted(i for f, c, i in table() if f == family and c == op)
        listed = ", ".join(map(str, known)) if known else "none"
        raise FlavourError(f"{shown}={value}: not an algorithm of {op} in the table of "
                           f"{'Open MPI' if ompi else 'Intel MPI'} algorithms SMPI is matched "
                           f"against (known ids: {listed}; flavours/smpi_algorithms.tsv)")
    if found.smpi is None:
        why = found.note or "see flavours/smpi_algorithms.tsv"
        raise FlavourError(f"{shown}={value} ({found.name}): SimGrid SMPI implements no "
                           f"counterpart, so it cannot be simulated ({why})")
    restricted = found.refusal(ranks)
    if restricted:
        raise FlavourError(f"{shown}={value} ({found.name}): {restricted}, so it cannot be "
                           "simulated here")
    return found
