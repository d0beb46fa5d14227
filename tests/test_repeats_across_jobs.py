"""Must show: repeats across jobs (the GASNet-EX paper's method: N jobs, each running every test
once). `commstack submit` of a matrix with `repeats_across: jobs` submits one job per repeat and
node count; every job runs every point of its node count once, starting at a different point;
the results merge into one campaign with nothing lost or duplicated, and the report says how the
repeats were taken. Plan-level checks need no cluster; the slurm-marked test runs on the real
3-node cluster (tests/cluster)."""

from __future__ import annotations

import re
from pathlib import Path
from textwrap import dedent

import pytest

from commstack.report.repeats import how_repeats_were_taken
from commstack.store.record import JobStep as SlurmStep
from commstack.store.record import Record
from commstack.sweep import rotated
from tests import slurm_cluster
from tests.sweeps import commstack, launcher_stand_ins, ok_counts, records, typed_records

MATRIX = """
    benchmark: imb-mpi1
    repeats: 3
    repeats_across: jobs
    timeout: 90
    stacks:
      STACK
    parameters: {benchmarks: PingPong, msglog: "0:4", ranks_per_node: 1EXTRA}
    product:
      nodes: [1, 2]
      iter: [10, 20]
    """


def _matrix(tmp_path: Path, stack: str, text: str = MATRIX) -> Path:
    path = tmp_path / "matrices" / "slurm-ci" / "across.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Stand-in launchers (plan-only tests) come with an executable that exists everywhere.
    extra = ', executable: "true"' if "flavour: mpich" in stack else ""
    path.write_text(dedent(text).replace("STACK", stack).replace("EXTRA", extra))
    return path


def _stand_in_stack(tmp_path: Path) -> str:
    return f"m: {{flavour: mpich, bin: {launcher_stand_ins(tmp_path / 'bin')}}}"


def test_submit_plans_one_job_per_repeat_and_node_count(tmp_path):
    matrix = _matrix(tmp_path, _stand_in_stack(tmp_path))
    out = commstack("submit", str(matrix), "--dry-run", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    heads = re.findall(r"^# nodes=(\d) repeat=(\d): (\d+) runs$", out.stdout, re.M)
    assert heads == [(n, r, "2") for n in "12" for r in "123"]
    scripts = re.split(r"^# nodes=", out.stdout, flags=re.M)[1:]
    for (nodes, repeat, _), script in zip(heads, scripts):
        assert f"#SBATCH --job-name=cs-across-N{nodes}-r{repeat}" in script
        assert f"--nodes {nodes} --repeat {repeat}" in script


def test_flag_takes_repeats_across_jobs_for_any_matrix(tmp_path):
    matrix = _matrix(tmp_path, _stand_in_stack(tmp_path),
                     MATRIX.replace("    repeats_across: jobs\n", ""))
    plain = commstack("submit", str(matrix), "--dry-run", cwd=tmp_path)
    assert re.findall(r"^# nodes=\d: \d+ runs$", plain.stdout, re.M) == [
        "# nodes=1: 6 runs", "# nodes=2: 6 runs"]
    across = commstack("submit", str(matrix), "--dry-run", "--repeats-across-jobs", cwd=tmp_path)
    assert len(re.findall(r"^# nodes=\d repeat=\d: 2 runs$", across.stdout, re.M)) == 6


def test_arrays_and_repeats_across_jobs_exclude_each_other(tmp_path):
    matrix = _matrix(tmp_path, _stand_in_stack(tmp_path))
    out = commstack("submit", str(matrix), "--dry-run", "--array", "2", cwd=tmp_path)
    assert out.returncode == 2 and "--array and repeats across jobs" in out.stderr


def test_a_repeat_outside_the_matrix_is_refused_before_anything_runs(tmp_path):
    matrix = _matrix(tmp_path, _stand_in_stack(tmp_path))
    out = commstack("run", str(matrix), "--repeat", "4", "--out", str(tmp_path / "results"),
                    "--local", cwd=tmp_path)
    assert out.returncode == 2 and "--repeat 4: the matrix has repeats 1 to 3" in out.stderr
    assert not (tmp_path / "results").exists()


def test_rotation_starts_each_repeat_elsewhere():
    assert rotated("abc", 0) == list("abc") and rotated("abc", 1) == list("bca")
    assert rotated("abc", 4) == list("bca") and rotated([], 2) == []


def _record(point: str, repeat: int, job: str = "", nodes=(), session: str = "s1") -> Record:
    return Record(campaign="c", machine="m", benchmark="imb-mpi1", point_id=point, repeat=repeat,
                  attempt=1, params={}, status="ok", session=session,
                  slurm=SlurmStep(job_id=job, nodes=list(nodes)) if job else None)


@pytest.mark.parametrize("records, expected", [
    ([_record("p", 1), _record("p", 2)], "up to 2 per point outside Slurm, in 1 session(s)"),
    ([_record("p", 1, "7", ["n1"]), _record("p", 2, "7", ["n1"])],
     "up to 2 per point within one Slurm job (7)"),
    ([_record("p", 1, "7", ["n1"]), _record("p", 2, "9", ["n2"]), _record("q", 1, "8", ["n1"]),
      _record("q", 2, "10", ["n1"])],
     "across jobs: each repeat of a point in its own Slurm job (4 job(s): 7, 8, 9, 10); "
     "node sets per point: 1–2"),
    ([_record("p", 1, "7", ["n1"]), _record("p", 2, "7", ["n1"]), _record("q", 1, "9", ["n2"])],
     "within jobs: all repeats of a point in one Slurm job (2 job(s): 7, 9)"),
    ([_record("p", 1, "7", ["n1"]), _record("p", 2, "7", ["n1"]), _record("q", 1, "9", ["n2"]),
      _record("q", 2, "11", ["n2"])],
     "mixed: some points' repeats share a Slurm job, others' do not (3 job(s): 7, 9, 11)"),
])
def test_the_report_says_how_repeats_were_taken(records, expected):
    assert how_repeats_were_taken(records).startswith(expected)


@pytest.mark.slurm
@pytest.mark.mpi
def test_repeats_across_jobs_on_the_cluster_merge_into_one_campaign(cluster, impi_root, tmp_path):
    matrix = _matrix(tmp_path, 'impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}')
    out = commstack("submit", str(matrix), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    jobs = re.findall(r"^nodes=(\d) repeat=(\d): 2 runs -> job (\d+)$", out.stdout, re.M)
    assert sorted((n, r) for n, r, _ in jobs) == [(n, r) for n in "12" for r in "123"]
    slurm_cluster.wait_for_jobs([j for _, _, j in jobs])
    root = tmp_path / "results" / "slurm-ci" / "across"
    counts = ok_counts(root)
    assert len(counts) == 4 * 3 and set(counts.values()) == {1}, counts  # none lost or doubled
    assert len(records(root)) == 12
    job_of = {(n, r): j for n, r, j in jobs}
    runs = typed_records(root)
    for rec in runs:  # each repeat ran in the job submitted for it
        assert rec.slurm.job_id == job_of[(str(rec.params["nodes"]), str(rec.repeat))]
    for nodes in (1, 2):  # each job starts at a different point of its node count
        firsts = {min((r for r in runs if r.nodes == nodes and r.repeat == k),
                      key=lambda r: r.start).point_id for k in (1, 2, 3)}
        assert len(firsts) == 2
    again = commstack("submit", str(matrix), "--resume", cwd=tmp_path)
    assert again.returncode == 0 and "nothing left to run" in again.stdout
    report = commstack("report", str(root), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (root / "report" / "report.md").read_text()
    line = next(x for x in text.splitlines() if x.startswith("- repeats taken: "))
    assert line.startswith("- repeats taken: across jobs: each repeat of a point in its own "
                           "Slurm job (6 job(s): "), line
    assert all(j in line for _, _, j in jobs)
