"""Must show: `commstack plan` reviews any machine's campaign without its stacks installed.
Another machine's matrix (its machine.yaml names the machine; this host is not it) is planned as
srun steps of a job there, with what is missing here marked UNRESOLVED; `--review` does the same
for any matrix; `--json` gives one object per point; a tuning plan is reviewed step by step. On
this machine, without --review, a missing stack stays an error (test_cli)."""

from __future__ import annotations

import json
import os
from textwrap import dedent

from commstack.tune.plan import load_plan
from tests.conftest import REPO
from tests.sweeps import commstack

# Outside any allocation, and not on Perlmutter.
NOT_THERE = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "NERSC_HOST"}
PINGPONG = REPO / "matrices" / "perlmutter" / "gasnet-latency-pingpong.yaml"


def _json_lines(text: str) -> list:
    return [json.loads(line) for line in text.splitlines()]


def test_another_machines_matrix_is_reviewed_as_srun_steps(tmp_path):
    out = commstack("plan", str(PINGPONG), "--out", str(tmp_path / "r"),
                    env=NOT_THERE)
    assert out.returncode == 0, out.stderr
    assert "# review (not perlmutter" in out.stdout
    command = next(line for line in out.stdout.splitlines() if line.startswith("    env "))
    assert " srun -v --mpi=cray_shasta -N 2 --ntasks-per-node=1 -n 2 --cpus-per-task=8 " in command
    assert command.endswith("views/cray-mpich/bin/IMB-MPI1 PingPong -msglog 2:12 -iter 1000000 "
                            "-time 600 -iter_policy off")
    unresolved = [line for line in out.stdout.splitlines() if "UNRESOLVED" in line]
    if not (REPO / "environments" / "perlmutter" / "views" / "cray-mpich").exists():
        assert any("view 'cray-mpich' of environment 'perlmutter' is not installed" in u
                   for u in unresolved)
        assert any("benchmark executable 'IMB-MPI1' not found" in u for u in unresolved)
    assert not (tmp_path / "r").exists()


def test_json_gives_one_object_per_point(tmp_path):
    out = commstack("plan", str(REPO / "matrices" / "perlmutter" / "gasnet-latency-rma.yaml"),
                    "--json", env=NOT_THERE)
    assert out.returncode == 0, out.stderr
    points = _json_lines(out.stdout)
    assert len(points) == 2 and len({p["point_id"] for p in points}) == 2
    for p in points:
        assert p["argv"][0] == "srun" and p["benchmark_argv"][0].endswith("/IMB-RMA")
        assert p["argv"][-len(p["benchmark_argv"]):] == p["benchmark_argv"]
        assert p["nodes"] == 2 and p["ranks_per_node"] == 1 and p["ranks"] == 2
        assert p["skipped"] is None and p["flavour"] == "cray-mpich"
        assert {"Unidir_put", "Unidir_get"} & set(p["benchmark_argv"])


def test_review_flag_on_this_machine_marks_a_missing_executable(tmp_path):
    matrix = tmp_path / "matrices" / "local" / "m.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(dedent(f"""
        benchmark: imb-mpi1
        stacks:
          a: {{flavour: openmpi, bin: {tmp_path}, launcher: /bin/true}}
        """))
    strict = commstack("plan", str(matrix))
    assert strict.returncode == 2 and "benchmark executable 'IMB-MPI1' not found" in strict.stderr
    review = commstack("plan", str(matrix), "--review", "--json")
    assert review.returncode == 0, review.stderr
    (point,) = _json_lines(review.stdout)
    assert point["benchmark_argv"][0] == str(tmp_path / "IMB-MPI1")
    assert len(point["unresolved"]) == 1 and "'IMB-MPI1' not found" in point["unresolved"][0]


def test_a_tuning_plan_is_reviewed_step_by_step():
    path = REPO / "plans" / "local" / "ompi-ucc-components.yaml"
    out = commstack("plan", str(path), "--review", "--json")
    assert out.returncode == 0, out.stderr
    objects = _json_lines(out.stdout)
    plan = load_plan(path)
    cases = plan.case_list()
    assert {json.dumps(o["case"], sort_keys=True) for o in objects} == {
        json.dumps(c, sort_keys=True) for c in cases}
    for case in cases:
        for step in plan.steps:
            mine = [o for o in objects if o["case"] == case and o["step"] == step.name]
            candidates = step.candidates()
            incumbent = {axis: plan.defaults[axis] for axis in step.axes}
            expected = candidates + ([incumbent] if incumbent not in candidates else [])
            assert sorted(json.dumps(o["candidate"], sort_keys=True) for o in mine) == sorted(
                json.dumps({a: c[a] for a in step.axes}, sort_keys=True) for c in expected)
