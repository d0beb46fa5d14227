"""Spack builds GHEX-BENCH cartex (commstack's ghexbench and hwcart recipes) offline, against
Debian's Open MPI + UCX and MPICH, and the installed benchmarks pass their halo check."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spack_support  # noqa: E402

from commstack.benchmarks.cartex import parse_cartex  # noqa: E402

pytestmark = pytest.mark.spack

OMPI_UCX_ENV = spack_support.SPACK_ENVS_DIR / "ghexbench-ompi-ucx"
MPICH_ENV = spack_support.SPACK_ENVS_DIR / "ghexbench-mpich"
SOURCES_TSV = spack_support.SPACK_ENVS_DIR / "ghexbench-sources.tsv"

UCX_EXE = "benchmark_ghex_comm_ucx"
MPI_COMM_EXE = "benchmark_mpi_comm"

#: Build and install times of this session (printed at the end with -s, for docs/measured.md).
TIMINGS: Dict[str, float] = {}


def _missing_sources() -> list:
    """Rows of ghexbench-sources.tsv whose tarball is not in the mirror (by checksum)."""
    mirror = spack_support.find_mirror()
    assert mirror is not None
    with SOURCES_TSV.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [
        f"{r['package']} {r['version']}"
        for r in rows
        if not (mirror / "_source-cache" / "archive" / r["sha256"][:2] / f"{r['sha256']}.tar.gz").exists()
    ]


@pytest.fixture(scope="session")
def gb_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    missing = _missing_sources()
    if missing:
        pytest.skip(
            f"skipped: source mirror lacks {', '.join(missing)} (add the rows of "
            f"{SOURCES_TSV.name} with scripts/mirror_from_git.sh)"
        )
    return tmp_path_factory.mktemp("spack-ghexbench")


def _install(env: Path, workdir: Path, exe: str) -> Path:
    t0 = time.monotonic()
    bindir = spack_support.install_view_bin(env, workdir, exe)
    TIMINGS.setdefault(f"{env.name} first install", time.monotonic() - t0)
    return bindir


@pytest.fixture(scope="session")
def ompi_ucx_bin(gb_workdir: Path) -> Path:
    return _install(OMPI_UCX_ENV, gb_workdir, UCX_EXE)


@pytest.fixture(scope="session")
def mpich_bin(gb_workdir: Path) -> Path:
    return _install(MPICH_ENV, gb_workdir, MPI_COMM_EXE)


def _run(cmd: list, env: "dict | None" = None, timeout: int = 300) -> str:
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} -> exit {proc.returncode}\n{output[-4000:]}"
    assert "check failed" not in output, output[-4000:]
    return proc.stdout


@pytest.mark.mpi
def test_ghex_comm_ucx_check_passes_on_8_ranks(ompi_ucx_bin: Path) -> None:
    if shutil.which("mpirun.openmpi") is None:
        pytest.skip("skipped: mpirun.openmpi not found (apt install openmpi-bin)")
    # GHEX talks to UCX directly (oomph's UCX backend); Open MPI itself keeps Debian's default
    # pml (ob1). Shared memory only: 8 ranks oversubscribe the 2 cores of a CI machine.
    cmd = [
        "mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "8",
        "-x", "UCX_TLS=self,sm", "-x", "UCX_WARN_UNUSED_ENV_VARS=n",
        str(ompi_ucx_bin / UCX_EXE),
        "--domain", "16", "16", "16", "--nrep", "10", "--check", "--node", "2", "2", "2",
    ]  # fmt: skip
    t0 = time.monotonic()
    out = _run(cmd)
    TIMINGS["benchmark_ghex_comm_ucx --check, 8 ranks"] = time.monotonic() - t0
    (result,) = parse_cartex(out).rows
    assert result["ranks"] == 8
    assert result["runtime"] == "ghex_comm UCX none"
    assert result["repetitions"] == 10
    assert "setup_time_s" in result
    # 8 ranks x halo shell of a 16^3 float box, sent and received: 2*8*(18^3-16^3)*4
    assert result["load_bytes"] == 2 * 8 * (18**3 - 16**3) * 4


@pytest.mark.mpi
def test_mpi_comm_against_mpich_check_passes(mpich_bin: Path) -> None:
    if shutil.which("mpirun.mpich") is None:
        pytest.skip("skipped: mpirun.mpich not found (apt install mpich)")
    cmd = [
        "mpirun.mpich", "-np", "4", str(mpich_bin / MPI_COMM_EXE),
        "--domain", "16", "16", "16", "--nrep", "10", "--check", "--node", "2", "2", "1",
    ]  # fmt: skip
    t0 = time.monotonic()
    out = _run(cmd)
    TIMINGS["benchmark_mpi_comm --check, 4 ranks (MPICH)"] = time.monotonic() - t0
    (result,) = parse_cartex(out).rows
    assert result["ranks"] == 4
    assert result["runtime"] == "mpi_comm"


def _ldd(path: Path) -> Dict[str, str]:
    out = subprocess.run(["ldd", str(path)], stdout=subprocess.PIPE, text=True, check=True).stdout
    assert "not found" not in out, f"ldd {path}:\n{out}"
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            libs[m.group(1)] = os.path.realpath(m.group(2))
    return libs


def test_ghex_comm_ucx_install_layout_and_libraries(ompi_ucx_bin: Path) -> None:
    # The view holds the published name only; the vendored GHEX stack stays private.
    assert sorted(p.name for p in ompi_ucx_bin.iterdir()) == [UCX_EXE]
    exe = (ompi_ucx_bin / UCX_EXE).resolve()
    prefix = spack_support.installed_prefix(ompi_ucx_bin / UCX_EXE)
    assert sorted(p.name for p in prefix.iterdir()) == [".spack", "bin", "lib"]
    private = prefix / "lib" / "ghexbench"
    assert sorted(p.name for p in private.iterdir()) == [
        "libghex.so", "libhwmalloc.so", "liboomph_ucx.so",
    ]  # fmt: skip

    libs = _ldd(exe)  # run outside any build tree (Spack removed the stage)
    for name in ("libghex.so", "liboomph_ucx.so", "libhwmalloc.so"):
        assert libs[name] == str(private / name), libs
    assert "/hwcart-2023-01-31-" in libs["libhwcart.so"], libs
    assert libs["libmpi.so.40"].startswith(("/usr/lib/", "/lib/")), libs
    assert libs["libucp.so.0"].startswith(("/usr/lib/", "/lib/")), libs


def test_mpi_comm_install_links_mpich(mpich_bin: Path) -> None:
    assert sorted(p.name for p in mpich_bin.iterdir()) == [MPI_COMM_EXE]
    prefix = spack_support.installed_prefix(mpich_bin / MPI_COMM_EXE)
    assert sorted(p.name for p in prefix.iterdir()) == [".spack", "bin"]
    libs = _ldd((mpich_bin / MPI_COMM_EXE).resolve())
    assert "libmpich.so.12" in libs, libs
    assert "libmpi.so.40" not in libs, f"linked Open MPI instead of MPICH: {libs}"
    assert "/hwcart-2023-01-31-" in libs["libhwcart.so"], libs


def test_spec_records_the_configuration(ompi_ucx_bin: Path) -> None:
    prefix = spack_support.installed_prefix(ompi_ucx_bin / UCX_EXE)
    nodes = json.loads((prefix / ".spack" / "spec.json").read_text())["spec"]["nodes"]
    root = nodes[0]
    assert root["name"] == "ghexbench" and root["version"] == "2023-05-08"
    params = root["parameters"]
    assert (params["runtime"], params["transport"], params["rma"]) == ("ghex_comm", "ucx", "none")
    assert (params["staged"], params["field_by_field"], params["precision"]) == (
        False, False, "float",
    )  # fmt: skip
    by_name = {n["name"]: n for n in nodes}
    assert by_name["hwcart"]["version"] == "2023-01-31"
    assert by_name["openmpi"]["external"]["path"] == "/usr"
    assert by_name["ucx"]["version"] == "1.13.1"


def test_reinstall_is_idempotent_and_fast(gb_workdir: Path, ompi_ucx_bin: Path, mpich_bin: Path) -> None:
    for env, exe, first in ((OMPI_UCX_ENV, UCX_EXE, ompi_ucx_bin), (MPICH_ENV, MPI_COMM_EXE, mpich_bin)):
        t0 = time.monotonic()
        again = spack_support.install_view_bin(env, gb_workdir, exe)
        elapsed = time.monotonic() - t0
        TIMINGS[f"{env.name} re-install"] = elapsed
        assert again == first
        assert elapsed < 120, f"second install of {env.name} took {elapsed:.0f} s"
    print("\nghexbench timings (s): " + ", ".join(f"{k}: {v:.1f}" for k, v in TIMINGS.items()))


@pytest.fixture(scope="session")
def spec_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the Open MPI + UCX test environment, for `spack spec` and `spack python` only."""
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    envdir = tmp_path_factory.mktemp("spack-ghexbench-spec")
    shutil.copyfile(OMPI_UCX_ENV / "spack.yaml", envdir / "spack.yaml")
    return envdir


def test_conflict_message_reaches_the_user(spec_env: Path) -> None:
    with pytest.raises(RuntimeError) as excinfo:
        spack_support.run_spack(["-e", str(spec_env), "spec", "ghexbench runtime=mpi_comm transport=ucx"])
    assert (
        "ghexbench: transport=ucx needs runtime=ghex_comm or runtime=oomph_comm: "
        "runtime=mpi_comm always communicates through MPI"
    ) in str(excinfo.value), str(excinfo.value)


# Run by `spack python`: every combination of the build-time variants, the conflicts the recipe
# declares for it (as the solver would apply them) and, if none, the executable's name.
_COMBINATIONS_SCRIPT = """
import itertools, json
import spack.repo, spack.spec

ghexbench = spack.repo.PATH.get_pkg_class("ghexbench")
rows = []
for runtime, transport, rma, staged, fbf, pack_z in itertools.product(
    ("mpi_comm", "ghex_comm", "oomph_comm"), ("mpi", "ucx", "libfabric"),
    ("none", "threads", "xpmem"), (False, True), (False, True), (False, True),
):
    flags = " ".join(("+" if on else "~") + name for name, on in
                     (("staged", staged), ("field_by_field", fbf), ("pack_z", pack_z)))
    spec = spack.spec.Spec(f"ghexbench runtime={runtime} transport={transport} rma={rma} {flags}")
    conflicts = sorted(
        msg
        for when, items in ghexbench.conflicts.items() if spec.satisfies(when)
        for trigger, msg in items if spec.satisfies(trigger)
    )
    rows.append({"config": [runtime, transport, rma, staged, fbf, pack_z], "conflicts": conflicts,
                 "name": None if conflicts else ghexbench(spec).benchmark_name})
hwcart = spack.repo.PATH.get_pkg_class("hwcart")
requirements = [[str(when), [str(s) for s in specs], msg]
                for when, items in hwcart.requirements.items() for specs, _, msg in items]
print("JSON:" + json.dumps({"ghexbench": rows, "hwcart": requirements}))
"""


def _expected_name(runtime: str, transport: str, rma: str, staged: bool, fbf: bool) -> str:
    name = f"benchmark_{runtime}"
    if runtime != "mpi_comm":
        name += ("" if rma == "none" else f"_{rma}") + f"_{transport}"
    return name + ("_staged" if staged else "") + ("_field_by_field" if fbf else "")


def test_variant_combinations_conflicts_and_names(spec_env: Path, tmp_path: Path) -> None:
    script = tmp_path / "combinations.py"
    script.write_text(_COMBINATIONS_SCRIPT)
    out = spack_support.run_spack(["-e", str(spec_env), "python", str(script)], timeout=300)
    data = json.loads(out[out.index("JSON:") + 5 :])

    names = {}
    for row in data["ghexbench"]:
        runtime, transport, rma, staged, fbf, pack_z = row["config"]
        impossible = (
            (runtime == "mpi_comm" and transport != "mpi")
            or (runtime != "ghex_comm" and (rma != "none" or staged or fbf))
            or (runtime == "ghex_comm" and pack_z)
        )
        assert bool(row["conflicts"]) == impossible, row
        assert all(msg.startswith("ghexbench: ") for msg in row["conflicts"]), row
        if not impossible:
            assert row["name"] == _expected_name(runtime, transport, rma, staged, fbf), row
            names[(runtime, transport, rma, staged, fbf)] = row["name"]
    # 36 GHEX configurations, mpi_comm, oomph_comm x 3 transports (pack_z is not in the name)
    assert len(names) == 40 and len(set(names.values())) == 40
    # The names of upstream's cartex/build/configure and of the published Betzy results
    published = {
        ("mpi_comm", "mpi", "none"): "benchmark_mpi_comm",
        ("ghex_comm", "mpi", "none"): "benchmark_ghex_comm_mpi",
        ("ghex_comm", "ucx", "none"): "benchmark_ghex_comm_ucx",
        ("ghex_comm", "mpi", "xpmem"): "benchmark_ghex_comm_xpmem_mpi",
        ("ghex_comm", "ucx", "xpmem"): "benchmark_ghex_comm_xpmem_ucx",
    }
    for config, name in published.items():
        assert names[config + (False, False)] == name

    [(when, specs, msg)] = data["hwcart"]
    assert (when, specs) == ("~hwloc", ["^openmpi"])
    assert "hwcart~hwloc takes the topology from Open MPI's OMPI_COMM_TYPE_* split types" in msg
