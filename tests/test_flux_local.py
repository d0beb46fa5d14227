"""Flux as a scheduler, on this machine: a local instance (``flux start --test-size=3``, three
brokers that each take the machine for a node), ``flux run`` of a trivial command and of
IMB-MPI1 PingPong with Intel MPI, Open MPI and MPICH (each through the job shell's PMI-1), the
jobs' states and results from ``flux jobs``, ``flux cancel``. Skipped with the reason where
flux-core is not built (``bash scripts/setup_flux.sh``). The recorded outputs of
tests/fixtures/flux/ (made by its record.sh) are checked without Flux: they are what
docs/reference/flux.md cites."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

from commstack.benchmarks.imb import parse_imb
from commstack.placement import reports

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "flux"
NO_FLUX = "skipped: no flux (bash scripts/setup_flux.sh)"
IMB_ARGS = ["PingPong", "-msglog", "0:2", "-iter", "200"]


# --- the recorded runs (no Flux needed) ------------------------------------------------------

def _imb_processes(text: str) -> List[int]:
    """IMB's process counts: '#processes = 2' plus '( 2 additional processes waiting ...)'."""
    counts = [int(n) for n in re.findall(r"^# #processes = (\d+)", text, re.M)]
    extra = [int(n) for n in re.findall(r"^# \( (\d+) additional process", text, re.M)]
    return [c + (extra[i] if i < len(extra) else 0) for i, c in enumerate(counts)]


@pytest.mark.parametrize("name, world", [
    ("impi-N1-n2-per-task", 2), ("impi-N1-n2-default", 2), ("impi-N2-n4-per-task", 4),
    ("impi-no-pmi-library", 2), ("impi-pmi2", 2), ("openmpi-N1-n2-per-task", 2), ("openmpi-N2-n4-per-task", 4),
    ("mpich-N1-n2-per-task", 2), ("mpich-N2-n4-per-task", 4)])
def test_recorded_runs_are_one_world(name: str, world: int) -> None:
    text = (FIXTURES / f"{name}.txt").read_text()
    assert text.rstrip().endswith("[exit 0]")
    out = parse_imb(text)
    assert [r["np"] for r in out.rows] == [2] * 4  # PingPong's table: 0..4 bytes, 2 ranks
    assert _imb_processes(text) == [world]


def test_recorded_pin_tables_show_flux_affinity() -> None:
    """Intel MPI's I_MPI_DEBUG=4 table: the job shell's default cpu-affinity gives every task
    the job's cores on its node; -o cpu-affinity=per-task one core each, per broker, so the
    ranks of the other broker (the same machine in a test instance) get the same cores again."""
    def pins(name: str) -> Dict[int, List[int]]:
        bindings, notes = reports.intelmpi((FIXTURES / f"{name}.txt").read_text())
        assert not notes
        return {b.rank: sorted(b.cpus) for b in bindings}

    assert pins("impi-N1-n2-default") == {0: [0, 1], 1: [0, 1]}
    assert pins("impi-N1-n2-per-task") == {0: [0], 1: [1]}
    assert pins("impi-N2-n4-per-task") == {0: [0], 1: [1], 2: [0], 3: [1]}
    for mpi in ("impi", "openmpi", "mpich"):  # the shell's own report, -o cpu-affinity=verbose,...
        assert shell_affinity((FIXTURES / f"{mpi}-N2-n4-per-task.txt").read_text()) == {
            0: "0", 1: "1", 2: "0", 3: "1"}
    where = (FIXTURES / "where-N3-n6-per-task.txt").read_text()
    masks = dict(re.findall(r"^rank (\d+) Cpus_allowed_list: (\S+) host \S+ broker (?:\d+)$",
                            where, re.M))
    assert masks == {"0": "0", "1": "1", "2": "0", "3": "1", "4": "0", "5": "1"}


@pytest.mark.parametrize("mpi", ["impi", "openmpi", "mpich"])
def test_recorded_mpis_speak_pmi1_to_the_job_shell(mpi: str) -> None:
    trace = (FIXTURES / f"{mpi}-pmi-trace.txt").read_text()
    assert "C: cmd=init pmi_version=1 pmi_subversion=1" in trace
    assert "C: cmd=finalize" in trace


def test_recorded_openmpi_selects_its_flux_component_and_impi_its_own_pmi() -> None:
    ompi = (FIXTURES / "openmpi-N1-n2-per-task.txt").read_text()
    assert ompi.count("mca:base:select:( pmix) Selected component [flux]") == 2
    impi = (FIXTURES / "impi-N1-n2-per-task.txt").read_text()
    assert "tasks [0-1] on cores 0-1" in impi  # the shell's own placement line (-o verbose=1)
    own = (FIXTURES / "impi-no-pmi-library.txt").read_text()
    assert "PMI API: pmi" in own and "PMI calls are forwarded" not in own
    pmi2 = (FIXTURES / "impi-pmi2.txt").read_text()
    assert "PMI API: pmi2" in pmi2 and re.search(r"forwarded to <FLUX>/lib/flux/libpmi2\.so$", pmi2, re.M)


def test_recorded_session_accounts_for_every_job() -> None:
    text = (FIXTURES / "session.txt").read_text()
    assert re.search(r"^commands:\s+0\.81\.0$", text, re.M)
    table = text.split("{nodelist}'\n", 1)[1]
    results = dict(re.findall(r"^\s*\S+ (\w+)\s+INACTIVE (\w+)", table, re.M))
    assert results == {"batch": "CANCELED", "flux": "CANCELED", "sleeper": "CANCELED",
                       "hostname": "COMPLETED"}


@pytest.mark.parametrize("mpi", ["impi", "openmpi", "mpich"])
def test_recorded_bound_brokers_give_each_node_its_own_core(mpi: str) -> None:
    """flux start --test-size=2 --wrap=<taskset -c $PMI_RANK>: 2 nodes of 1 core each, so a
    2-node step has its ranks on different cores, as on two real nodes."""
    assert re.search(r"^\s+free\s+2\s+2\s+0 vm,vm$", (FIXTURES / "bound-resources.txt").read_text(),
                     re.M)
    text = (FIXTURES / f"bound-{mpi}-N2-n2.txt").read_text()
    assert shell_affinity(text) == {0: "0", 1: "1"}
    assert _imb_processes(text) == [2]
    if mpi == "impi":
        bindings, _ = reports.intelmpi(text)
        assert {b.rank: sorted(b.cpus) for b in bindings} == {0: [0], 1: [1]}
        assert "libfabric provider: tcp" in text  # two nodes to Intel MPI: its network path
    elif mpi == "openmpi":
        assert text.count("init of component vader returned failure") == 2  # no local peer
    else:
        assert "ep_cfg[1]: tag(sysv/memory cma/memory)" in text  # UCX finds the peer's memory


# --- a live instance --------------------------------------------------------------------------

def flux_executable() -> "str | None":
    """Flux as scripts/setup_flux.sh installs it (its --where prefix), else flux on PATH."""
    where = subprocess.run(["bash", str(REPO / "scripts" / "setup_flux.sh"), "--where"],
                           capture_output=True, text=True, timeout=30)
    if where.returncode == 0 and where.stdout.startswith("prefix: "):
        exe = Path(where.stdout.split(": ", 1)[1].strip()) / "bin" / "flux"
        if exe.exists():
            return str(exe)
    return shutil.which("flux")


class Instance:
    """A running ``flux start --test-size=3`` (or other ``start`` arguments); ``flux(...)`` runs
    a flux command in it."""

    def __init__(self, exe: str, workdir: Path, start=("--test-size=3",)) -> None:
        self.exe = exe
        self.workdir = workdir
        uri_file = workdir / "uri"
        # The initial program records the instance's URI, then waits to be shut down.
        self.proc = subprocess.Popen(
            [exe, "start", *start, "sh", "-c", f'echo "$FLUX_URI" > {uri_file}; '
             "exec sleep 3600"], cwd=workdir, start_new_session=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not (uri_file.exists() and uri_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("flux start --test-size=3 did not come up: "
                                   + (self.proc.stdout.read().decode() if self.proc.stdout else ""))
            time.sleep(0.2)
        self.env = {**os.environ, "FLUX_URI": uri_file.read_text().strip()}

    def flux(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([self.exe, *args], env=self.env, cwd=self.workdir,
                              capture_output=True, text=True, timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None and getattr(self, "env", None):
            subprocess.run([self.exe, "shutdown", "--quiet"], env=self.env,
                           capture_output=True, timeout=60)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture(scope="module")
def instance(tmp_path_factory):
    exe = flux_executable()
    if exe is None:
        pytest.skip(NO_FLUX)
    inst = Instance(exe, tmp_path_factory.mktemp("flux"))
    yield inst
    inst.stop()


def _jobs(inst: Instance) -> Dict[str, dict]:
    """Every job of the instance by name: ``flux jobs -a --json``."""
    out = inst.flux("jobs", "-a", "--json")
    assert out.returncode == 0, out.stderr
    return {job["name"]: job for job in json.loads(out.stdout)["jobs"]}


def test_three_brokers_run_a_trivial_step(instance: Instance) -> None:
    listing = instance.flux("resource", "list", "-n", "-o", "{state} {nnodes}")
    assert "free 3" in listing.stdout.split("\n")[0], listing.stdout
    run = instance.flux("run", "-N3", "-n3", "--label-io", "--job-name=labels", instance.exe,
                        "getattr", "rank")
    assert run.returncode == 0, run.stderr
    # each task is on its own broker: task i of -N3 -n3 on broker rank i
    assert sorted(run.stdout.split("\n")[:-1]) == ["0: 0", "1: 1", "2: 2"]
    job = _jobs(instance)["labels"]
    assert (job["result"], job["returncode"], job["nnodes"], job["ntasks"]) == ("COMPLETED", 0, 3, 3)


def test_batch_submit_and_cancel_are_accounted(instance: Instance) -> None:
    batch = instance.flux("batch", "-N1", "--job-name=held-batch", "--wrap", "sleep", "300")
    assert batch.returncode == 0, batch.stderr
    jobid = batch.stdout.strip()
    started = instance.flux("job", "wait-event", "-t", "60", jobid, "start")
    assert started.returncode == 0, started.stderr
    assert _jobs(instance)["held-batch"]["state"] == "RUN"
    cancel = instance.flux("cancel", jobid)
    assert cancel.returncode == 0, cancel.stderr
    assert instance.flux("job", "wait-event", "-t", "60", jobid, "clean").returncode == 0
    job = _jobs(instance)["held-batch"]
    assert (job["state"], job["result"], job["success"]) == ("INACTIVE", "CANCELED", False)


def test_alloc_starts_an_instance_inside_the_instance(instance: Instance) -> None:
    """flux alloc --bg: a 2-node Flux instance as a job. In a test instance its URI is ssh://vm/...
    and ssh to this machine is refused; FLUX_URI_RESOLVE_LOCAL=1 makes it local:// (flux-uri(1))."""
    env = {**instance.env, "FLUX_URI_RESOLVE_LOCAL": "1"}
    alloc = subprocess.run([instance.exe, "alloc", "-N2", "--bg", "--job-name=sub"], env=env,
                           cwd=instance.workdir, capture_output=True, text=True, timeout=120)
    assert alloc.returncode == 0, alloc.stderr
    jobid = alloc.stdout.strip()
    uri = instance.flux("uri", "--local", jobid)
    assert uri.returncode == 0 and uri.stdout.startswith("local://"), uri.stdout + uri.stderr
    inner = subprocess.run([instance.exe, "resource", "list", "-n", "-o", "{state} {nnodes}"],
                           env={**instance.env, "FLUX_URI": uri.stdout.strip()},
                           capture_output=True, text=True, timeout=60)
    assert inner.stdout.split("\n")[0] == "free 2", inner.stdout + inner.stderr
    assert instance.flux("cancel", jobid).returncode == 0
    assert instance.flux("job", "wait-event", "-t", "60", jobid, "clean").returncode == 0
    assert _jobs(instance)["sub"]["result"] == "CANCELED"


def shell_affinity(text: str) -> Dict[int, str]:
    """The job shell's ``-o cpu-affinity=verbose,per-task`` lines: task rank -> its cpus."""
    return {int(t): cpus for t, cpus in
            re.findall(r"flux-shell\[\d+\]: cpu-affinity: task (\d+): cpus: (\S+)$", text, re.M)}


def _imb(instance: Instance, name: str, nodes: int, ranks: int, env: List[str],
         exe: Path) -> subprocess.CompletedProcess:
    run = instance.flux("run", f"-N{nodes}", f"-n{ranks}", "-o", "cpu-affinity=verbose,per-task",
                        f"--job-name={name}", *env, str(exe), *IMB_ARGS, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    job = _jobs(instance)[name]
    assert (job["result"], job["ntasks"], job["nnodes"]) == ("COMPLETED", ranks, nodes)
    # one core per task on each broker; a test instance's brokers share the machine's cores
    assert shell_affinity(run.stderr) == {r: str(r % 2) for r in range(ranks)}, run.stderr
    return run


@pytest.mark.mpi
def test_intel_mpi_imb_is_one_world_pinned_per_task(instance: Instance, impi_root: Path) -> None:
    pmi = Path(instance.exe).resolve().parents[1] / "lib" / "flux" / "libpmi.so"
    env = [f"--env=I_MPI_ROOT={impi_root}", f"--env=LD_LIBRARY_PATH={impi_root / 'lib'}",
           f"--env=I_MPI_PMI_LIBRARY={pmi}", "--env=I_MPI_DEBUG=4"]
    out = _imb(instance, "impi-imb", 1, 2, env, impi_root / "bin" / "IMB-MPI1").stdout
    assert _imb_processes(out) == [2]
    bindings, _ = reports.intelmpi(out)
    assert {b.rank: sorted(b.cpus) for b in bindings} == {0: [0], 1: [1]}
    four = _imb(instance, "impi-imb-4", 2, 4, env, impi_root / "bin" / "IMB-MPI1").stdout
    assert _imb_processes(four) == [4]


@pytest.mark.mpi
@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_debian_mpi_imb_is_one_world(instance: Instance, local_imb_bins, flavour: str) -> None:
    if flavour not in local_imb_bins:
        pytest.skip(f"skipped: no IMB-MPI1 built against Debian's {flavour} "
                    "(scripts/setup_spack.sh, or $COMMSTACK_IMB_" + flavour.upper() + "_BIN)")
    exe = local_imb_bins[flavour] / "IMB-MPI1"
    assert _imb_processes(_imb(instance, f"{flavour}-imb", 1, 2, [], exe).stdout) == [2]
    assert _imb_processes(_imb(instance, f"{flavour}-imb-4", 2, 4, [], exe).stdout) == [4]


@pytest.fixture(scope="module")
def bound_instance(tmp_path_factory):
    """Two brokers, broker i bound to core i by flux start's --wrap: one core per node."""
    exe = flux_executable()
    if exe is None:
        pytest.skip(NO_FLUX)
    if len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None:
        pytest.skip("skipped: bound brokers need 2 cores and taskset (util-linux)")
    workdir = tmp_path_factory.mktemp("flux-bound")
    wrapper = workdir / "bind-broker.sh"
    cores = sorted(os.sched_getaffinity(0))[:2]
    wrapper.write_text("#!/bin/sh\n"
                       f'case "$PMI_RANK" in 0) core={cores[0]} ;; *) core={cores[1]} ;; esac\n'
                       'exec taskset -c "$core" "$@"\n')
    wrapper.chmod(0o755)
    inst = Instance(exe, workdir, ["--test-size=2", f"--wrap={wrapper}"])
    yield inst, cores
    inst.stop()


@pytest.mark.mpi
def test_bound_brokers_place_a_two_node_step_on_two_cores(bound_instance, impi_root) -> None:
    inst, cores = bound_instance
    listing = inst.flux("resource", "list", "-n", "-o", "{state} {nnodes} {ncores}")
    assert listing.stdout.split("\n")[0] == "free 2 2", listing.stdout
    pmi = Path(inst.exe).resolve().parents[1] / "lib" / "flux" / "libpmi.so"
    env = [f"--env=I_MPI_ROOT={impi_root}", f"--env=LD_LIBRARY_PATH={impi_root / 'lib'}",
           f"--env=I_MPI_PMI_LIBRARY={pmi}", "--env=I_MPI_DEBUG=4"]
    run = inst.flux("run", "-N2", "-n2", "-o", "cpu-affinity=verbose,per-task",
                    "--job-name=bound-impi", *env, str(impi_root / "bin" / "IMB-MPI1"), *IMB_ARGS,
                    timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert shell_affinity(run.stderr) == {0: str(cores[0]), 1: str(cores[1])}, run.stderr
    bindings, _ = reports.intelmpi(run.stdout)
    assert {b.rank: sorted(b.cpus) for b in bindings} == {0: [cores[0]], 1: [cores[1]]}
    assert _imb_processes(run.stdout) == [2]
