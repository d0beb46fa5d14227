"""SimGrid SMPI: a machine simulated on this one. ``smpirun`` runs the ranks as simulated
processes of one host process, on a platform made from the machine's ``simulation:`` facts
(``smpi_platform``); every time it reports is the simulation's, never a measurement.

Launch: ``smpirun -np <ranks> -map -platform <platform.xml> -hostfile <hosts.txt>`` with the
settings the point's knobs translate to (``smpi_settings``) and these fixed ones:

* ``smpi/simulate-computation:no``: computation between MPI calls takes no simulated time, so
  a run's numbers are the network model's alone and bit-identical from run to run (timed for
  real, the bursts made small messages vary with this machine's load);
* ``smpi/lat-factor`` and ``smpi/bw-factor``: the machine's calibration (``simulation.factors``),
  else 1 at every size, so the platform's links mean what the facts say (SMPI's defaults were
  fitted to another cluster).

Evidence: ``-map`` makes SMPI print each rank's host (``[rank 0] -> node0-numa0``), checked
against the host file (placement); ``Switch to algorithm <name> for collective <op>`` on stderr
is SMPI's own word that a forced algorithm took effect (``components_used``).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import math
import os
import random
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from commstack.flavours import smpi_platform, smpi_settings
from commstack.flavours.base import (
    COMMON_FAMILIES,
    Flavour,
    FlavourError,
    Launch,
    Request,
    RunFile,
    VersionTool,
)

PLATFORM_FILE = "platform.xml"
HOST_FILE = "hosts.txt"
PLATFORM_VAR = "SMPI_PLATFORM_FILE"  # commstack's: the run's platform file, for the record
HOST_VAR = "SMPI_HOST_FILE"
# maxmin/precision (SimGrid 4.1: precision/work-amount, which takes the old name too): at its
# default 1e-5 the solver aborts "Cannot saturate more a constraint that has no active
# element" in runs as small as a 72-rank linear Alltoall; 1e-3 gave bit-identical IMB rows in
# every run compared (docs/measured.md "Simulation at scale").
FIXED = (("smpi/simulate-computation", "no"), ("maxmin/precision", "1e-3"))
# glibc's malloc for the simulator's process: SMPI allocates and frees a buffer per large
# message, which glibc's moving mmap threshold turns into mmap, munmap and page faults (1 MiB
# Allreduce at 576 ranks: 16.5 -> 9.3 s CPU, bit-identical results; docs/measured.md).
MALLOC = ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=268435456")
NOISY = "<drawn per run>"  # a factor's value in the plan until its run is placed
NO_FACTOR = "0:1"
SOURCE = "SimGrid SMPI: 'Switch to algorithm <name> for collective <op>' on stderr"
_SWITCH = re.compile(r"Switch to algorithm (?P<alg>[\w-]+) for collective (?P<op>\w+)")
# The collectives SMPI's settings name (smpi_coll.cpp's table).
COLLECTIVES = ("gather", "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv",
               "reduce", "reduce_scatter", "scatter", "bcast", "barrier")
# An algorithm handing a call to another, per call and rank (SMPI's smpi_colls category), e.g.
# "[node0-numa0:0:(1) 0.000012] [smpi_colls/INFO] MPI_allreduce_lr: communication size smaller
# than number of process, use default MPI_allreduce."
_FALLBACK = re.compile(r"\[smpi_colls/INFO\] (?P<name>[\w]+): *(?P<why>[^\n]*?(?:use|switching)[^\n]*)$",
                       re.M)
_VERSION = re.compile(r"SimGrid version (?P<v>\d+(?:\.\d+)+)")


@dataclass(frozen=True)
class Simulation:
    """What a simulated launch is of (the record's ``simulation``)."""

    simulator: str
    platform: str  # the machine (and node type) simulated
    model: str  # one line: nodes, domains, topology, network; placeholders
    hosts: Tuple[str, ...]  # each rank's host, as the host file gives it
    settings: Tuple[Tuple[str, str], ...]  # every --cfg the launch passes
    notes: Tuple[str, ...] = ()
    noise: float = 0.0  # log-sd of the per-launch factor on every time (0: none)
    factor: Optional[float] = None  # this launch's, once placed

    def place(self, argv: List[str], directory: Path) -> Tuple[List[str], "Simulation"]:
        """The launch of one run in ``directory``: with noise, its factor drawn from a seed of
        the run's folder (its last five parts: campaign, point, repeat, attempt; a resumed run
        draws the same)
        and applied to SMPI's latency and bandwidth factors, so every simulated time of the
        run is multiplied by it."""
        if not self.noise:
            return argv, self
        where = "/".join(directory.resolve().parts[-5:])  # campaign(s), point, repeat, attempt
        seed = int(hashlib.sha256(where.encode()).hexdigest()[:16], 16)
        factor = math.exp(self.noise * random.Random(seed).gauss(0.0, 1.0))
        values = dict(self.settings)
        scaled = {"smpi/lat-factor": _scaled(values["smpi/lat-factor"], factor),
                  "smpi/bw-factor": _scaled(values["smpi/bw-factor"], 1.0 / factor)}
        out = [f"--cfg={k}:{scaled[k]}" if a == f"--cfg={k}:{NOISY}" else a
               for a in argv for k in [a[6:].split(":", 1)[0] if a.startswith("--cfg=") else ""]]
        settings = tuple((k, scaled.get(k, v)) for k, v in self.settings)
        return out, dataclasses.replace(self, settings=settings, factor=factor)

    def unconfirmed(self, stderr: str) -> List[str]:
        """The record's notes on forced algorithms that did not serve every call: SMPI said
        no 'Switch to algorithm' for one the launch forced, or an algorithm handed calls to
        another (SMPI prints why, per call and rank)."""
        switched = {(m["op"], m["alg"]) for m in _SWITCH.finditer(stderr)}
        missing = [f"{key}:{value}" for key, value in self.settings
                   if key.startswith("smpi/") and key[5:] in COLLECTIVES
                   and (key[5:], value) not in switched]
        notes = [f"SMPI printed no 'Switch to algorithm' line for {', '.join(missing)}: that "
                 "the algorithm served the calls is not confirmed"] if missing else []
        for (name, why), count in sorted(fallbacks(stderr).items()):
            notes.append(f"SMPI's {name} handed {count} calls (per rank) to another algorithm: "
                         f"'{why}'; rows of those sizes are not {name}'s")
        return notes

    def as_record(self, versions: Dict[str, str]) -> Dict[str, Any]:
        """The record's ``simulation``; ``versions``: what the version tools printed."""
        found = [version(text) for text in versions.values()]
        return {"simulator": self.simulator, "version": next((v for v in found if v), None),
                "platform": self.platform, "model": self.model,
                "platform_file": PLATFORM_FILE, "host_file": HOST_FILE,
                "settings": {k: v for k, v in self.settings}, "notes": list(self.notes),
                **({"noise": {"sigma": self.noise, "factor": self.factor}} if self.noise else {})}


class SMPI(Flavour):
    name = "smpi"
    label = "SimGrid SMPI"
    simulated = True
    mca = True  # coll/tuned's forced algorithms, translated (smpi_settings)
    option_prefix = "smpi"
    # I_MPI_ADJUST_<OP> is translated; the component families are read only to be refused
    # with the reason (smpi_settings.UNMODELLED), not ignored.
    env_families = ("I_MPI_", *smpi_settings.UNMODELLED, *COMMON_FAMILIES)
    binding_report = "smpi"
    version_tools = (VersionTool("smpirun-version.txt", ("{launcher}", "-version")),)

    def default_launcher(self, conduit: Optional[str] = None) -> str:
        return "smpirun"

    def variable_tools(self) -> Dict[str, Tuple[str, ...]]:
        return {}  # no UCX or UCC library to list their variables: they are refused

    def simulate(self, launcher: str, req: Request, env: Dict[str, str], options: Dict[str, str],
                 facts: Dict[str, Any], cpus: Optional[Sequence[int]] = None,
                 noise: float = 0.0) -> Tuple[Launch, Tuple[RunFile, ...], Simulation]:
        """The launch of ``req`` on the machine ``facts`` describe, its files and what it
        simulates; FlavourError for what cannot be simulated. ``noise``: the log-sd of a
        factor drawn per run (``Simulation.place``) on every simulated time."""
        model = smpi_platform.model(facts)
        settings = smpi_settings.translate(env, options, req.ranks)
        hosts = smpi_platform.rank_hosts(model, req.nodes, req.ranks_per_node, req.mapping, cpus,
                                         req.oversubscribed)
        factors = (("smpi/lat-factor", model.lat_factor or NO_FACTOR),
                   ("smpi/bw-factor", model.bw_factor or NO_FACTOR))
        asked = dict(settings.cfg)
        cfg = tuple((k, v) for k, v in (*FIXED, *factors) if k not in asked) + settings.cfg
        noisy = ("smpi/lat-factor", "smpi/bw-factor") if noise else ()
        argv = [launcher, "-np", str(req.ranks), "-map", "-platform", "${%s}" % PLATFORM_VAR,
                "-hostfile", "${%s}" % HOST_VAR,
                *(f"--cfg={k}:{NOISY if k in noisy else v}" for k, v in cfg)]
        files = (RunFile(PLATFORM_FILE, smpi_platform.platform_xml(model, req.nodes),
                         PLATFORM_VAR, "simulated platform: " + PLATFORM_FILE),
                 RunFile(HOST_FILE, smpi_platform.hostfile(hosts), HOST_VAR))
        if noise and any(k in asked for k in ("smpi/lat-factor", "smpi/bw-factor")):
            raise FlavourError("noise scales SMPI's latency and bandwidth factors; a point that "
                               "sets them itself cannot take it")
        notes = settings.notes + ((f"{req.ranks_per_node} ranks per simulated node of "
                                   f"{model.cores_per_node} cores: SMPI runs them and models no "
                                   "sharing of cores (computation is not simulated)",)
                                  if req.oversubscribed else ())
        simulation = Simulation("SimGrid SMPI", model.label,
                                smpi_platform.describe(model, req.nodes), tuple(hosts), cfg,
                                notes, noise)
        launched = dict(env)
        launched.setdefault(*MALLOC)
        return Launch(argv, launched), files, simulation

    def check_settings(self, launcher: str, executable: str,
                       settings: Sequence[Tuple[str, str]],
                       run: Callable[[List[str]], str]) -> List[Tuple[str, str, str]]:
        """Each setting's name against SMPI's own list of configuration keys, each collective's
        algorithm against SMPI's list for it: SimGrid prints both when given a name it does not
        know ("Existing config keys:", "Valid algorithms: ..."), before loading the program."""
        probe = [launcher, "-np", "1", "-platform", str(_probe_file(PROBE_PLATFORM)),
                 "-hostfile", str(_probe_file(PROBE_HOST))]
        keys = _listed_keys(run([*probe, f"--cfg={UNKNOWN_KEY}:1", executable]))
        problems = []
        for key, value in settings:
            if keys is not None and key not in keys and not _renamed(
                    run([*probe, f"--cfg={key}:{value}", f"--cfg={UNKNOWN_KEY}:1", executable]),
                    key, keys):
                close = difflib.get_close_matches(key, sorted(keys), n=1)
                problems.append((key, value, "not a setting of this SimGrid"
                                 + (f"; did you mean {close[0]}?" if close else "")))
                continue
            op = key[len("smpi/"):]
            if op in COLLECTIVES:
                valid = _listed_algorithms(run([*probe, f"--cfg={key}:{UNKNOWN_ALGORITHM}",
                                                executable]))
                if valid is not None and value not in valid:
                    problems.append((key, value, f"not an algorithm of {op} in this SimGrid "
                                     f"(it has: {', '.join(valid)})"))
        return problems

    def components_used(self, env: Dict[str, str], stderr: str,
                        collectives: Optional[Iterable[str]] = None) -> Optional[Dict[str, object]]:
        """The algorithm SMPI switched each collective to, as it says on stderr, and the calls
        an algorithm handed to another; None when the run forced none."""
        switched: Dict[str, str] = {}
        for m in _SWITCH.finditer(stderr):
            switched[m["op"]] = m["alg"]
        if not switched:
            return None
        handed: Dict[str, int] = {}
        for (name, _why), count in fallbacks(stderr).items():
            op = collective_of(name)
            handed[op] = handed.get(op, 0) + count
        return {"source": SOURCE, "asked": [], "processes": 1,
                "collectives": {op: [alg] for op, alg in sorted(switched.items())},
                "calls": {}, "fallbacks": dict(sorted(handed.items())), "not_used": [],
                "not_reported": "SMPI names the algorithm a collective is switched to, not each "
                                "call; fallbacks counts the calls (per rank) an algorithm handed "
                                "to another, as SMPI prints them"}


UNKNOWN_KEY = "smpi/commstack-lists-the-keys"
UNKNOWN_ALGORITHM = "commstack-lists-the-algorithms"
PROBE_PLATFORM = ("smpi-probe-platform.xml", '<?xml version="1.0"?>\n'
                  '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                  '<platform version="4.1"><zone id="z" routing="Full">'
                  '<host id="h" speed="1Gf"/></zone></platform>\n')
PROBE_HOST = ("smpi-probe-hosts.txt", "h\n")
_KEY_LINE = re.compile(r"^  ([a-z][\w/-]*): \(", re.M)
_VALID = re.compile(r"Valid algorithms: (?P<names>[\w, -]+)\.")


def _probe_file(item: Tuple[str, str]) -> Path:
    """A file the probes pass to smpirun, under the temporary directory by its content (the same
    path every time: the tool cache keys on the arguments)."""
    name, text = item
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"commstack-{digest}-{name}"
    if not path.is_file():
        write_atomically(path, text)
    return path


def write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def _listed_keys(text: str) -> Optional[FrozenSet[str]]:
    """SimGrid's "Existing config keys:" list (one "  name: (type)default" line each)."""
    if "Existing config keys" not in text:
        return None
    return frozenset(_KEY_LINE.findall(text.split("Existing config keys", 1)[1]))


def _renamed(text: str, key: str, keys: FrozenSet[str]) -> bool:
    """Whether SimGrid took ``key`` as an old name of a listed key: its list names each setting
    once, by its current name (SimGrid 4.1's smpi/lat-factor is network/latency-factor), and
    an old name set on the command line is announced "Option <old> has been renamed to <new>"."""
    m = re.search(r"Option %s has been renamed to ([\w/-]+)" % re.escape(key), text)
    return bool(m) and m[1] in keys


def _listed_algorithms(text: str) -> Optional[List[str]]:
    m = _VALID.search(text)
    return [n.strip() for n in m["names"].split(",")] if m else None


def _scaled(factors: str, by: float) -> str:
    """SMPI's "size:factor;..." with every factor multiplied by ``by``."""
    return ";".join(f"{size}:{float(value) * by:.6g}"
                    for size, value in (piece.split(":") for piece in factors.split(";")))


def fallbacks(stderr: str) -> Dict[Tuple[str, str], int]:
    """(algorithm, SMPI's reason) -> how many times it was printed (once per call and rank)."""
    counts: Dict[Tuple[str, str], int] = {}
    for m in _FALLBACK.finditer(stderr):
        key = (m["name"], m["why"].strip().rstrip("."))
        counts[key] = counts.get(key, 0) + 1
    return counts


def collective_of(name: str) -> str:
    """"MPI_allreduce_lr" -> "allreduce" (the longest collective name in it)."""
    lowered = name.lower()
    found = [c for c in COLLECTIVES if c in lowered]
    return max(found, key=len) if found else lowered


def version(text: str) -> Optional[str]:
    """``smpirun -version``'s "SimGrid version 3.32" -> "3.32"."""
    m = _VERSION.search(text)
    return m["v"] if m else None


FLAVOUR = SMPI()
