"""Must show (issue 40, Flux as the second scheduler): a point as a `flux run` job with its
placement verified from the job shell's own report, a campaign as `flux batch` jobs (a job
cancelled by `commstack cancel`, the campaign resumed, nothing lost), `matrices/local/quick.yaml` through
`scripts/run_matrix.sh` inside `flux alloc`, and a rehearsal of a Betzy matrix on the local Flux
instance (site-configs/flux-local). The pieces are checked without Flux first (command lines,
batch scripts, the instance's R, the report parser on recorded outputs); the live tests run on a
`flux start --test-size=3` instance whose brokers have host names of their own
(scripts/flux_broker_host.sh) and skip with the reason where Flux or that is missing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from textwrap import dedent
from typing import Dict, List

import pytest

from commstack import machine as machine_facts
from commstack.benchmarks import registry as benchmarks
from commstack.launch.builder import LaunchError, build
from commstack.launch.stack import resolve
from commstack.machine import load_machine_file
from commstack.matrix.model import Point, Stack
from commstack.placement.check import verify
from commstack.placement.reports import find_reports, flux
from commstack.schedulers import flux_jobs, registry
from commstack.schedulers.base import JobOptions, JobRequest, SubmitError
from commstack.schedulers.flux import FluxAllocation, resources, step_provenance
from commstack.schedulers.flux_step import flux_run
from commstack.store.campaign import Campaign
from tests.conftest import REPO
from tests.sweeps import records
from tests.test_flux_local import NO_FLUX, flux_executable
from tests.test_scheduler_names import mentions

FIXTURES = REPO / "tests" / "fixtures" / "flux"
FLUX_LOCAL = load_machine_file(REPO / "site-configs" / "flux-local" / "machine.yaml")
BROKER_HOST = REPO / "scripts" / "flux_broker_host.sh"


# --- without Flux --------------------------------------------------------------------------

FLUX_MODULE = re.compile(r"^schedulers/flux(_\w+)?\.py$")
# why Flux is named outside schedulers/flux*.py -> {module: mentions}, as Slurm's allow-list does
FLUX_ALLOWED = {
    "placement/reports.py": 11,  # the job shell's cpu-affinity report: a placement-floor parser
    "machine/__init__.py": 1,  # STEP_LAUNCHERS: machine.yaml's word for Flux's step launcher
    "cli/rehearse.py": 2,  # --on's help names the local Flux test machine, flux-local
}


def test_no_module_outside_the_flux_scheduler_names_flux():
    found = {}
    for path in sorted((REPO / "src" / "commstack").rglob("*.py")):
        rel = path.relative_to(REPO / "src" / "commstack").as_posix()
        if not FLUX_MODULE.match(rel):
            words = mentions(path.read_text(), re.compile("flux", re.I))
            if words:
                found[rel] = len(words)
    assert found == FLUX_ALLOWED, found


def test_every_scheduler_step_launcher_is_a_machine_fact_word():
    """machine.yaml's launchers.<flavour>.command words that mean "a step" (machine floor) are
    the schedulers' own step launchers."""
    assert set(machine_facts.STEP_LAUNCHERS) == set(registry.step_launchers())
    assert {"slurm", "flux"} <= set(registry.names())
    assert registry.for_machine(FLUX_LOCAL).name == "flux"


def _command(flavour: str, mapping: str = "block", nodes: int = 2, ranks_per_node: int = 2,
             cores: int = 2, **params):
    stack = Stack("s", flavour, bin=str(REPO / "tests"))
    resolved = resolve(stack, None)
    allocation = FluxAllocation("fJob1", [f"flux{i}" for i in range(3)], None, None, cores)
    point = Point("imb-mpi1", (("stack", "s"), ("nodes", nodes), ("ranks_per_node", ranks_per_node),
                               ("mapping", mapping), *sorted(params.items())))
    return flux_run(build(point, benchmarks.get("imb-mpi1"), resolved, FLUX_LOCAL, allocation))


@pytest.fixture
def imb_here(tmp_path, monkeypatch):
    """An IMB-MPI1 the stack finds (the command line is built, nothing runs)."""
    exe = REPO / "tests" / "IMB-MPI1"
    if exe.exists():
        pytest.skip("tests/IMB-MPI1 exists")
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    yield
    exe.unlink()


@pytest.mark.parametrize("flavour", ["openmpi", "intelmpi", "mpich"])
@pytest.mark.parametrize("mapping", ["block", "cyclic"])
def test_a_point_is_one_flux_run_job(imb_here, flavour, mapping):
    command = _command(flavour, mapping)
    assert command.argv[:9] == ["flux", "run", "-v", "-N", "2", "--tasks-per-node=2", "-o",
                                "cpu-affinity=verbose,per-task", "-o"]
    assert f"--taskmap={mapping}" in command.argv and "exit-on-error" in command.argv
    assert command.expected.reports[-1] == "flux" and command.expected.node_order == mapping
    assert command.expected.cpus_per_rank == 1 and not command.oversubscribed
    assert "-o" not in command.argv[command.argv.index("exit-on-error") + 1:
                                    command.argv.index(str(REPO / "tests" / "IMB-MPI1"))]


def test_more_ranks_than_cores_are_oversubscribed_and_told_to_yield(imb_here):
    command = _command("openmpi", nodes=1, ranks_per_node=4)
    assert command.oversubscribed and command.expected.oversubscribed
    assert command.env["OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert _command("intelmpi", nodes=1, ranks_per_node=4).env["I_MPI_THREAD_YIELD"] == "2"
    assert "I_MPI_THREAD_YIELD" not in _command("intelmpi", nodes=1, ranks_per_node=2).env
    with pytest.raises(LaunchError, match="4 ranks per node on 2 cores needs oversubscription"):
        _command("openmpi", nodes=1, ranks_per_node=4, oversubscribe=False)


def test_cpus_per_task_asks_flux_for_cores_per_task(imb_here):
    command = _command("mpich", nodes=2, ranks_per_node=1, cpus_per_task=2)
    shape = command.argv[3:9]
    assert shape == ["-N", "2", "-n", "2", "-c", "2"] and command.expected.cpus_per_rank == 2


def test_the_job_shell_report_is_parsed_and_checked():
    text = (FIXTURES / "openmpi-N2-n4-per-task.txt").read_text()  # flux run -N2 -n4 (block)
    bindings, _ = flux(text)
    assert [(b.rank, b.node, sorted(b.cpus)) for b in bindings] == [
        (0, 0, [0]), (1, 0, [1]), (2, 1, [0]), (3, 1, [1])]
    assert [r.parser for r in find_reports(text)] == ["flux"]
    command_expected = _expected_of(2, "block")
    placed = verify(command_expected, text, None)
    assert "ranks block over nodes" in placed["checked"], placed
    assert placed["verdict"] == "not verifiable"  # no topology handed in: no NUMA domains
    cyclic = verify(_expected_of(2, "cyclic"), text, None)
    assert cyclic["verdict"] == "contradicts"
    assert "cyclic over nodes: ranks 0 and 1 are both on node 1" in cyclic["reasons"]


def _expected_of(ranks_per_node: int, mapping: str):
    from commstack.placement.model import Expected

    return Expected(mapping, ranks_per_node, nodes=2, reports=("flux",), node_order=mapping,
                    cpus_per_rank=1)


@pytest.mark.parametrize("line", [
    "0.1s: flux-shell[0]: cpu-affinity: task 99999999999999999999999: cpus: 0\n",
    "0.1s: flux-shell[0]: cpu-affinity: task 0: cpus: 0-999999999999\n",
])
def test_a_hostile_job_shell_report_is_refused_in_one_sentence(line):
    placed = verify(_expected_of(2, "block"), "jobid: fX\n" + line, None)
    assert placed["verdict"] == "not verifiable"
    assert "cannot be read" in placed["reasons"][0] and "line 2" in placed["reasons"][0]


def test_the_instance_resources_come_from_its_R():
    r = json.dumps({"version": 1, "execution": {
        "R_lite": [{"rank": "0-1", "children": {"core": "0-1"}}, {"rank": "2", "children": {"core": "0"}}],
        "starttime": 1.0, "expiration": 1795999999.0, "nodelist": ["flux[0-1]", "vm"]}})
    assert resources(r) == (["flux0", "flux1", "vm"], 1, 1795999999.0)
    same_host = '{"execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-1"}}],' \
                ' "expiration": 0.0, "nodelist": ["vm,vm"]}}'
    assert resources(same_host) == (["vm", "vm"], 2, None)
    for damaged in ("", "{", "[1]", '{"execution": 5}', '{"execution": {"R_lite": "x"}}'):
        assert resources(damaged)[0] == []
    assert step_provenance("jobid: ƒ4Ai41MH\n0.1s: flux-shell[1]: cpu-affinity: task 1: cpus: 0\n"
                           ) == {"step_id": "f4Ai41MH", "shells": 1}


def _request(shards: int = 1, repeat=None) -> JobRequest:
    return JobRequest(nodes=2, tasks_per_node=2, runs=8, points=4, shards=shards, repeat=repeat)


def test_a_campaign_job_is_a_flux_batch_script(tmp_path):
    campaign = Campaign(tmp_path / "flux-local" / "c")
    script = flux_jobs.batch_script(_request(), ["m.yaml"], JobOptions(time="00:20:00",
                                    partition="pdebug", account="bank1"), campaign, tmp_path)
    lines = script.splitlines()
    assert lines[:5] == ["#!/bin/bash", "#FLUX: --job-name=cs-c-N2", "#FLUX: -N 2",
                         "#FLUX: --exclusive",
                         f"#FLUX: --output={campaign.root.resolve()}/jobs/{{{{name}}}}-{{{{id}}}}.out"]
    assert {"#FLUX: -t 1200s", "#FLUX: --queue=pdebug", "#FLUX: --bank=bank1"} <= set(lines)
    assert lines[-1].endswith("-m commstack run m.yaml --nodes 2")
    array = flux_jobs.batch_script(_request(shards=3), ["m.yaml"], JobOptions(), campaign, tmp_path)
    assert "#FLUX: --cc=0-2" in array and array.rstrip().endswith('--shard "${FLUX_JOB_CC}/3"')
    with pytest.raises(SubmitError, match="Flux has no QOS"):
        flux_jobs.batch_script(_request(), [], JobOptions(qos="high"), campaign, tmp_path)


@pytest.mark.parametrize("limit, fsd", [("20", "1200s"), ("20:30", "1230s"), ("00:20:00", "1200s"),
                                        ("1-02", "93600s"), ("1-02:03:04", "93784s"), ("2h", "2h")])
def test_time_limits_become_flux_durations(limit, fsd):
    assert flux_jobs.duration(limit) == fsd


def test_copies_of_one_submission_fold_into_one_state():
    found = {"fA": ("INACTIVE", "COMPLETED"), "fB": ("RUN", ""), "fC": ("INACTIVE", "CANCELED")}
    assert flux_jobs._fold("fA,fB", found) == ("RUN", "")
    assert flux_jobs._fold("fC,fA", found) == ("INACTIVE", "CANCELED")
    assert flux_jobs._fold("fZ", found) is None


# --- on a local Flux instance ----------------------------------------------------------------

@pytest.fixture(scope="module")
def flux_env() -> Dict[str, str]:
    """The environment of a command run in a local instance: Flux on PATH."""
    exe = flux_executable()
    if exe is None:
        pytest.skip(NO_FLUX)
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("skipped: the test instance's brokers need their own host names "
                    "(scripts/flux_broker_host.sh: unshare --uts, as root)")
    return {**os.environ, "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ['PATH']}"}


def in_instance(env: Dict[str, str], script: str, cwd: Path, timeout: float = 1500
                ) -> subprocess.CompletedProcess:
    """``script`` (bash) as the initial program of a three-broker instance."""
    return subprocess.run(["flux", "start", "--test-size=3", f"--wrap={BROKER_HOST}", "bash",
                           "-euo", "pipefail", "-c", script], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.mpi
def test_quick_runs_through_run_matrix_inside_flux_alloc(flux_env, local_imb_bins, tmp_path):
    env = dict(flux_env)
    if "openmpi" in local_imb_bins:
        env["COMMSTACK_IMB_OPENMPI_BIN"] = str(local_imb_bins["openmpi"])
    out = in_instance(env, f"flux alloc -N1 {REPO}/scripts/run_matrix.sh "
                      f"{REPO}/matrices/local/quick.yaml --machine flux-local --out results",
                      tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    done = records(tmp_path / "results" / "flux-local" / "quick")
    stacks = {"impi", "ompi"} if "openmpi" in local_imb_bins else {"impi"}
    assert len(done) == 6 * 4 * len(stacks) and {r["stack"] for r in done} == stacks
    assert all(r["status"] == "ok" for r in done), [r["status"] for r in done]
    for rec in done:
        assert rec["argv"][:3] == ["flux", "run", "-v"]
        step, placement = rec["slurm"], rec["placement"]  # the record's step (historical key)
        assert step["step_id"].startswith("f") and step["nodes"] == [step["allocation_nodes"][0]]
        assert rec["oversubscribed"] == (rec["params"]["ranks_per_node"] == 4)
        assert placement["verdict"] in ("verified", "not verifiable"), placement["summary"]
        assert "every rank is bound to part of its node" in placement["checked"]
        assert placement["source"] in ("Intel MPI pin table (I_MPI_DEBUG=4)",
                                       "Flux job shell cpu-affinity=verbose")


@pytest.mark.mpi
def test_two_nodes_block_and_cyclic_over_flux_brokers(flux_env, local_imb_bins, tmp_path):
    stacks = "".join(f'  {f}: {{flavour: {f}, bin: "{b}"}}\n' for f, b in local_imb_bins.items())
    matrix = tmp_path / "matrices" / "flux-local" / "two.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text("stacks:\n" + stacks + dedent(f"""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 120
        parameters: {{benchmarks: PingPong, msglog: "0:4", iter: 20, nodes: 2, ranks_per_node: 1}}
        product: {{stack: [{", ".join(local_imb_bins)}], mapping: [block, cyclic]}}
        """))
    if "intelmpi" in local_imb_bins:
        matrix.write_text(matrix.read_text().replace(
            f'bin: "{local_imb_bins["intelmpi"]}"', 'prefix: "${I_MPI_ROOT}"'))
    out = in_instance(flux_env, f"flux alloc -N2 {REPO}/scripts/run_matrix.sh {matrix} "
                      "--out results", tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    done = records(tmp_path / "results" / "flux-local" / "two")
    assert len(done) == 2 * len(local_imb_bins) and all(r["status"] == "ok" for r in done), \
        [(r["stack"], r["status"], r["placement"]["summary"]) for r in done]
    for rec in done:
        placement = rec["placement"]
        assert sorted(rec["slurm"]["nodes"]) == ["flux0", "flux1"]
        assert f"ranks {rec['params']['mapping']} over nodes" in placement["checked"], placement
        hosts = {r["host"] or r["node"] for r in placement["ranks"]}
        assert len(hosts) == 2, placement["ranks"]


def _submitted(root: Path) -> List[dict]:
    return [json.loads(line) for line in (root / "jobs" / "submitted.jsonl").read_text().splitlines()]


@pytest.mark.mpi
def test_submit_cancel_resume_loses_nothing(flux_env, impi_root, tmp_path):
    matrix = tmp_path / "matrices" / "flux-local" / "sub.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(dedent("""
        benchmark: imb-mpi1
        repeats: 4
        timeout: 120
        stacks:
          impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
        parameters: {stack: impi, benchmarks: PingPong, msglog: "0:4", iter: 20, ranks_per_node: 1}
        product: {nodes: [1, 2], mapping: [block, cyclic]}
        """))
    root = tmp_path / "results" / "flux-local" / "sub"
    commstack = f"{REPO}/.venv/bin/commstack" if (REPO / ".venv" / "bin" / "commstack").exists() \
        else "commstack"
    out = in_instance(flux_env, dedent(f"""
        {commstack} submit {matrix} --out results
        first=$(head -1 {root}/jobs/submitted.jsonl \\
                | python3 -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
        for _ in $(seq 600); do   # cancel it while it runs: once its first run is recorded
            ls {root}/points/*/rep*.try*/record.json >/dev/null 2>&1 && break; sleep 0.1
        done
        {commstack} cancel {root} --job "$first"
        flux queue drain
        {commstack} status {root} --matrix {matrix}
        {commstack} submit {matrix} --out results --resume
        flux queue drain
        {commstack} status {root}
        """), tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    jobs = _submitted(root)
    assert [j["scheduler"] for j in jobs] == ["flux"] * len(jobs) and len(jobs) == 3
    assert [j["nodes"] for j in jobs] == [1, 2, 1]  # the cancelled job's node count again
    assert f"flux job {jobs[0]['job_id']}: RUN -> cancelled" in out.stdout
    assert f"{root}: 1 job(s) cancelled" in out.stdout
    assert f"flux job {jobs[0]['job_id']}: nodes=1 runs=8 CANCELED" in out.stdout
    assert f"flux job {jobs[2]['job_id']}: nodes=1" in out.stdout.splitlines()[-1]
    latest = {}
    for rec in sorted(records(root), key=lambda r: (r["start"], r["attempt"])):
        latest[(rec["point_id"], rec["repeat"])] = rec["status"]
    assert len(latest) == 16 and set(latest.values()) == {"ok"}, latest
    # what the cancelled job recorded stays: no attempt folder was removed or written twice
    attempts = sorted(root.glob("points/*/rep*.try*"))
    assert len(attempts) >= 16 and len({a.name for a in attempts if a.name.endswith("try1")}) >= 1
    assert all((a / "record.json").is_file() or (a / "stderr.txt").is_file() for a in attempts)
    assert out.stdout.strip().splitlines()[-len(jobs) - 1].startswith(f"{root}: 16 done")


@pytest.mark.mpi
@pytest.mark.spack
def test_a_betzy_matrix_rehearses_on_the_local_flux_instance(flux_env, tmp_path):
    views = REPO / "environments" / "local" / "views"
    if not (views / "ompi-ghex-ucx" / "bin" / "benchmark_ghex_comm_ucx").exists():
        pytest.skip("skipped: environments/local is not installed here (spack -e "
                    "environments/local install)")
    commstack = f"{REPO}/.venv/bin/commstack" if (REPO / ".venv" / "bin" / "commstack").exists() \
        else "commstack"
    out = in_instance(flux_env, f"{commstack} rehearse {REPO}/matrices/betzy/allcores.yaml "
                      "--on flux-local --shapes --out results", tmp_path, timeout=3000)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    root = tmp_path / "results" / "flux-local" / "rehearse-betzy-allcores"
    latest = {}
    for rec in sorted(records(root), key=lambda r: (r["start"], r["attempt"])):
        latest[rec["point_id"]] = rec
    assert latest and all(r["status"] == "ok" for r in latest.values())
    assert all(r["argv"][:2] == ["flux", "run"] for r in latest.values())
    report = (root / "report" / "report.md").read_text()
    assert "> **Rehearsal, not a measurement of betzy.**" in report
    assert "on `flux-local`" in report and "## Halo exchange tables (Betzy layout)" in report


def test_cancel_names_a_job_the_campaign_never_submitted(tmp_path):
    from tests.sweeps import commstack

    root = tmp_path / "results" / "flux-local" / "c"
    Campaign(root).ensure({"campaign": "c", "machine": "flux-local", "benchmark": "imb-mpi1"})
    (root / "jobs").mkdir()
    (root / "jobs" / "submitted.jsonl").write_text(json.dumps(
        {"job_id": "fA1", "scheduler": "flux", "nodes": 1, "runs": 2, "array": 1}) + "\n")
    out = commstack("cancel", str(root), "--job", "fNOPE")
    assert out.returncode == 2 and out.stdout == ""
    assert f"{root}: no submitted job fNOPE (jobs/submitted.jsonl" in out.stderr


@pytest.mark.mpi
@pytest.mark.spack
def test_gasnet_node_local_conduit_is_one_task_on_one_node(flux_env, tmp_path):
    """GASNet-EX smp-conduit: one task on a whole node runs the conduit's own spawner; a point of
    two nodes on it is refused before anything runs (as under Slurm, tests/test_slurm.py)."""
    from tests import spack_support

    reason = spack_support.gasnet_skip_reason()
    if reason:
        pytest.skip(reason)
    gex = spack_support.install_gasnet(tmp_path / "spack")
    matrix = tmp_path / "matrices" / "flux-local" / "gasnet.yaml"
    matrix.parent.mkdir(parents=True)
    body = dedent(f"""
        benchmark: gasnet-testsmall
        repeats: 2
        timeout: 120
        stacks:
          gex-smp: {{flavour: gasnet, conduit: smp, bin: "{gex}"}}
        parameters: {{stack: gex-smp, iters: 200, maxsz: 64, sections: A, ranks_per_node: 2,
                     nodes: NODES}}
        """)
    matrix.write_text(body.replace("NODES", "1"))
    two = matrix.with_name("gasnet2.yaml")
    two.write_text(body.replace("NODES", "2"))
    out = in_instance(flux_env, f"flux alloc -N2 {REPO}/scripts/run_matrix.sh {matrix} --out results"
                      f" && ! flux alloc -N2 {REPO}/scripts/run_matrix.sh {two} --out results",
                      tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "conduit runs on one node; nodes=2 needs a network conduit" in out.stderr
    done = records(tmp_path / "results" / "flux-local" / "gasnet")
    assert len(done) == 2 and {r["status"] for r in done} == {"ok"}
    for rec in done:
        assert rec["argv"][:8] == ["flux", "run", "-v", "-N", "1", "--tasks-per-node=1", "-o",
                                   "cpu-affinity=off"]
        assert rec["slurm"]["step_id"] and len(rec["slurm"]["nodes"]) == 1
        assert {row["benchmark"] for row in rec["parsed"]} == {"PutBlocking", "GetBlocking"}
    assert not list((tmp_path / "results" / "flux-local" / "gasnet2").glob("points/*/rep*/record.json"))
