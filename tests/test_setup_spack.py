"""scripts/setup_spack.sh: the one set-up command of the Spack side.

The fast tests check that the set-up script and CI (.ci/run -> scripts/test.sh) take their Debian
packages from the one list, and that this list provides every external site-configs/local
declares. The Spack test runs the script for real, twice, on a fresh mirror directory: the first
run builds the mirror from the source clones, the second says there is nothing to do.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Set

import pytest
import yaml

from commstack.mirror import read_sources
from tests import spack_support

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "setup_spack.sh"
PACKAGE_LIST = REPO / "scripts" / "system-packages.txt"


def package_rows() -> List[List[str]]:
    """The rows of scripts/system-packages.txt: package, group, externals, what."""
    rows = []
    for line in PACKAGE_LIST.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(line.split(None, 3))
    return rows


def listed(*groups: str) -> List[str]:
    out = subprocess.run(["bash", str(REPO / "scripts" / "system_packages.sh"), "--list",
                          *groups], capture_output=True, text=True, check=True).stdout
    return out.split()


def test_one_package_list_for_setup_and_ci() -> None:
    # .ci/run -> scripts/test.sh -> system_packages.sh (every group); setup_spack.sh -> the same
    # script with the groups test and spack; system_packages.sh reads system-packages.txt.
    assert re.search(r"^bash scripts/test\.sh", (REPO / ".ci" / "run").read_text(), re.M)
    assert re.search(r"^bash scripts/system_packages\.sh$", (REPO / "scripts" / "test.sh")
                     .read_text(), re.M)
    calls = re.findall(r'system_packages\.sh"? (?:--check )?(.*?)\)?$', SCRIPT.read_text(), re.M)
    assert calls and set(calls) == {"test spack"}, calls
    rows = package_rows()
    assert listed() == [r[0] for r in rows]
    assert listed("test", "spack") == [r[0] for r in rows if r[1] in ("test", "spack")]


def test_package_list_provides_every_local_external() -> None:
    """Every external of site-configs/local/packages.yaml comes from a package of the groups the
    set-up script installs, and the list names no external that is not declared."""
    packages = yaml.safe_load((REPO / "site-configs" / "local" / "packages.yaml").read_text())
    declared = {name.rstrip(":") for name, cfg in packages["packages"].items()  # gcc:: -> gcc
                if isinstance(cfg, dict) and cfg.get("externals")}
    provided: Dict[str, Set[str]] = {}
    for _package, group, externals, _what in package_rows():
        for name in externals.split(","):
            if name != "-":
                provided.setdefault(group, set()).add(name)
    installed_by_setup = provided.get("test", set()) | provided.get("spack", set())
    assert declared - installed_by_setup == set(), "externals no set-up package provides"
    every = set().union(*provided.values())
    assert every - declared == set(), "system-packages.txt names externals packages.yaml lacks"


def _where(env: Dict[str, str]) -> Dict[str, str]:
    proc = subprocess.run(["bash", str(SCRIPT), "--where"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(": ", 1) for line in proc.stdout.splitlines())


@pytest.mark.parametrize("how", ["PATH", "COMMSTACK_SPACK"])
def test_spack_through_a_symlink_has_the_clone_as_root(tmp_path: Path, how: str) -> None:
    """`spack` on PATH as /usr/local/bin/spack -> <clone>/bin/spack (as sites install it): the
    clone is Spack's root and spack-packages sits beside the clone, not in /usr."""
    clone = tmp_path / "opt" / "spack"
    (clone / "bin").mkdir(parents=True)
    executable = clone / "bin" / "spack"
    executable.write_text("#!/bin/sh\nexit 0\n")
    executable.chmod(0o755)
    usr_local_bin = tmp_path / "usr" / "local" / "bin"
    usr_local_bin.mkdir(parents=True)
    (usr_local_bin / "spack").symlink_to(executable)
    env = {k: v for k, v in os.environ.items() if k != "COMMSTACK_SPACK"}
    if how == "PATH":
        env["PATH"] = f"{usr_local_bin}:{env['PATH']}"
    else:
        env["COMMSTACK_SPACK"] = str(usr_local_bin / "spack")
    where = _where(env)
    assert where == {"spack": str(executable), "spack root": str(clone),
                     "spack-packages": str(tmp_path / "opt" / "spack-packages")}


def test_spack_without_link_keeps_its_path(tmp_path: Path) -> None:
    env = {**os.environ, "COMMSTACK_SPACK": str(tmp_path / "clone" / "bin" / "spack")}
    assert _where(env)["spack root"] == str(tmp_path / "clone")


def _clones_missing(clones: Path) -> List[str]:
    return sorted({s.clone_name for s in read_sources(REPO / "packages" / "mirror-sources.tsv")
                   if not (clones / s.clone_name).is_dir()})


@pytest.mark.spack
@pytest.mark.slow
def test_setup_twice_second_run_does_nothing(tmp_path: Path) -> None:
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    missing = subprocess.run(["bash", str(REPO / "scripts" / "system_packages.sh"), "--check",
                              "test", "spack"], capture_output=True, text=True).stdout.split()
    if missing:
        pytest.skip(f"skipped: Debian packages missing: {' '.join(missing)}")
    clones = Path.home() / ".cache" / "commstack" / "src"
    if _clones_missing(clones):
        pytest.skip(f"skipped: no source clones {', '.join(_clones_missing(clones))} in {clones}")
    envdir = REPO / "environments" / "local"
    status = spack_support.run_spack(["-e", str(envdir), "find", "-c", "-I", "--format",
                                      "{name}"], timeout=300)
    if any(not line.startswith(("[+]", "[e]")) for line in status.splitlines() if line.strip()):
        pytest.skip("skipped: environments/local is not installed here (scripts/setup_spack.sh "
                    "builds it, 30-60 min)")

    mirror = tmp_path / "mirror"
    env = {**os.environ, "COMMSTACK_SPACK_MIRROR": str(mirror), "COMMSTACK_NO_APT": "1"}
    env.pop("SPACK_ENV", None)

    def setup() -> str:
        proc = subprocess.run(["bash", str(SCRIPT), "--sources-dir", str(clones)], env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    first = setup()
    assert re.search(rf"^setup_spack: mirror: added .* to {re.escape(str(mirror))} ", first, re.M)
    assert "nothing to do" not in first
    for src in read_sources(REPO / "packages" / "mirror-sources.tsv"):
        f = mirror / "_source-cache" / "archive" / src.sha256[:2] / f"{src.sha256}.{src.ext}"
        assert hashlib.sha256(f.read_bytes()).hexdigest() == src.sha256, f
    second = setup()
    stages = re.findall(r"^setup_spack: (\w+): .* \(\d+ s\)$", second, re.M)
    assert stages == ["packages", "venv", "spack", "mirror", "install"], second
    assert second.splitlines()[-1].startswith("setup_spack: nothing to do:"), second
