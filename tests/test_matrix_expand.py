"""Product, zip and exclude semantics; stable point ids."""

from __future__ import annotations

from textwrap import dedent

from commstack.matrix.expand import expand
from commstack.matrix.load import load_matrix

STACKS = "stacks:\n  ompi: {flavour: openmpi}\n"


def test_product_crosses_and_zip_pairs(write_matrix):
    points = expand(load_matrix(write_matrix(dedent("""
        benchmark: imb-mpi1
        parameters: {msglog: "0:4"}
        product:
          ranks_per_node: [2, 4]
          mapping: [block, cyclic]
        zip:
          - UCX_TLS: [sm, tcp, "sm,tcp"]
            UCX_RNDV_THRESH: [8kb, 16kb, "intra:32kb,inter:128kb"]
        """) + STACKS)))
    assert len(points) == 2 * 2 * 3
    pairs = {(p.get("UCX_TLS"), p.get("UCX_RNDV_THRESH")) for p in points}
    assert pairs == {("sm", "8kb"), ("tcp", "16kb"), ("sm,tcp", "intra:32kb,inter:128kb")}
    assert all(p.get("msglog") == "0:4" and p.get("stack") == "ompi" for p in points)


def test_exclude_with_scalar_and_list(write_matrix):
    points = expand(load_matrix(write_matrix(dedent("""
        benchmark: imb-mpi1
        product:
          ranks_per_node: [2, 4, 8]
          mca.coll_hcoll_enable: [0, 1]
        exclude:
          - {ranks_per_node: [4, 8], mca.coll_hcoll_enable: 1}
        """) + STACKS)))
    combos = sorted((p.get("ranks_per_node"), p.get("mca.coll_hcoll_enable")) for p in points)
    assert combos == [(2, 0), (2, 1), (4, 0), (8, 0)]


def test_point_ids_are_stable_and_distinct(write_matrix):
    text = "benchmark: imb-mpi1\nproduct: {ranks_per_node: [2, 4]}\n" + STACKS
    first = [p.id for p in expand(load_matrix(write_matrix(text, "a")))]
    # Same points in another file and order: same ids.
    again = [p.id for p in expand(load_matrix(write_matrix(
        "benchmark: imb-mpi1\nproduct: {ranks_per_node: [4, 2]}\n" + STACKS, "b")))]
    assert sorted(first) == sorted(again) and len(set(first)) == 2


def test_everything_excluded_is_an_error(write_matrix):
    import pytest

    from commstack.matrix.model import MatrixError

    with pytest.raises(MatrixError, match="every point is excluded"):
        expand(load_matrix(write_matrix(
            "benchmark: imb-mpi1\nproduct: {ranks_per_node: [2]}\n"
            "exclude: [{ranks_per_node: 2}]\n" + STACKS)))
