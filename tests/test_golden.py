"""Must show: every parser fixture and every committed campaign reads exactly as it did before
benchmarks became one module each and records got a type (snapshots: tests/golden/, made by
tests/golden/snapshot.py at commit 896b2ee)."""

from __future__ import annotations

import json

import pytest

from tests.golden.snapshot import (
    CAMPAIGNS,
    FIXTURES,
    HERE,
    canonical_csv,
    fixture_outputs,
    parsed_snapshot,
    tidy_tables,
)

OUTPUTS = list(fixture_outputs())


def test_every_fixture_has_a_snapshot():
    snapshots = {p.relative_to(HERE / "parsed").with_suffix("") for p in (HERE / "parsed").rglob("*.json")}
    fixtures = {p.relative_to(FIXTURES).with_suffix("") for _, p in OUTPUTS}
    assert fixtures - snapshots == set(), "new fixtures need a snapshot (tests/golden/snapshot.py)"
    assert snapshots - fixtures == set(), "a fixture with a snapshot is gone"


@pytest.mark.parametrize("family,path", OUTPUTS, ids=[str(p.relative_to(FIXTURES)) for _, p in OUTPUTS])
def test_fixture_parses_as_before(family, path):
    expected = json.loads((HERE / "parsed" / path.relative_to(FIXTURES).with_suffix(".json")).read_text())
    assert json.loads(json.dumps(parsed_snapshot(family, path))) == expected


@pytest.mark.parametrize("name", sorted(CAMPAIGNS))
def test_campaign_tables_read_as_before(name):
    records, summary = tidy_tables(CAMPAIGNS[name])
    folder = HERE / "tidy" / name
    assert canonical_csv(records) == canonical_csv((folder / "records.csv").read_text())
    assert canonical_csv(summary) == canonical_csv((folder / "summary.csv").read_text())
