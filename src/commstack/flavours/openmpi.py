"""Open MPI: mpirun (ORTE in 4.x, PRRTE in 5.x), MCA parameters, --report-bindings."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from commstack import bounds
from commstack.flavours import ompi_coll_evidence, ompi_coll_rules
from commstack.flavours.base import (
    COMMON_FAMILIES,
    Flavour,
    Launch,
    Placement,
    Request,
    RunFile,
    VersionTool,
    with_env,
)


class OpenMPI(Flavour):
    name = "openmpi"
    label = "Open MPI"
    env_families = ("UCX_", "UCC_", "HCOLL_", "OMPI_", "PMIX_", "FI_", *COMMON_FAMILIES)
    mca = True
    pmi = "pmix"  # Debian's and most builds speak PMIx to a step launcher, not PMI2
    binding_report = "openmpi"
    version_tools = (VersionTool("ompi_info.txt", ("ompi_info", "--parsable"),
                                 r"ompi:version:full:(\S+)"),)
    spack_packages = ("openmpi",)
    external_probe = ("ompi_info", "--version")
    toolchain = "ompi"  # Betzy's tables
    # mpirun --oversubscribe sets it itself (Open MPI's FAQ: "aggressive" vs "degraded" mode).
    oversubscribed_env = {"OMPI_MCA_mpi_yield_when_idle": "1"}
    placements = {
        "block": Placement.of(["--map-by", "core", "--bind-to", "core"]),
        "cyclic": Placement.of(["--map-by", "numa", "--bind-to", "core"]),
    }

    def ucx_evidence(self, env: Dict[str, str], conduit: Optional[str] = None) -> Optional[str]:
        for name in ("OMPI_MCA_pml", "OMPI_MCA_osc"):
            if env.get(name, "").strip() == "ucx":
                return f"{name}=ucx"
        return None

    def component_tool(self) -> Optional[Tuple[str, ...]]:
        return ("ompi_info", "--parsable", "--all")

    def launch_files(self, env: Dict[str, str], ranks: int
                     ) -> Tuple[Dict[str, str], Tuple[RunFile, ...]]:
        """A per-size ``coll_tuned_<op>_algorithm`` becomes coll/tuned's rules file
        (ompi_coll_rules)."""
        return ompi_coll_rules.launch_files(env, ranks)

    def evidence_argv(self, argv: Sequence[str], folder: Path) -> List[str]:
        """mpirun's ``--output-filename DIR`` (Open MPI 4.x): each rank's stdout and stderr in
        DIR/<job>/rank.<N>/, so coll_ucc_verbose lines of different ranks cannot cut into each
        other (through mpirun's one stream they did: a cut "[vm:1234" + "5] ..." read as a fifth
        process). Not for a scheduler's step launcher, which launches the ranks itself."""
        argv = list(argv)
        if argv and Path(argv[0]).name.startswith("mpirun") and "--output-filename" not in argv:
            argv[1:1] = ["--output-filename", str(folder.resolve() / RANK_OUTPUT)]
        return argv

    def evidence_stderr(self, folder: Path, combined: str) -> str:
        ranks = sorted((folder / RANK_OUTPUT).glob("*/rank.*/stderr"),
                       key=lambda p: (p.parent.parent.name, _rank(p.parent.name)))
        if not ranks:
            return combined
        return "".join(bounds.read_text(p, bounds.MAX_OUTPUT_BYTES, "a rank's stderr",
                                        errors="replace") for p in ranks)

    def evidence_env(self, env: Dict[str, str]) -> Dict[str, str]:
        """coll_ucc_verbose=3 when the run touches the coll framework (ompi_coll_evidence); set
        only in the point's separate evidence run, never in its timed runs."""
        return ompi_coll_evidence.evidence_env(env)

    def components_used(self, env: Dict[str, str], stderr: str,
                        collectives: Optional[Iterable[str]] = None) -> Optional[Dict[str, object]]:
        return ompi_coll_evidence.components_used(env, stderr, collectives)

    def local(self, launcher: str, req: Request, placement: Placement,
              env: Dict[str, str]) -> Launch:
        argv = [launcher, "-np", str(req.ranks_per_node)]
        argv += self._common(req, placement)
        env = with_env(env, placement.env_dict)
        return Launch(argv + _exports(env), env)

    def in_allocation(self, command: Sequence[str], req: Request, placement: Placement,
                      env: Dict[str, str]) -> Launch:
        # mpirun reads the allocation's nodes from the scheduler; --npernode keeps ranks_per_node on each
        # (a second --map-by would replace ppr:N:node, so a mapping takes --npernode).
        argv = [*command, "-np", str(req.ranks)]
        # A placement's own ppr:N:<object> (a study's mapping) fixes the ranks per node itself.
        if not any(a.startswith("ppr:") for a in placement.args):
            argv += (["--npernode", str(req.ranks_per_node)] if req.mapping
                     else ["--map-by", f"ppr:{req.ranks_per_node}:node"])
        argv += self._common(req, placement)
        env = with_env(env, placement.env_dict)
        return Launch(argv + _exports(env), env)

    def _common(self, req: Request, placement: Placement) -> List[str]:
        argv = ["--allow-run-as-root"] if req.as_root else []
        if req.oversubscribed:
            argv.append("--oversubscribe")
        args = list(placement.args)
        argv += _overloaded(args) if req.oversubscribed else args
        return argv + ["--report-bindings"]


RANK_OUTPUT = "ranks"  # the evidence folder's subfolder for --output-filename


def _rank(name: str) -> int:
    """rank.<N> -> N (a name of another form last)."""
    number = name.rpartition(".")[2]
    return int(number) if number.isdigit() and len(number) < 9 else 1 << 30


def _overloaded(args: List[str]) -> List[str]:
    """Placement arguments that allow more ranks than cores (--map-by X:OVERSUBSCRIBE,
    --bind-to Y:overload-allowed)."""
    out = list(args)
    for i, arg in enumerate(out[:-1]):
        value = out[i + 1]
        if arg == "--map-by" and "OVERSUBSCRIBE" not in value.upper():
            out[i + 1] = value + ":OVERSUBSCRIBE"
        elif arg == "--bind-to" and "overload-allowed" not in value and value != "none":
            out[i + 1] = value + ":overload-allowed"
    return out


def _exports(env: Dict[str, str]) -> List[str]:
    """mpirun passes only the variables named with -x to remote ranks."""
    argv: List[str] = []
    for name in sorted(env):
        argv += ["-x", name]
    return argv


FLAVOUR = OpenMPI()
