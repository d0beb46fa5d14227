"""Malformed matrices are rejected before any launch, with the file and key named."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix
from commstack.matrix.model import MatrixError

GOOD_STACKS = """
stacks:
  impi: {flavour: intelmpi}
  ompi: {flavour: openmpi, launcher: mpirun.openmpi}
"""


def rejected(write_matrix, text: str) -> str:
    path = write_matrix(text)
    with pytest.raises(MatrixError) as info:
        expand(load_matrix(path))
    message = str(info.value)
    assert str(path) in message
    return message


def test_unknown_top_level_key(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nrepeat: 3\n" + GOOD_STACKS)
    assert "unknown key 'repeat'" in msg and "repeats" in msg


def test_wrong_type(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nrepeats: five\n" + GOOD_STACKS)
    assert "repeats" in msg and "expected integer" in msg


def test_empty_axis(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nproduct:\n  UCX_TLS: []\n" + GOOD_STACKS)
    assert "product.UCX_TLS" in msg and "empty list" in msg


def test_unknown_flavour(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nstacks:\n  x: {flavour: mvapich}\n")
    assert "stacks.x.flavour" in msg and "mvapich" in msg and "openmpi" in msg


def test_unknown_benchmark(write_matrix):
    msg = rejected(write_matrix, "benchmark: hpcg\n" + GOOD_STACKS)
    assert "benchmark" in msg and "imb-mpi1" in msg


def test_unknown_parameter(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nproduct:\n  msglogg: ['0:4']\n"
                   + GOOD_STACKS)
    assert "product.msglogg" in msg and "unknown parameter" in msg and "msglog" in msg


def test_axis_the_flavour_cannot_honour(write_matrix):
    msg = rejected(write_matrix, dedent("""
        benchmark: imb-mpi1
        product:
          stack: [impi, ompi]
          mca.coll_hcoll_enable: [0, 1]
        """) + GOOD_STACKS)
    assert "mca.coll_hcoll_enable" in msg and "'impi'" in msg and "intelmpi" in msg


def test_intel_variable_on_open_mpi(write_matrix):
    msg = rejected(write_matrix, dedent("""
        benchmark: imb-mpi1
        parameters: {stack: ompi, I_MPI_FABRICS: shm}
        """) + GOOD_STACKS)
    assert "I_MPI_FABRICS" in msg and "openmpi" in msg


def test_excluding_the_unhonoured_points_makes_it_valid(write_matrix):
    path = write_matrix(dedent("""
        benchmark: imb-mpi1
        product:
          stack: [impi, ompi]
          mca.coll_hcoll_enable: [0, 1]
        exclude:
          - {stack: impi}
        """) + GOOD_STACKS)
    points = expand(load_matrix(path))
    assert {p.get("stack") for p in points} == {"ompi"}
    assert len(points) == 2


def test_zip_lengths_must_match(write_matrix):
    msg = rejected(write_matrix, dedent("""
        benchmark: imb-mpi1
        parameters: {stack: ompi}
        zip:
          - UCX_TLS: [sm, tcp]
            UCX_RNDV_THRESH: [8kb]
        """) + GOOD_STACKS)
    assert "zip[0]" in msg and "equal lengths" in msg


def test_parameter_given_twice(write_matrix):
    msg = rejected(write_matrix, dedent("""
        benchmark: imb-mpi1
        parameters: {stack: ompi, UCX_TLS: sm}
        product: {UCX_TLS: [sm, tcp]}
        """) + GOOD_STACKS)
    assert "product.UCX_TLS" in msg and "already given in parameters.UCX_TLS" in msg


def test_unknown_stack_value(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nproduct: {stack: [mvapich2]}\n"
                   + GOOD_STACKS)
    assert "product.stack" in msg and "mvapich2" in msg


def test_bad_mapping_and_ranks(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nparameters: {stack: ompi, mapping: "
                   "scatter}\n" + GOOD_STACKS)
    assert "parameters.mapping" in msg and "block or cyclic" in msg
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nparameters: {stack: ompi, "
                   "ranks_per_node: 0}\n" + GOOD_STACKS)
    assert "ranks_per_node" in msg and "positive integer" in msg


def test_bad_cartex_triple(write_matrix):
    msg = rejected(write_matrix, "benchmark: cartex\nparameters: {stack: ompi, node: '2 2'}\n"
                   + GOOD_STACKS)
    assert "parameters.node" in msg and "three integers" in msg


def test_exclude_names_unknown_parameter(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nparameters: {stack: ompi}\n"
                   "exclude: [{UCX_TLS: sm}]\n" + GOOD_STACKS)
    assert "exclude[0].UCX_TLS" in msg


def test_several_stacks_need_a_choice(write_matrix):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\n" + GOOD_STACKS)
    assert "stack" in msg and "several stacks" in msg


def test_not_yaml_and_not_a_mapping(write_matrix):
    assert "not valid YAML" in rejected(write_matrix, "benchmark: [imb\n")
    assert "mapping at the top level" in rejected(write_matrix, "- a\n- b\n")


def _environment(tmp_path, views: str):
    env = tmp_path / "environments" / "site"
    env.mkdir(parents=True)
    (env / "spack.yaml").write_text(dedent(views))
    return env


def test_stack_from_a_named_spack_view(write_matrix, tmp_path):
    from commstack.launch.stack import StackError, resolve

    env = _environment(tmp_path, """
        spack:
          specs: [intel-mpi-benchmarks ^openmpi]
          view:
            openmpi-ucx: {root: views/openmpi-ucx, select: ["^openmpi"]}
        """)
    path = write_matrix("""
        benchmark: imb-mpi1
        stacks:
          ompi: {flavour: openmpi, launcher: /bin/true, spack: {env: site, view: openmpi-ucx}}
        """)
    stack = load_matrix(path).stacks["ompi"]
    assert stack.view == str(env / "views" / "openmpi-ucx")
    with pytest.raises(StackError, match="not installed .* run `spack -e .*site install`"):
        resolve(stack)
    (env / "views" / "openmpi-ucx" / "bin").mkdir(parents=True)
    assert resolve(load_matrix(path).stacks["ompi"]).bin_dirs == [
        str(env / "views" / "openmpi-ucx" / "bin")]


def test_unknown_spack_view_or_environment(write_matrix, tmp_path):
    _environment(tmp_path, "spack:\n  view:\n    a: {root: views/a}\n")
    msg = rejected(write_matrix, """
        benchmark: imb-mpi1
        stacks:
          x: {flavour: openmpi, spack: {env: site, view: b}}
        """)
    assert "stacks.x.spack.view" in msg and "'b' is not a view" in msg and "(a)" in msg
    msg = rejected(write_matrix, """
        benchmark: imb-mpi1
        stacks:
          x: {flavour: openmpi, spack: {env: nosuch, view: a}}
        """)
    assert "stacks.x.spack.env" in msg and "'nosuch' not found" in msg


def test_gasnet_stack_needs_a_conduit_and_only_gasnet_has_one(write_matrix):
    msg = rejected(write_matrix, "benchmark: gasnet-testlarge\nstacks:\n  gex: {flavour: gasnet}\n")
    assert "stacks.gex.conduit" in msg and "smp, udp" in msg
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nstacks:\n"
                   "  ompi: {flavour: openmpi, conduit: ibv}\n")
    assert "stacks.ompi.conduit" in msg and "only gasnet stacks" in msg
    msg = rejected(write_matrix, "benchmark: gasnet-testlarge\nstacks:\n"
                   "  gex: {flavour: gasnet, conduit: aries}\n")
    assert "stacks.gex.conduit" in msg and "aries" in msg


def test_gasnet_variables_only_on_gasnet_stacks(write_matrix):
    msg = rejected(write_matrix, dedent("""
        benchmark: gasnet-testlarge
        parameters: {iters: 10, maxsz: 4096, sections: B}
        product:
          stack: [gex, ompi]
          GASNET_SUPERNODE_MAXSIZE: [1]
        stacks:
          gex: {flavour: gasnet, conduit: udp}
          ompi: {flavour: openmpi}
        """))
    assert "GASNET_SUPERNODE_MAXSIZE" in msg and "'ompi'" in msg


def test_gasnet_options_render_after_flags(write_matrix):
    path = write_matrix(dedent("""
        benchmark: gasnet-testlarge
        parameters: {sections: B, maxsz: 4194304, iters: 10000, mb_units: true, in_segment: true}
        stacks:
          gex: {flavour: gasnet, conduit: ofi}
        """))
    (point,) = expand(load_matrix(path))
    from commstack.benchmarks.registry import get
    from commstack.launch.command import benchmark_params

    bench = get("gasnet-testlarge")
    # The paper's appendix: testlarge -m -in 10000 4194304 B
    assert bench.argv(benchmark_params(point, bench)) == [
        "testlarge", "-m", "-in", "10000", "4194304", "B"]


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[1] / "matrices")
                                        .rglob("*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_matrix_is_valid(path):
    points = expand(load_matrix(path))
    assert points and all(p.get("stack") for p in points)


BEYOND_ANY_MACHINE = [
    ("parameters:\n  nodes: 99999999999999999999", "parameters.nodes",
     "positive integer of at most 1048576"),
    ("product:\n  ranks_per_node: [2, 16777217]", "product.ranks_per_node",
     "positive integer of at most 16777216"),
    ("parameters:\n  cpus_per_task: 70000", "parameters.cpus_per_task", "at most 65536"),
    ("parameters:\n  msglog: '0:99999999'", "parameters.msglog",
     "whole numbers of at most 62 (read 99999999)"),
    ("parameters:\n  npmin: 99999999999999999999", "parameters.npmin", "at most 16777216"),
    ("parameters:\n  iter: 99999999999999999999999", "parameters.iter",
     "at most 9223372036854775807"),
    ("repeats: 99999999999999999999", "repeats", "greater than the maximum of 1000000"),
    ("repeats: {min: 6, max: 10000001, ci: 0.05}", "repeats", "greater than the maximum of 1000000"),
]


@pytest.mark.parametrize("text, place, expected", BEYOND_ANY_MACHINE,
                         ids=[p for _, p, _ in BEYOND_ANY_MACHINE])
def test_values_no_machine_has_are_refused_before_anything_runs(write_matrix, text, place, expected):
    msg = rejected(write_matrix, "benchmark: imb-mpi1\nstacks:\n  impi: {flavour: intelmpi}\n"
                   + text + "\n")
    assert place in msg and expected in msg, msg
    assert len(msg) < 300


def test_values_within_the_bounds_are_taken(write_matrix):
    path = write_matrix("benchmark: imb-mpi1\nstacks:\n  impi: {flavour: intelmpi}\n"
                        "repeats: 1000000\nparameters:\n  msglog: '0:62'\n  npmin: 16777216\n"
                        "  ranks_per_node: 16777216\n")
    assert len(expand(load_matrix(path))) == 1
