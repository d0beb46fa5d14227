"""commstack.sample_codes: the samples' codes number what pandas' factorize numbers, the same
way, for the whole and for any part."""

from __future__ import annotations

import random

import pytest

np = pytest.importorskip("numpy", reason="skipped: numpy not installed (the report extra)")
pd = pytest.importorskip("pandas", reason="skipped: pandas not installed (the report extra)")

from commstack.sample_codes import Coded, codes, objects, renumber  # noqa: E402

COLUMNS = {
    "point ids": lambda r: f"p{r.randrange(40)}",
    "row keys": lambda r: ("Allreduce", r.choice([0, 8, 1 << 20, None]), r.randrange(1, 4)),
    "metrics": lambda r: r.choice(["t_avg_us", "mbytes_per_s", "msg_per_s"]),
}


@pytest.mark.parametrize("name", COLUMNS)
def test_codes_and_renumbered_parts_are_factorizes(name):
    rng = random.Random(7)
    column = [COLUMNS[name](rng) for _ in range(3000)]
    found, distinct = codes(column)
    want, uniques = pd.factorize(objects(column))
    assert found.tolist() == want.tolist()
    assert distinct == list(uniques)
    part = np.asarray(sorted(rng.sample(range(len(column)), 700)))
    again, was = renumber(found[part])
    want, uniques = pd.factorize(objects([column[i] for i in part]))
    assert again.tolist() == want.tolist()
    assert [distinct[c] for c in was.tolist()] == list(uniques)


def test_a_part_keeps_every_column_aligned():
    coded = Coded.of(["a", "b", "a"], [("bytes",)] * 3, [(8,), (16,), (8,)],
                     ["t_avg_us"] * 3, [1.0, 2.0, 3.0], [False, True, False])
    part = coded.take(np.asarray([1, 2]))
    assert [part.point_names[c] for c in part.point] == ["b", "a"]
    assert [part.keys[c] for c in part.key] == [(16,), (8,)]
    assert part.value.tolist() == [2.0, 3.0] and part.over.tolist() == [True, False]
