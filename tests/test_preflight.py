"""The capability pre-flight on this machine's real stacks: what each refuses (exit 2, nothing
launched), the did-you-mean text, --allow-unlisted and its record, the tool cache, and a missing
tool meaning "could not be checked"."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.matrix.load import load_matrix
from commstack.preflight import Preflight, ToolCache
from commstack.sweep import prepare
from tests.sweeps import commstack, records

IMB = 'ranks_per_node: 2, msglog: "0:2", iter: 10, benchmarks: PingPong'


def needs(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"skipped: {', '.join(missing)} not installed")


def ucx_version() -> str:
    out = subprocess.run(["ucx_info", "-v"], capture_output=True, text=True).stdout
    found = re.search(r"Version (\S+)", out)
    return found.group(1) if found else ""


def write(tmp_path: Path, text: str, name: str = "m") -> Path:
    path = tmp_path / "matrices" / "local" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text))
    return path


def run(tmp_path: Path, matrix: Path, *extra: str, env: "dict | None" = None):
    cache = {"COMMSTACK_PREFLIGHT_CACHE": str(tmp_path / "tool-cache")}
    return commstack("run", str(matrix), "--out", str(tmp_path / "results"), *extra,
                     env={**os.environ, **cache, **(env or {})})


def problem_lines(stderr: str) -> list:
    return [line.strip() for line in stderr.splitlines() if line.startswith("  stack ")]


# --- Debian Open MPI + UCX 1.13: every refusal in one sweep, nothing launched ----------------
OPENMPI = """
    benchmark: imb-mpi1
    stacks:
      ompi: {flavour: openmpi, launcher: mpirun.openmpi}
    parameters: {stack: ompi, executable: "true", %s}
    product:
      mca.coll_ucc_enable: [0, 1]
      ITEM: [0]
    """ % IMB


@pytest.fixture(scope="module")
def openmpi_refusals(tmp_path_factory):
    needs("mpirun.openmpi", "ompi_info", "ucx_info")
    tmp = tmp_path_factory.mktemp("pf-ompi")
    extra = dedent("""\
          mca.coll_hcoll_enable: [0]
          mca.pml: [ucc]
          mca.coll_tuned_alreduce_algorithm: [1]
          UCX_RNDV_THRSH: [8kb]
          UCX_TLS: ["bogus,sm"]
          UCX_RNDV_THRESH: ["intra:8k,inter:16k"]
          UCX_NET_DEVICES: [nosuchdev0]
        """)
    text = OPENMPI.replace("      ITEM: [0]\n", "".join("      " + line + "\n"
                                                       for line in extra.splitlines()))
    out = run(tmp, write(tmp, text))
    return tmp, out, problem_lines(out.stderr)


def test_openmpi_refusals_exit_2_and_launch_nothing(openmpi_refusals):
    tmp, out, lines = openmpi_refusals
    assert out.returncode == 2, out.stderr
    assert "pre-flight refused" in out.stderr and "nothing was launched" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp / "results").exists()  # no campaign, no points/, no attempt folders


def test_mca_parameter_of_an_absent_component(openmpi_refusals):
    _, _, lines = openmpi_refusals
    ucc = [line for line in lines if line.startswith("stack 'ompi', mca.coll_ucc_enable=")]
    # the two values are one problem, named once: Debian's Open MPI has no coll/ucc
    assert len(ucc) == 1 and "mca.coll_ucc_enable={0, 1}" in ucc[0]
    assert "this Open MPI has no coll/ucc component" in ucc[0] and "tuned" in ucc[0]
    hcoll = next(line for line in lines if "mca.coll_hcoll_enable=0" in line)
    assert "no coll/hcoll component (HCOLL is proprietary and ships with HPC-X" in hcoll
    pml = next(line for line in lines if "mca.pml=ucc" in line)
    assert "selects pml component(s) ucc this Open MPI lacks" in pml and "ucx" in pml


def test_unknown_names_say_did_you_mean(openmpi_refusals):
    _, _, lines = openmpi_refusals
    ucx = next(line for line in lines if "UCX_RNDV_THRSH=8kb" in line)
    assert "unknown variable: ucx_info -c -a does not list UCX_RNDV_THRSH; " \
           "did you mean UCX_RNDV_THRESH?" in ucx
    assert "--allow-unlisted UCX_RNDV_THRSH" in ucx
    mca = next(line for line in lines if "mca.coll_tuned_alreduce_algorithm" in line)
    assert "did you mean coll_tuned_allreduce_algorithm?" in mca


def test_absent_transport_and_device(openmpi_refusals):
    _, _, lines = openmpi_refusals
    tls = next(line for line in lines if "UCX_TLS=bogus,sm" in line)
    assert "has no transport bogus here (ucx_info -d lists" in tls and "allow-unlisted" not in tls
    assert "has no transport sm" not in tls  # sm is an alias of transports present here
    dev = next(line for line in lines if "UCX_NET_DEVICES=nosuchdev0" in line)
    assert "has no device nosuchdev0 here" in dev and "lo" in dev


def test_value_syntax_this_ucx_rejects(openmpi_refusals):
    _, _, lines = openmpi_refusals
    said = subprocess.run(["ucx_info", "-c", "-a"], capture_output=True, text=True,
                          env={**os.environ, "UCX_RNDV_THRESH": "intra:8k,inter:16k"}).stdout
    refused = [line for line in lines if "UCX_RNDV_THRESH=intra:8k,inter:16k" in line]
    if ucx_version().startswith("1.13"):
        assert "Invalid value for RNDV_THRESH" in said  # what UCX 1.13 itself prints
    if "Invalid value for RNDV_THRESH" in said:
        assert len(refused) == 1
        assert f"UCX {ucx_version()} rejects UCX_RNDV_THRESH=intra:8k,inter:16k: Invalid value " \
               "for RNDV_THRESH" in refused[0] and "Expected: memory units" in refused[0]
    else:
        assert refused == []


def test_plan_shows_what_run_would_refuse_and_exits_0(tmp_path):
    needs("mpirun.openmpi", "ompi_info")
    matrix = write(tmp_path, OPENMPI.replace("      ITEM: [0]\n", ""))
    out = commstack("plan", str(matrix), "--out", str(tmp_path / "results"))
    assert out.returncode == 0, out.stderr
    refused = [line for line in out.stdout.splitlines() if line.startswith("# pre-flight would refuse")]
    assert len(refused) == 1 and "mca.coll_ucc_enable={0, 1}" in refused[0]
    assert not (tmp_path / "results").exists()


# --- Intel MPI and MPICH: their own tools' variable lists ----------------------------------
INTELMPI = """
    benchmark: imb-mpi1
    repeats: 1
    stacks:
      impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
    parameters: {stack: impi, %s, I_MPI_ADJUST_ALLREDUCEE: 1}
    """ % IMB


def test_intelmpi_unknown_variable_refused_then_run_with_the_override(impi_root, tmp_path):
    matrix = write(tmp_path, INTELMPI)
    out = run(tmp_path, matrix)
    assert out.returncode == 2, out.stderr
    [line] = problem_lines(out.stderr)
    assert line.startswith("stack 'impi', I_MPI_ADJUST_ALLREDUCEE=1 (point ")
    assert "impi_info -a -e does not list I_MPI_ADJUST_ALLREDUCEE; did you mean " \
           "I_MPI_ADJUST_ALLREDUCE?" in line
    assert not (tmp_path / "results").exists()

    out = run(tmp_path, matrix, "--allow-unlisted", "I_MPI_ADJUST_ALLREDUCEE")
    assert out.returncode == 0, out.stderr[-2000:]
    [rec] = records(tmp_path / "results" / "local" / "m")
    assert rec["status"] == "ok"
    why = rec["preflight_unchecked"]["I_MPI_ADJUST_ALLREDUCEE"]
    assert why.startswith("let through by --allow-unlisted: unknown variable")
    assert rec["env"]["I_MPI_ADJUST_ALLREDUCEE"] == "1"


def test_intelmpi_known_variable_passes_and_is_not_marked(impi_root, tmp_path):
    matrix = write(tmp_path, INTELMPI.replace("ALLREDUCEE", "ALLREDUCE"))
    out = run(tmp_path, matrix)
    assert out.returncode == 0, out.stderr[-2000:]
    [rec] = records(tmp_path / "results" / "local" / "m")
    assert rec["status"] == "ok" and rec["preflight_unchecked"] == {}


def test_mpich_unknown_control_variable(tmp_path):
    needs("mpiexec.mpich", "mpivars")
    matrix = write(tmp_path, """
        benchmark: imb-mpi1
        stacks:
          mpich: {flavour: mpich, launcher: mpiexec.mpich}
        parameters: {stack: mpich, executable: "true", %s}
        product: {MPIR_CVAR_BCAST_SHORT_MSG_SIZ: [1024], MPIR_CVAR_BCAST_LONG_MSG_SIZE: [524288]}
        """ % IMB)
    out = run(tmp_path, matrix)
    assert out.returncode == 2, out.stderr
    [line] = problem_lines(out.stderr)  # the correctly spelled one passes
    assert "mpivars does not list MPIR_CVAR_BCAST_SHORT_MSG_SIZ; did you mean " \
           "MPIR_CVAR_BCAST_SHORT_MSG_SIZE?" in line
    assert not (tmp_path / "results").exists()


# --- the cache: each tool once per stack, then from memory, then from disk -----------------
def test_second_check_runs_no_tool(impi_root, tmp_path):
    needs("ucx_info")
    matrix = load_matrix(write(tmp_path, """
        benchmark: imb-mpi1
        stacks:
          impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
        parameters: {stack: impi, %s}
        product: {I_MPI_ADJUST_ALLREDUCE: [0, 1, 2, 3], UCX_RNDV_THRESH: [8kb, 16kb, auto]}
        """ % IMB))
    plan = prepare(matrix)
    assert len(plan.points) == 12
    first = Preflight(ToolCache(tmp_path / "cache"))
    verdict = first.check(plan)
    assert not verdict.refused
    # impi_info once; ucx_info -c -a for the names, -d and -v once; one value check per value
    assert first.tools.runs == 1 + 1 + 2 + 3 and verdict.tool_runs == first.tools.runs
    cached = sorted((p.name, p.stat().st_mtime_ns) for p in (tmp_path / "cache").iterdir())
    assert len(cached) == first.tools.runs
    again = first.check(plan)
    assert first.tools.runs == 7 and again.tool_runs == 0 and not again.refused

    fresh = Preflight(ToolCache(tmp_path / "cache"))  # a new process: the disk answers
    assert not fresh.check(plan).refused
    assert fresh.tools.runs == 0 and fresh.tools.hits == 7
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (tmp_path / "cache").iterdir()) == cached


def test_run_log_counts_tool_runs_and_cache_answers(impi_root, tmp_path):
    matrix = write(tmp_path, INTELMPI.replace("ALLREDUCEE", "ALLREDUCE"))
    first = run(tmp_path, matrix)
    assert first.returncode == 0, first.stderr[-2000:]
    ran = re.search(r"pre-flight: tools: (\d+) run, (\d+) answers from the cache", first.stdout)
    assert ran and int(ran.group(1)) >= 1
    second = run(tmp_path, matrix)
    assert "pre-flight: tools: 0 run," in second.stdout, second.stdout


# --- a missing tool: "could not be checked", never a refusal --------------------------------
def test_missing_tool_is_a_warning_and_the_record_says_so(impi_root, tmp_path):
    matrix = write(tmp_path, """
        benchmark: imb-mpi1
        repeats: 1
        stacks:
          impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
        parameters: {stack: impi, %s, UCX_TLS: "self,sm"}
        """ % IMB)
    # A PATH holding only Intel MPI's own bin: no ucx_info anywhere the stack looks.
    path = str(impi_root / "bin")
    assert shutil.which("ucx_info", path=path) is None
    out = run(tmp_path, matrix, env={"PATH": path})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "pre-flight: stack 'impi': UCX_TLS could not be checked (ucx_info not found" in out.stdout
    [rec] = records(tmp_path / "results" / "local" / "m")
    assert rec["status"] == "ok"
    assert rec["preflight_unchecked"] == {
        "UCX_TLS": "could not be checked: ucx_info not found on the stack's PATH"}


# --- the Open MPI + UCC stack built by Spack (view ompi-ucc of environments/local) --------
@pytest.mark.spack
@pytest.mark.slow
def test_coll_ucc_accepted_on_the_ucc_stack(tmp_path_factory):
    from tests import spack_support

    # The view ompi-ucc of environments/local (scripts/setup_spack.sh): used when installed,
    # never built from here.
    bindir = spack_support.ompi_ucc_bin(need=("ompi_info",))
    tmp = tmp_path_factory.mktemp("pf-ucc")
    matrix = write(tmp, """
        benchmark: imb-mpi1
        stacks:
          ucc: {flavour: openmpi, bin: "%s"}
        parameters: {stack: ucc, %s}
        product: {mca.coll_ucc_enable: [0, 1], mca.coll_ucc_priority: [100]}
        """ % (bindir, IMB))
    verdict = Preflight(ToolCache(tmp / "cache")).check(prepare(load_matrix(matrix)))
    assert not verdict.refused, verdict.messages()
    assert any("coll/ucc present" in note for note in verdict.notes)
    assert any("coll/hcoll absent" in note for note in verdict.notes)
