"""What a flavour knows of itself and the results store asks it for: the MPI version its
version tool's saved output names, and its MPI's Spack package names (a stack's hash is that
spec's). Every flavour with a version tool or a Spack package has a row here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from commstack import flavours
from commstack.store import results
from tests.conftest import REPO

SESSION = REPO / "tests/fixtures/campaigns/local/schema1-local/sessions/20261124T065249Z-vm-9153"
MPICH = REPO / "tests/fixtures/versions/mpich-4.0.2-debian-bookworm.mpichversion.txt"

# flavour: (saved output, the version it names)
VERSIONS = {
    "intelmpi": (SESSION / "impi.version.txt", "2021.18.1 20260626"),
    "openmpi": (SESSION / "ompi.ompi_info.txt", "4.1.4"),
    "mpich": (MPICH, "4.0.2"),
}
SPACK = {
    "intelmpi": ("intel-oneapi-mpi", "intel-mpi"),
    "openmpi": ("openmpi",),
    "mpich": ("mpich",),
    "cray-mpich": ("cray-mpich",),
}


def test_every_flavour_with_facts_has_a_row():
    assert {f.name for f in flavours.FLAVOURS.values()
            if any(t.version for t in f.version_tools)} == set(VERSIONS)
    assert {f.name for f in flavours.FLAVOURS.values() if f.spack_packages} == set(SPACK)


@pytest.mark.parametrize("flavour", sorted(VERSIONS))
def test_the_store_reads_each_flavours_version(flavour, tmp_path):
    saved, version = VERSIONS[flavour]
    tool = next(t for t in flavours.get(flavour).version_tools if t.version)
    shutil.copy(saved, tmp_path / f"stack.{tool.file}")
    assert results._mpi_version(tmp_path, "stack", flavour) == version
    assert results._mpi_version(tmp_path, "other", flavour) is None  # nothing saved


@pytest.mark.parametrize("flavour", sorted(SPACK))
def test_the_store_finds_each_flavours_spack_hash(flavour):
    assert flavours.get(flavour).spack_packages == SPACK[flavour]
    for name in SPACK[flavour]:
        specs = [{"name": "ucx", "hash": "u" * 32}, {"name": name, "hash": "abc123"}]
        assert results._spack_hash(specs, flavour) == "abc123"
    assert results._spack_hash([{"name": "ucx", "hash": "u" * 32}], flavour) is None


def test_a_cray_mpich_records_spack_hash_is_found():
    """The flavour is named "cray-mpich"; a table keyed "cray_mpich" never found it."""
    specs = [{"name": "cray-mpich", "hash": "k7x2"}]
    assert results._spack_hash(specs, "cray-mpich") == "k7x2"


def test_an_unknown_flavour_reads_nothing(tmp_path: Path):
    assert results._spack_hash([{"name": "openmpi", "hash": "h"}], "nosuch") is None
    assert results._mpi_version(tmp_path, "stack", None) is None
