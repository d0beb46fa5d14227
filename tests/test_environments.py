"""Per-machine Spack environments (environments/<machine>) and site facts (site-configs/<machine>).

Without Spack: every machine.yaml validates against the machine schema and agrees with its
site's packages.yaml; every environment includes its site, uses this repository, and declares
named views rooted at views/<name> that its header comment documents; committed files hold no
paths of the machine they were made on.

With Spack (marker ``spack``): every environment concretizes, in a copy of the checkout's
relevant files (environments/<m>, site-configs/<m>, repo.yaml, packages/) so that the committed
spack.lock is never touched, and the result has the same roots as the committed spack.lock (else
the lock is stale: ``spack -e environments/<m> concretize --force`` and commit it). Each view
selects at least one benchmark and at most one spec per package (Spack refuses to merge two).
A solve takes 1-6 minutes on 2 cores, so the lock of an unchanged input (the environment, its
site configuration, the recipes in packages/, the Spack and builtin-repository commits) is cached
in ~/.cache/commstack/spack-locks and a rerun costs seconds.

Opt-in (``COMMSTACK_TEST_INSTALL_LOCAL=1``): install the local environment offline from the
source mirror and check its views' executables (minutes).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Set

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spack_support  # noqa: E402

from commstack.machine import load_machine_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MACHINES = ["bm-optimized3-36", "betzy", "perlmutter", "local"]
#: Packages a view exists for: the benchmarks (everything else in a view supports them).
BENCHMARKS = {"intel-mpi-benchmarks", "ghexbench", "gasnet-tests", "reprompi",
              "osu-micro-benchmarks"}
#: Files this test suite guards against machine-specific paths.
GUARDED = [
    *[REPO / "environments" / m for m in MACHINES],
    *[REPO / "site-configs" / m for m in MACHINES],
    REPO / ".github" / "workflows" / "environments.yml",
    REPO / "ci",
]


def _spack_yaml(machine: str) -> dict:
    return yaml.safe_load((REPO / "environments" / machine / "spack.yaml").read_text())["spack"]


def _header(machine: str) -> str:
    """The comment block of spack.yaml before `spack:` (documents the views)."""
    text = (REPO / "environments" / machine / "spack.yaml").read_text()
    return text.split("\nspack:", 1)[0]


# --- no Spack needed --------------------------------------------------------------------------


@pytest.mark.parametrize("machine", MACHINES)
def test_machine_file_validates_and_matches_site(machine: str) -> None:
    m = load_machine_file(REPO / "site-configs" / machine / "machine.yaml")
    assert m.name == machine
    assert m.facts.get("sources"), "machine facts need their sources"
    assert m.facts.get("verify", {}).get("checks"), "list what must be read on the machine"
    packages = yaml.safe_load((REPO / "site-configs" / machine / "packages.yaml").read_text())
    required = packages["packages"]["all"]["require"]
    assert f"target={m.node['spack_target']}" in required, (
        f"machine.yaml spack_target {m.node['spack_target']} but packages.yaml requires {required}"
    )
    if m.scheduler["kind"] == "slurm":
        assert m.launcher("openmpi") and m.launcher("openmpi")["command"] == "srun"
        for mapping in ("block", "cyclic"):
            assert m.placement(mapping).get("srun"), f"mapping.{mapping}.srun"


def test_every_site_config_has_valid_machine_facts() -> None:
    folders = sorted(p for p in (REPO / "site-configs").iterdir() if p.is_dir())
    assert {p.name for p in folders} >= set(MACHINES)
    for folder in folders:
        assert load_machine_file(folder / "machine.yaml").name == folder.name


@pytest.mark.parametrize("machine", MACHINES)
def test_environment_layout(machine: str) -> None:
    env = _spack_yaml(machine)
    assert env["include"] == [f"../../site-configs/{machine}"]
    assert env["repos"] == {"commstack": "../.."}, "this repository, relative to spack.yaml"
    assert env["concretizer"]["unify"] in (True, False, "when_possible")
    views = env["view"]
    assert isinstance(views, dict) and views, "named views, one per stack variant"
    header = _header(machine)
    for name, view in views.items():
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name), name
        assert view["root"] == f"views/{name}", f"view {name}: root must be views/{name}"
        assert view.get("select"), f"view {name}: select the specs of its stack variant"
        assert view.get("link", "all") in ("roots", "run", "all")
        assert "projections" not in view, f"view {name}: flat, so that <root>/bin has the binaries"
        assert re.search(rf"^#\s+{re.escape(name)}\s", header, re.M), (
            f"view {name} is not documented in the header comment of spack.yaml"
        )
    lock = json.loads((REPO / "environments" / machine / "spack.lock").read_text())
    assert lock["roots"], "committed spack.lock has roots"
    config = REPO / "site-configs" / machine / "config.yaml"
    if config.is_file():
        settings = (yaml.safe_load(config.read_text()) or {}).get("config", {})
        # Spack creates the install tree whenever it opens the store, concretizing included:
        # a site path here would be created on every machine that checks this environment.
        assert "install_tree" not in settings, f"{config}: set install_tree in the user scope"


def test_no_machine_paths_in_committed_files() -> None:
    bad = re.compile(r"(?<![\w~$.])/(work|root|home|tmp)/|/\.mirror\b")
    offenders = []
    for top in GUARDED:
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            if any(part in (".spack-env", "views") for part in path.relative_to(REPO).parts):
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if bad.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "machine-specific paths:\n" + "\n".join(offenders)


# --- Spack ------------------------------------------------------------------------------------


def _input_files(machine: str) -> List[Path]:
    files = [REPO / "environments" / machine / "spack.yaml", REPO / "repo.yaml"]
    files += sorted(p for p in (REPO / "site-configs" / machine).glob("*.yaml")
                    if p.name != "machine.yaml")
    files += sorted(p for p in (REPO / "packages").rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts)
    return files


def _input_key(machine: str) -> str:
    """Hash of everything a solve depends on: inputs, Spack version, package repo commits."""
    h = hashlib.sha256()
    for path in _input_files(machine):
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(spack_support.run_spack(["--version"], timeout=120).encode())
    for line in spack_support.run_spack(["repo", "list"], timeout=120).splitlines():
        parts = line.split()
        if parts and Path(parts[-1]).is_dir():
            head = subprocess.run(["git", "-C", parts[-1], "rev-parse", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
            h.update(f"{line}\0{head}".encode())
    return h.hexdigest()[:16]


def copy_tree(machine: str, dest: Path) -> Path:
    """Copy what environments/<machine> needs, keeping its relative include and repos paths;
    returns the environment directory of the copy."""
    envdir = dest / "environments" / machine
    envdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "environments" / machine / "spack.yaml", envdir / "spack.yaml")
    site = dest / "site-configs" / machine
    if site.exists():
        shutil.rmtree(site)
    shutil.copytree(REPO / "site-configs" / machine, site)
    shutil.copyfile(REPO / "repo.yaml", dest / "repo.yaml")
    if (dest / "packages").exists():
        shutil.rmtree(dest / "packages")
    shutil.copytree(REPO / "packages", dest / "packages",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return envdir


def root_summaries(lock: dict) -> Set[str]:
    """One line per root: name@version, its variants and its MPI (hash-independent)."""
    nodes = lock["concrete_specs"]
    ignored = {"build_system", "patches", "cflags", "cppflags", "cxxflags", "fflags", "ldflags",
               "ldlibs"}
    out = set()
    for root in lock["roots"]:
        node = nodes[root["hash"]]
        params = " ".join(f"{k}={v}" for k, v in sorted(node.get("parameters", {}).items())
                          if k not in ignored)
        mpis = [nodes[d["hash"]] for d in node.get("dependencies", [])
                if "mpi" in d.get("parameters", {}).get("virtuals", [])]
        mpi = " ".join(f"^{m['name']}@{m['version']}" for m in mpis)
        out.add(f"{node['name']}@{node['version']} {params} {mpi}".strip())
    return out


VIEW_CHECK = """
import json, sys
import spack.deptypes as dt
import spack.environment as ev
import spack.traverse as tr
env = ev.active_environment()
roots = list(env.concrete_roots())
root_hashes = {s.dag_hash() for s in roots}
def mpi_of(spec):
    try:
        return "^" + spec["mpi"].name
    except Exception:  # no MPI (gasnet-tests)
        return ""
out = {}
for name, view in env.views.items():
    deptype = {"all": dt.LINK | dt.RUN, "run": dt.RUN}.get(view.link, dt.NONE)
    nodes = [s for s in tr.traverse_nodes(roots, deptype=deptype, key=tr.by_dag_hash)
             if s in view and not s.external]
    names = [s.name for s in nodes]
    out[name] = {
        "root": view.root,
        "roots": sorted(s.format("{name}@{version} {variants} ") + mpi_of(s) for s in nodes
                        if s.dag_hash() in root_hashes),
        "duplicates": sorted({n for n in names if names.count(n) > 1}),
    }
print("VIEWS=" + json.dumps(out))
"""


def check_views(envdir: Path) -> Dict[str, dict]:
    script = envdir.parent / f"view_check_{envdir.name}.py"
    script.write_text(VIEW_CHECK)
    out = spack_support.run_spack(["-e", str(envdir), "python", str(script)], timeout=600)
    line = next(x for x in out.splitlines() if x.startswith("VIEWS="))
    return json.loads(line[len("VIEWS="):])


@pytest.fixture(scope="module")
def spack_present() -> None:
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.mark.spack
@pytest.mark.slow
@pytest.mark.parametrize("machine", MACHINES)
def test_environment_concretizes(machine: str, spack_present: None, tmp_path: Path,
                                 record_property) -> None:
    envdir = copy_tree(machine, tmp_path)
    cache = spack_support.find_spack() and Path.home() / ".cache" / "commstack" / "spack-locks"
    cached = cache / f"env-{machine}-{_input_key(machine)}.lock"
    if cached.is_file():
        shutil.copyfile(cached, envdir / "spack.lock")
        seconds = 0.0
        print(f"{machine}: unchanged inputs, lock from {cached}")
    else:
        t0 = time.monotonic()
        spack_support.run_spack(["-e", str(envdir), "concretize"], timeout=1800)
        seconds = time.monotonic() - t0
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".tmp{os.getpid()}")
        shutil.copyfile(envdir / "spack.lock", tmp)
        os.replace(tmp, cached)
        print(f"{machine}: concretized in {seconds:.0f} s")
    record_property("concretize_seconds", round(seconds, 1))

    fresh = json.loads((envdir / "spack.lock").read_text())
    committed = json.loads((REPO / "environments" / machine / "spack.lock").read_text())
    stale = f"environments/{machine}/spack.lock is stale: run `spack -e environments/{machine} " \
            "concretize --force` and commit it"
    assert sorted(r["spec"] for r in fresh["roots"]) == sorted(
        r["spec"] for r in committed["roots"]), f"{stale} (its roots differ from spack.yaml's)"
    new, old = root_summaries(fresh), root_summaries(committed)
    assert new == old, f"{stale}\nonly in a fresh solve: {sorted(new - old)}\n" \
                       f"only in the committed lock: {sorted(old - new)}"

    views = check_views(envdir)
    assert set(views) == set(_spack_yaml(machine)["view"])
    for name, view in views.items():
        assert Path(view["root"]) == envdir / "views" / name
        assert view["roots"], f"view {name} selects no root spec"
        assert {r.split("@", 1)[0] for r in view["roots"]} <= BENCHMARKS, view["roots"]
        assert not view["duplicates"], (
            f"view {name} selects several specs of {view['duplicates']}: Spack cannot merge them"
        )


#: Executables each view of the local environment must hold (in bin/, or a path in the view).
LOCAL_VIEWS = {
    "ompi": ["IMB-MPI1", "IMB-RMA", "benchmark_mpi_comm", "mpibenchmark"],
    "ompi-ghex-mpi": ["benchmark_ghex_comm_mpi"],
    "ompi-ghex-ucx": ["benchmark_ghex_comm_ucx"],
    "mpich": ["IMB-MPI1", "IMB-RMA", "benchmark_mpi_comm", "mpibenchmark"],
    # gasnet-tests per conduit, and gasnet's udp launcher (a run dependency)
    "gasnet": ["testsmall-smp", "testlarge-smp", "testsmall-udp", "testlarge-udp", "amudprun"],
    # the benchmarks against SimGrid's SMPI, and SimGrid's launcher and wrappers (link: all)
    "smpi": ["IMB-MPI1", "IMB-RMA", "mpibenchmark", "smpirun", "smpicc",
             "libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency",
             "libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce"],
}


def install_local(workdir: Path) -> Path:
    """Install environments/local offline in a copy under ``workdir``; returns the env dir.

    $COMMSTACK_* variables in the copied site configuration are replaced by their values
    (commstack.spack.expand_commstack_vars): Spack does not expand the MPICH external's prefix.
    """
    from commstack.spack import expand_commstack_vars

    envdir = copy_tree("local", workdir)
    packages = workdir / "site-configs" / "local" / "packages.yaml"
    packages.write_text(expand_commstack_vars(packages.read_text()))
    spack_support.run_spack(["-e", str(envdir), "concretize"], timeout=1800)
    spack_support.run_spack(["-e", str(envdir), "install"], timeout=3600)
    return envdir


@pytest.mark.spack
@pytest.mark.slow
def test_local_environment_installs(spack_present: None, record_property) -> None:
    if os.environ.get("COMMSTACK_TEST_INSTALL_LOCAL") != "1":
        pytest.skip("skipped: set COMMSTACK_TEST_INSTALL_LOCAL=1 to build environments/local "
                    "(minutes; CI's environments workflow does)")
    workdir = Path.home() / ".cache" / "commstack" / "envs" / "environments-local"
    t0 = time.monotonic()
    envdir = install_local(workdir)
    record_property("install_seconds", round(time.monotonic() - t0, 1))
    for view, executables in LOCAL_VIEWS.items():
        for exe in executables:
            path = exe if "/" in exe else f"bin/{exe}"
            assert (envdir / "views" / view / path).is_file(), f"views/{view}/{path}"
    # IMB of the mpich view is linked against MPICH, not against the Open MPI that Debian's
    # /usr/bin/mpicc usually is.
    ldd = subprocess.run(["ldd", str(envdir / "views" / "mpich" / "bin" / "IMB-MPI1")],
                         capture_output=True, text=True).stdout
    assert "libmpich" in ldd and "libmpi.so.40" not in ldd, ldd


def test_a_solve_is_reused_only_while_the_site_config_it_includes_is_unchanged(tmp_path: Path):
    """The lockfile cache key (commstack.spack._lock_key) and the work copy's pristine marker
    both take spack.yaml and the files it includes: two clones share a solve; an edited
    site-config file does not reuse it."""
    from commstack.spack import included_files, source_digest

    one, two = copy_tree("local", tmp_path / "one"), copy_tree("local", tmp_path / "two")
    names = [name for name, _ in included_files(one)]
    assert "0/packages.yaml" in names and names == [name for name, _ in included_files(two)]
    assert source_digest(one) == source_digest(two)
    packages = tmp_path / "two" / "site-configs" / "local" / "packages.yaml"
    packages.write_text(packages.read_text() + "\n  # edited\n")
    assert source_digest(one) != source_digest(two)
