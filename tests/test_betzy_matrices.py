"""Must show: every published Betzy cell has its point in matrices/betzy/, with the published
decomposition, and the matrices run nothing the tables do not imply.

The published files are the texts kept in results/betzy/reference/imports/*.json (the shared
seeds betzy_allcores_27nodes.md and betzy_halfcores_staged_vs_standard.md, imported), read with
the importer's own parser (commstack.importers.betzy): its cells carry the dimensions
executable, toolchain, order, halo, nfields, algorithm and the part's ranks per node, nodes,
domain and hwcart arguments. The points are what `commstack plan MATRIX --json` prints.

How a point names a cell: toolchain from the stack's MPI flavour (openmpi -> ompi, intelmpi ->
impi), the published executable is the point's executable without the `_staged` suffix that
the ghexbench recipe gives +staged builds, algorithm is the point's `algorithm` (standard where
a matrix has none). Points beyond the cells, and why: the `mpicart` decomposition axis (issue
13: each cell also under --MPICart over the hwcart levels' global grid), taken once per cell
without an order (cartex ignores --order with --MPICart). Cells printed NaN (GHEX with impi:
"too long startup time") have no point.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from typing import Any, Dict, List, Tuple

import pytest

from commstack.importers.betzy import HWCART_LEVELS, ParsedFile, parse_betzy
from commstack.matrix.load import load_matrix
from tests.conftest import REPO
from tests.sweeps import commstack

IMPORTS = REPO / "results" / "betzy" / "reference" / "imports"
# Published result file -> the matrix that reruns it.
MATRICES = {
    "betzy_allcores_27nodes": REPO / "matrices" / "betzy" / "allcores.yaml",
    "betzy_halfcores_staged_vs_standard": REPO / "matrices" / "betzy" / "halfcores.yaml",
}
# The same cells on the published runs' own stack (machine.yaml studies: cartex-2021).
STUDY_MATRICES = {stem: path.with_name(path.stem + "-study.yaml") for stem, path in MATRICES.items()}
TOOLCHAINS = {"openmpi": "ompi", "intelmpi": "impi"}
# Runs of the study that its published file does not tabulate, planned as bench.xml ran them:
# (executable, toolchain, algorithm) per file. Halfcores: bench.xml tags impi with halfcores
# (I_MPI_PIN_PROCESSOR_LIST every second core); the file has no impi column.
UNTABULATED = {"betzy_halfcores_staged_vs_standard": {("benchmark_mpi_comm", "impi", "standard")}}
# bench.xml's Intel MPI pinning per file: I_MPI_PIN_PROCESSOR_LIST=$(seq -s, 0 <step> 127)
IMPI_PIN_STEP = {"betzy_allcores_27nodes": 1, "betzy_halfcores_staged_vs_standard": 2}
STAGED = "_staged"
Key = Tuple[str, str, str, str, int, int]  # executable, toolchain, algorithm, order, halo, nfields


def published(stem: str) -> ParsedFile:
    data = json.loads((IMPORTS / f"{stem}.json").read_text())
    return parse_betzy(data["text"], data["source"]["file"])


def plan_json(matrix) -> List[Dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}  # not in a job
    run = commstack("plan", str(matrix), "--json", env=env)
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]


def cell_key(dims: Dict[str, Any]) -> Key:
    return (dims["executable"], dims["toolchain"], dims.get("algorithm", "standard"),
            dims["order"], int(dims["halo"]), int(dims["nfields"]))


def point_key(point: Dict[str, Any], order: str) -> Key:
    params = point["params"]
    executable = params["executable"]
    algorithm = params.get("algorithm", "standard")
    staged_build = executable.endswith(STAGED)
    # a +staged build is the staged algorithm; benchmark_mpi_comm (always staged) runs for both
    assert not staged_build or algorithm == "staged", point["params"]
    if algorithm == "staged" and executable != "benchmark_mpi_comm":
        assert staged_build, f"staged point without a +staged build: {params}"
    return (executable[:-len(STAGED)] if staged_build else executable,
            TOOLCHAINS[point["flavour"]], algorithm, order,
            int(params["halo"]), int(params["nfields"]))


def hwcart_args(parsed: ParsedFile) -> Dict[str, str]:
    (args,) = [a for (_, kind), a in parsed.decomposition_args.items() if kind == "hwcart"]
    return args


def option(argv: List[str], flag: str, count: int = 1) -> List[str]:
    """The values after `flag` in a benchmark argv; the flag must appear exactly once."""
    assert argv.count(flag) == 1, f"{flag} given {argv.count(flag)} times in {argv}"
    at = argv.index(flag)
    return argv[at + 1:at + 1 + count]


def nan_cells(parsed: ParsedFile) -> List[Key]:
    numbers = {cell_key(c.dims) for c in parsed.cells}
    return sorted({cell_key(dims) for _, _, _, dims in parsed.layout.cells()} - numbers)


@pytest.fixture(scope="module", params=[(stem, m[stem]) for m in (MATRICES, STUDY_MATRICES)
                                         for stem in sorted(m)], ids=lambda p: p[1].stem)
def study(request):
    stem, matrix = request.param
    return stem, published(stem), plan_json(matrix), matrix


def test_every_imported_betzy_file_has_a_matrix():
    stems = sorted(p.stem for p in IMPORTS.glob("*.json"))
    assert stems, f"no imported Betzy result files in {IMPORTS}"
    assert stems == sorted(MATRICES), "a published Betzy file without its matrix (or vice versa)"


def test_every_published_cell_has_its_point_with_the_published_arguments(study):
    stem, parsed, points, _ = study
    args = hwcart_args(parsed)
    hwcart = {}
    for point in points:
        if point["params"].get("decomposition") == "hwcart":
            key = point_key(point, point["params"]["order"])
            assert key not in hwcart, f"{stem}: two points for one cell {key}"
            hwcart[key] = point
    assert parsed.cells
    for cell in parsed.cells:
        key = cell_key(cell.dims)
        assert key in hwcart, f"{stem}: no point for the published cell {cell.dims}"
        point = hwcart[key]
        argv = point["benchmark_argv"]
        assert os.path.basename(argv[0]) == point["params"]["executable"]
        for level in HWCART_LEVELS:
            if level in args:
                assert option(argv, f"--{level}", 3) == args[level].split(), (stem, level)
            else:
                assert f"--{level}" not in argv
        assert "--MPICart" not in argv
        assert option(argv, "--order") == [cell.dims["order"]]
        assert option(argv, "--domain", 3) == cell.dims["domain"].split()
        assert option(argv, "--halo") == [str(cell.dims["halo"])]
        assert option(argv, "--nfields") == [str(cell.dims["nfields"])]
        assert point["nodes"] == cell.dims["nodes"]
        assert point["ranks_per_node"] == cell.dims["ranks_per_node"]
        assert point["ranks"] == cell.dims["nodes"] * cell.dims["ranks_per_node"]
        # the hwcart grid holds exactly the ranks launched
        grids = [[int(x) for x in args[level].split()] for level in args]
        assert math.prod(math.prod(g) for g in grids) == point["ranks"]
        # "execution time of 10000 exchange calls" is mean (s) x 10000 of one run of
        # GHEX-BENCH's JUBE setup (num_reps=1000), with --check as there
        assert option(argv, "--nrep") == ["1000"] and "--check" in argv
        assert not point["skipped"], point


def test_nothing_extra_beyond_the_cells_and_their_mpicart_twins(study):
    stem, parsed, points, _ = study
    cells = {cell_key(c.dims) for c in parsed.cells}
    kinds = Counter(p["params"].get("decomposition") for p in points)
    assert set(kinds) == {"hwcart", "mpicart"}, kinds
    hwcart = [point_key(p, p["params"]["order"]) for p in points
              if p["params"]["decomposition"] == "hwcart"]
    grid = {k[3:] for k in cells}  # (order, halo, nfields) of the file's cells
    extra = {run + g for run in UNTABULATED.get(stem, ()) for g in grid}
    assert not extra & cells, f"{stem}: an untabulated run is in the file"
    cells |= extra
    assert sorted(hwcart) == sorted(cells), f"{stem}: hwcart points differ from the cells"
    for nan in nan_cells(parsed):  # GHEX with impi: not run upstream, nothing to rerun
        assert nan not in hwcart, f"{stem}: a point for a NaN cell {nan}"
    # mpicart: one twin per cell for every order, i.e. per (executable, toolchain, algorithm,
    # halo, nfields)
    twins = {(e, t, a, h, f) for e, t, a, _, h, f in cells}
    mpicart = [point_key(p, "-") for p in points if p["params"]["decomposition"] == "mpicart"]
    assert Counter(k[:3] + k[4:] for k in mpicart) == Counter(twins), stem
    assert len(points) == len(cells) + len(twins), stem
    ids = [p["point_id"] for p in points]
    assert len(set(ids)) == len(ids)


def test_mpicart_points_take_the_global_grid_of_the_hwcart_levels(study):
    stem, parsed, points, _ = study
    args = hwcart_args(parsed)
    grid = [math.prod(int(args[level].split()[axis]) for level in args) for axis in range(3)]
    mpicart = [p for p in points if p["params"]["decomposition"] == "mpicart"]
    assert mpicart
    for point in mpicart:
        argv = point["benchmark_argv"]
        assert option(argv, "--MPICart", 3) == [str(n) for n in grid], stem
        assert math.prod(grid) == point["ranks"]
        # MPI numbers the ranks: no order, no hwcart level (cartex would ignore them)
        for flag in ["--order"] + [f"--{level}" for level in HWCART_LEVELS]:
            assert flag not in argv, (stem, flag, argv)
        assert "order" not in point["params"]


def test_each_stack_runs_its_own_build(study):
    """One executable per stack and one stack per executable: the five published builds (and
    their +staged builds) are told apart by their views, not by chance of a PATH."""
    stem, _, points, matrix = study
    # environments/betzy installs the xpmem builds only where the kernel module is loaded
    # (opt-in): those stacks are optional there, every other one must be found
    for name, stack in load_matrix(matrix).stacks.items():
        # the study's stacks: optional too, where the 2021 externals are not (machine check)
        assert stack.optional == ("xpmem" in name or "study" in name), name
    pairs = {(p["stack"], p["params"]["executable"]) for p in points}
    stacks = Counter(s for s, _ in pairs)
    assert all(n == 1 for n in stacks.values()), stacks
    for point in points:
        assert f"/views/{point['stack']}/bin/" in point["benchmark_argv"][0], point["stack"]
        # nothing is unresolved but the missing installation (review mode, not on Betzy)
        for reason in point["unresolved"]:
            assert ("is not installed" in reason or "not found in" in reason
                    or "${EBROOTOPENMPI}, which is not set" in reason), reason
        # a launcher still naming the unset module variable is shown as written, not made a
        # path under this checkout
        launcher = next((a for a in point["argv"] if a.endswith("/bin/mpirun")), "")
        assert "${" not in launcher or launcher == "${EBROOTOPENMPI}/bin/mpirun", launcher


def test_intel_mpi_is_pinned_as_bench_xml_pinned_it(study):
    """bench.xml's mpi_params_impi: I_MPI_PIN_PROCESSOR_LIST=$(seq -s, 0 2 127) at halfcores,
    $(seq -s, 0 1 127) at allcores (machine.yaml: mapping.block.intelmpi with its own spread
    map); no pin domain that would make Intel MPI ignore the list; shm:ofi as there."""
    stem, _, points, matrix = study
    impi = [p for p in points if p["flavour"] == "intelmpi"]
    assert impi, f"{stem}: no Intel MPI point"
    want = ",".join(str(c) for c in range(0, 128, IMPI_PIN_STEP[stem]))
    for point in impi:
        assert point["env"]["I_MPI_PIN_PROCESSOR_LIST"] == want, point["point_id"]
        assert "I_MPI_PIN_DOMAIN" not in point["env"]
        assert point["env"]["I_MPI_FABRICS"] == "shm:ofi"
        assert point["params"]["executable"] == "benchmark_mpi_comm"


def test_the_study_matrices_are_the_same_points_on_the_studys_own_stack():
    """halfcores-study.yaml and allcores-study.yaml: every point of their matrix with the stack
    swapped for the study's (ompi -> ompi-study, Intel MPI as it is), launched by the Open MPI
    4.0.5 module's mpirun with bench.xml's -map-by ppr:N:socket:pe=M -bind-to core inside the
    allocation, not srun."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="b[1-27]", SLURM_JOB_NUM_NODES="27",
               EBROOTOPENMPI="/cluster/software/OpenMPI/4.0.5-GCC-10.2.0")
    ppr = {"betzy_allcores_27nodes": "ppr:64:socket:pe=1",
           "betzy_halfcores_staged_vs_standard": "ppr:32:socket:pe=2"}
    for stem in MATRICES:
        today, study = plan_json(MATRICES[stem]), plan_json(STUDY_MATRICES[stem])
        def swapped(p):
            params = {k: v for k, v in p["params"].items() if k != "stack"}
            return json.dumps([p["stack"].replace("ompi", "ompi-study", 1), params], sort_keys=True)
        assert sorted(swapped(p) for p in today) == sorted(
            json.dumps([p["stack"], {k: v for k, v in p["params"].items() if k != "stack"}],
                       sort_keys=True) for p in study), stem
        run = commstack("plan", str(STUDY_MATRICES[stem]), "--json", env=env)
        assert run.returncode == 0, run.stderr
        for point in (json.loads(line) for line in run.stdout.splitlines() if line.strip()):
            argv = point["argv"]
            if point["flavour"] != "openmpi":
                continue
            assert argv[0] == "/cluster/software/OpenMPI/4.0.5-GCC-10.2.0/bin/mpirun", argv[:3]
            assert "srun" not in argv and "--npernode" not in argv
            assert option(argv, "--map-by") == [ppr[stem]] and option(argv, "--bind-to") == ["core"]
