"""What a flavour module provides: one MPI (or GASNet-EX) and everything commstack must know of it.

Flavour functions take plain values (a ``Request``, a launcher, a ``Placement``, an environment)
and return plain values, so this package imports nothing else of commstack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# block: consecutive ranks fill one NUMA domain first; cyclic: round-robin over NUMA domains.
MAPPINGS = ("block", "cyclic")
# Every flavour's ranks may run OpenMP code.
COMMON_FAMILIES = ("OMP_",)


class FlavourError(ValueError):
    """A launch this flavour cannot do as asked (the caller names the point)."""


@dataclass(frozen=True)
class Request:
    """What a point asks of a launch."""

    ranks_per_node: int
    nodes: int = 1
    mapping: Optional[str] = None
    oversubscribed: bool = False
    as_root: bool = False  # Open MPI's mpirun refuses root without --allow-run-as-root
    conduit: Optional[str] = None  # GASNet-EX

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node


@dataclass(frozen=True)
class Placement:
    """How a flavour is asked for one mapping: launcher arguments and environment variables.

    ``args`` go to the flavour's own launcher only; ``env`` to every launch of it, in a
    scheduler's step too unless the flavour says it acts only through its launcher (Intel MPI's
    hydra pins)."""

    args: Tuple[str, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()
    source: str = "built-in"  # or "machine.yaml"

    @classmethod
    def of(cls, args: Sequence[str] = (), env: Optional[Dict[str, object]] = None,
           source: str = "built-in") -> "Placement":
        return cls(tuple(str(a) for a in args),
                   tuple(sorted((str(k), str(v)) for k, v in (env or {}).items())), source)

    @property
    def env_dict(self) -> Dict[str, str]:
        return dict(self.env)

    def filled(self, values: Dict[str, str]) -> "Placement":
        """This placement with ``{name}`` in its arguments and variable values replaced (a
        machine's per-ranks-per-node CPU map: ``{cpus}``, ``{ranks_per_socket}``)."""
        def fill(text: str) -> str:
            for name, value in values.items():
                text = text.replace("{" + name + "}", value)
            return text
        return Placement(tuple(fill(a) for a in self.args),
                         tuple((k, fill(v)) for k, v in self.env), self.source)


@dataclass
class Launch:
    """The launcher's part of a command (the benchmark's argv follows) and the environment."""

    argv: List[str]
    env: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFile:
    """A file a launch reads, written into the run's own directory just before it starts (so
    the run's outputs keep it); ``variable`` is set to its absolute path there."""

    name: str
    text: str
    variable: str
    note: str = ""  # for the run's record: what the file is and what is known of its use


@dataclass(frozen=True)
class VersionTool:
    """A command whose output identifies the installation, saved as <stack>.<file>."""

    file: str
    argv: Tuple[str, ...]  # "{launcher}" stands for the stack's launcher
    # Where the file names the MPI's version: its groups, joined by a space ("2021.18 20250917").
    version: Optional[str] = None

    def read_version(self, text: str) -> Optional[str]:
        """The MPI version this tool's saved output names, or None."""
        found = re.search(self.version, text) if self.version else None
        return " ".join(g for g in found.groups() if g) if found else None


class Flavour:
    """Defaults shared by the flavours; each module overrides what differs."""

    name = ""  # the matrix's `flavour:` value
    label = ""  # for people
    env_families: Tuple[str, ...] = COMMON_FAMILIES  # variable prefixes its libraries read
    mca = False  # reads mca.<name> as OMPI_MCA_<name>
    conduits: Tuple[str, ...] = ()  # a stack of this flavour must name one (GASNet-EX)
    node_local_conduits: Tuple[str, ...] = ()  # conduits whose processes share one node
    launches_locally = True  # False: only a scheduler's step launcher starts it (Cray MPICH)
    # A simulator: its ranks and nodes are a simulated machine's, every launch runs on this
    # node (``simulate`` makes it), and no number it reports is a measurement.
    simulated = False
    # Matrix parameters ``<option_prefix>.<name>`` are this flavour's own settings (SMPI's
    # ``smpi.allreduce``), given to ``simulate``.
    option_prefix: Optional[str] = None
    # The process-management interface its ranks speak to a scheduler's step launcher (pmix,
    # pmi2, cray-pmi); each scheduler module maps it to its own option (commstack.schedulers).
    pmi = "pmi2"
    # Whether its placement variables act in a scheduler's step (read by the library, not by
    # its launcher).
    placement_env_in_steps = True
    binding_report: Optional[str] = None  # commstack.placement.reports parser of its report
    # Variables that make its ranks yield the core while they wait, for a scheduler's step of
    # more ranks than cores (its own launcher sets this mode itself when it oversubscribes).
    oversubscribed_env: Dict[str, str] = {}
    version_tools: Tuple[VersionTool, ...] = ()
    spack_packages: Tuple[str, ...] = ()  # Spack's names of its MPI (the spec a stack's hash is)
    # The command whose output names an external installation's version (`commstack machine
    # check` of the Spack externals); () : the prefix alone is checked.
    external_probe: Tuple[str, ...] = ()
    toolchain: Optional[str] = None  # the short name published tables give its runs ("ompi")
    placements: Dict[str, Placement] = {}  # built-in, per mapping

    def found_variables(self) -> Dict[str, Tuple[Callable[[], Optional[str]], str]]:
        """Variables a matrix may use unset whose value this flavour finds on the machine:
        name -> (finder, how to get it when it is not found)."""
        return {}

    # --- launchers ------------------------------------------------------------------------
    def default_launcher(self, conduit: Optional[str] = None) -> str:
        return "mpirun"

    def stack_env(self, root: Optional[str]) -> Dict[str, str]:
        """Variables a stack of this flavour needs from its installation root."""
        return {}

    def placement(self, mapping: Optional[str], declared: Optional[Placement]) -> Placement:
        """machine.yaml first, built-in defaults second; no mapping, nothing to add."""
        if not mapping:
            return Placement()
        if declared is not None:
            return declared
        if mapping in self.placements:
            return self.placements[mapping]
        raise FlavourError(f"mapping {mapping!r} has no built-in placement for {self.label} "
                           f"stacks; declare mapping.{mapping}.{self.name} (args, env) in the "
                           "machine's machine.yaml, or drop the mapping axis")

    def launch_files(self, env: Dict[str, str], ranks: int
                     ) -> Tuple[Dict[str, str], Tuple[RunFile, ...]]:
        """The environment as launched and the files it names, for a point whose parameters
        set ``env`` on ``ranks`` processes: a value the MPI reads from a file (Open MPI's
        per-size collective algorithms) becomes that file. FlavourError for a value that cannot
        be launched."""
        return env, ()

    def ucx_evidence(self, env: Dict[str, str], conduit: Optional[str] = None) -> Optional[str]:
        """Why a run with this environment must have used UCX (it fails without), or None."""
        return None

    def evidence_argv(self, argv: Sequence[str], folder: Path) -> List[str]:
        """The evidence run's command line: where the launcher can keep each rank's output
        apart under ``folder`` (lines the ranks write into one stream can cut into each other),
        the option that does it; unchanged otherwise."""
        return list(argv)

    def evidence_stderr(self, folder: Path, combined: str) -> str:
        """The evidence run's stderr as the components are read from it: the ranks' own files
        one after the other where ``evidence_argv`` made them, else ``combined``."""
        return combined

    def evidence_env(self, env: Dict[str, str]) -> Dict[str, str]:
        """Variables that make the MPI name the component serving each collective, for a point
        whose environment is ``env``; {} when it asks for none or the MPI cannot say. They cost
        time in every call, so they go to a separate evidence run of the point, never the timed
        runs (commstack.evidence_run)."""
        return {}

    def components_used(self, env: Dict[str, str], stderr: str,
                        collectives: Optional[Sequence[str]] = None) -> Optional[Dict[str, object]]:
        """Which component served each collective, as the MPI's own output says (the record's
        ``components_used``), or None: this flavour reports none."""
        return None

    def report_env(self, env: Dict[str, str]) -> Dict[str, str]:
        """Variables that make the MPI print where it bound each rank (kept if already set)."""
        return {}

    # --- pre-flight (commstack.preflight): what the installation's own tools list ---------
    def component_tool(self) -> Optional[Tuple[str, ...]]:
        """The command that lists this MPI's components and their parameters, or None."""
        return None

    def variable_tools(self) -> Dict[str, Tuple[str, ...]]:
        """Variable prefix -> the command (run in the stack's environment) that lists every
        variable of that family by name; a family without one is not checked by name."""
        tools = {"UCX_": ("ucx_info", "-c", "-a"), "UCC_": ("ucc_info", "-c", "-a")}
        return {prefix: argv for prefix, argv in tools.items() if prefix in self.env_families}

    def simulate(self, launcher: str, req: Request, env: Dict[str, str], options: Dict[str, str],
                 facts: Dict[str, Any], cpus: Optional[Sequence[int]] = None,
                 noise: float = 0.0) -> Any:
        """A simulator's launch of ``req`` on the machine ``facts`` describe (``cpus``: each
        local rank's CPU by the machine's map of the mapping): (Launch, its RunFiles, what it
        simulates). Only a ``simulated`` flavour has one."""
        raise FlavourError(f"{self.label} runs on real nodes; it simulates nothing")

    def check_settings(self, launcher: str, executable: str,
                       settings: Sequence[Tuple[str, str]],
                       run: Callable[[List[str]], str]) -> List[Tuple[str, str, str]]:
        """A simulator's settings against what the installed simulator lists (``run(argv)``
        runs one of its commands, cached, and returns what it printed): (setting, value, why)
        for each it does not know."""
        return []

    def local(self, launcher: str, req: Request, placement: Placement,
              env: Dict[str, str]) -> Launch:
        """The launcher on this node for ``req.ranks_per_node`` ranks."""
        raise FlavourError(f"{self.label} stacks are launched as a step of a scheduler's "
                           "allocation, not locally")

    def in_allocation(self, command: Sequence[str], req: Request, placement: Placement,
                      env: Dict[str, str]) -> Launch:
        """Its own launcher (``command`` with machine.yaml's args) inside an allocation."""
        raise FlavourError(f"{self.label} has no launcher of its own inside an allocation; "
                           f"set launchers.{self.name}.command to the scheduler's step launcher "
                           "in machine.yaml")

    def step_env(self, placement: Placement, env: Dict[str, str]) -> Dict[str, str]:
        """The environment of a scheduler's step: placement variables (where they act there) and
        the binding report's."""
        return self.placed_env(placement, env, self.placement_env_in_steps)

    def placed_env(self, placement: Placement, env: Dict[str, str], with_placement: bool = True
                   ) -> Dict[str, str]:
        out = dict(env)
        if with_placement:
            out.update(placement.env_dict)
        out.update(self.report_env(out))
        return out


class Hydra(Flavour):
    """An MPI started by hydra (MPICH's mpiexec, Intel MPI's mpirun): ``-n`` ranks, ``-ppn`` per
    node, the placement's arguments after them."""

    def local(self, launcher: str, req: Request, placement: Placement,
              env: Dict[str, str]) -> Launch:
        argv = [launcher, "-n", str(req.ranks_per_node), "-ppn", str(req.ranks_per_node)]
        return Launch(argv + list(placement.args), self.placed_env(placement, env))

    def in_allocation(self, command: Sequence[str], req: Request, placement: Placement,
                      env: Dict[str, str]) -> Launch:
        argv = [*command, "-n", str(req.ranks), "-ppn", str(req.ranks_per_node)]
        return Launch(argv + list(placement.args), self.placed_env(placement, env))


def with_env(env: Dict[str, str], *more: Dict[str, str]) -> Dict[str, str]:
    out = dict(env)
    for extra in more:
        out.update(extra)
    return out
