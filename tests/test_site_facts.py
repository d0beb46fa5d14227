"""Each site config describes one software generation, and the remote machines' committed Spack
locks carry their own facts, not the solving host's.

machine.yaml `generation:` names the generation (OS, toolchains, MPIs as one set), each source
with the generation it documents and the date it was read, and each software fact with its
source: a fact whose source documents another generation is refused, and the facts must be what
os: and packages.yaml declare (a VERIFY fact: its placeholder there).

No Spack needed: each lock (environments/<m>/spack.lock) is read as JSON and compared with what
site-configs/<m>/machine.yaml declares (`os:` — the nodes' OS and glibc, with its source) and with
the root specs environments/<m>/spack.yaml asks for. scripts/site_lock.py makes such a lock.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
REMOTE = ["betzy", "bm-optimized3-36", "perlmutter"]
SITES = sorted(p.parent.name for p in (REPO / "site-configs").glob("*/machine.yaml"))
VERIFY = "VERIFY"


def _lock(machine: str) -> dict:
    return json.loads((REPO / "environments" / machine / "spack.lock").read_text())


def _declared_os(machine: str) -> dict:
    """machine.yaml's os:, with its provisional solve_as where the OS is VERIFY (the OS and
    glibc the lock is solved for)."""
    facts = yaml.safe_load((REPO / "site-configs" / machine / "machine.yaml").read_text())
    assert "os" in facts, f"site-configs/{machine}/machine.yaml declares no os: (OS and glibc)"
    declared = facts["os"]
    if VERIFY in (declared["spack_os"], declared["glibc"]):
        provisional = declared.get("solve_as")
        assert provisional and provisional["why"].strip(), (
            f"site-configs/{machine}/machine.yaml: os: is VERIFY; say what the lock is solved for "
            "until it is read (os.solve_as: spack_os, glibc, why)")
        return {**declared, **provisional}
    return declared


def wrong_os_and_libc(lock: dict, spack_os: str, glibc: str) -> List[str]:
    """Every node of ``lock`` whose OS is not ``spack_os`` and every libc other than ``glibc``."""
    wrong = []
    for node in lock["concrete_specs"].values():
        label = f"{node['name']}@{node['version']}"
        node_os = node.get("arch", {}).get("platform_os")
        if node_os != spack_os:
            wrong.append(f"{label}: os={node_os}")
        if node["name"] in ("glibc", "musl") and (node["name"], node["version"]) != ("glibc",
                                                                                       glibc):
            wrong.append(f"libc {label}")
    return wrong


@pytest.mark.parametrize("machine", REMOTE)
def test_lock_carries_the_sites_os_and_glibc(machine: str) -> None:
    declared = _declared_os(machine)
    assert declared["source"].strip(), "say where the OS comes from"
    lock = _lock(machine)
    libcs = [n for n in lock["concrete_specs"].values() if n["name"] == "glibc"]
    assert libcs, "the lock records no glibc (its compilers' libc)"
    wrong = wrong_os_and_libc(lock, declared["spack_os"], declared["glibc"])
    assert not wrong, (f"environments/{machine}/spack.lock is not solved for {declared['name']} "
                       f"({declared['spack_os']}, glibc {declared['glibc']}): "
                       f"{', '.join(sorted(set(wrong))[:8])}; run .venv/bin/python "
                       f"scripts/site_lock.py {machine}")


def test_a_lock_solved_on_this_host_is_caught() -> None:
    """The check fails on a lock with the host's facts (here: one planted node)."""
    lock = _lock("betzy")
    declared = _declared_os("betzy")
    assert not wrong_os_and_libc(lock, declared["spack_os"], declared["glibc"])
    planted = json.loads(json.dumps(lock))
    glibc = next(n for n in planted["concrete_specs"].values() if n["name"] == "glibc")
    glibc["version"] = "2.36"
    glibc["arch"]["platform_os"] = "debian12"
    assert wrong_os_and_libc(planted, declared["spack_os"], declared["glibc"]) == [
        "glibc@2.36: os=debian12", "libc glibc@2.36"]


# --- the lock's roots are the spack.yaml's specs ----------------------------------------------


def _expand(env: dict) -> List[str]:
    """spack.yaml `specs` with `definitions` and `matrix` expanded ($name, $^name)."""
    defs: Dict[str, List[str]] = {}
    for entry in env.get("definitions", []):
        (name, values), = ((k, v) for k, v in entry.items() if k != "when")
        defs[name] = values

    def items(row: List[str]) -> List[str]:
        out = []
        for item in row:
            if item.startswith("$^"):
                out += ["^" + s for s in defs[item[2:]]]
            elif item.startswith("$"):
                out += defs[item[1:]]
            else:
                out.append(item)
        return out

    specs: List[str] = []
    for entry in env["specs"]:
        if isinstance(entry, dict):
            rows = [items(row) for row in entry["matrix"]]
            combos = [""]
            for row in rows:
                combos = [f"{c} {r}".strip() for c in combos for r in row]
            specs += combos
        else:
            specs.append(entry)
    return specs


TOKEN = re.compile(r"@[^\s+~^]+|[+~][\w-]+|[\w-]+:?=[^\s+~^]+")


def canonical(spec: str) -> str:
    """A spec string with its nodes, variants and multi-valued values in a fixed order."""
    nodes = []
    for part in spec.split("^"):
        part = part.strip()
        if not part:
            continue
        name = re.match(r"[\w-]+", part).group(0)
        tokens = []
        for token in TOKEN.findall(part[len(name):]):
            key, sep, value = re.match(r"([\w-]+)(:?=)?(.*)", token.lstrip("+~")).groups() \
                if "=" in token else (token, "", "")
            tokens.append(f"{key}{sep}{','.join(sorted(value.split(',')))}" if sep else token)
        nodes.append(" ".join([name, *sorted(tokens)]))
    return nodes[0] + "".join(f" ^{n}" for n in sorted(nodes[1:]))


def test_canonical_spec_ignores_order_only() -> None:
    assert canonical("openmpi@4.1.8 fabrics:=ucx,cma schedulers=slurm +legacylaunchers ^ucx ~xpmem") \
        == canonical("openmpi@4.1.8+legacylaunchers fabrics:=cma,ucx schedulers=slurm ^ucx~xpmem")
    assert canonical("ucx +xpmem") != canonical("ucx ~xpmem")
    assert canonical("ghexbench rma=none ^openmpi fabrics:=ucx,cma") != canonical(
        "ghexbench rma=xpmem ^openmpi fabrics:=ucx,cma")


@pytest.mark.parametrize("machine", REMOTE)
def test_lock_roots_are_the_environments_specs(machine: str) -> None:
    env = yaml.safe_load((REPO / "environments" / machine / "spack.yaml").read_text())["spack"]
    wanted = Counter(canonical(s) for s in _expand(env))
    locked = Counter(canonical(r["spec"]) for r in _lock(machine)["roots"])
    assert locked == wanted, (
        f"environments/{machine}/spack.lock is stale: only in spack.yaml: "
        f"{sorted((wanted - locked).elements())}; only in the lock: "
        f"{sorted((locked - wanted).elements())}; run .venv/bin/python scripts/site_lock.py "
        f"{machine}")



def roots_reaching(lock: dict, package: str) -> List[str]:
    """The lock's root specs with `package` anywhere in their DAG."""
    nodes = lock["concrete_specs"]
    memo: Dict[str, bool] = {}

    def reaches(digest: str) -> bool:
        if digest not in memo:
            memo[digest] = False  # a DAG; guards against a damaged lock's cycle
            node = nodes[digest]
            memo[digest] = node["name"] == package or any(
                reaches(d["hash"]) for d in node.get("dependencies", []))
        return memo[digest]

    return [r["spec"] for r in lock["roots"] if reaches(r["hash"])]


def test_betzy_default_stacks_do_not_need_hcoll() -> None:
    """The only HCOLL a Betzy source names is HPC-X 2.7.0's of 2020 (VERIFY after the 2024
    reinstall); without it Open MPI's configure fails. Only the opt-in part built on
    `ompi_hcoll` may reach it, and only its own view may select that Open MPI."""
    env = yaml.safe_load((REPO / "environments" / "betzy" / "spack.yaml").read_text())["spack"]
    opt_in = _expand({"definitions": env["definitions"], "specs": [
        e for e in env["specs"] if isinstance(e, dict) and "$^ompi_hcoll" in e["matrix"][-1]]})
    assert opt_in, "the opt-in HCOLL part (matrix over $^ompi_hcoll) is gone"
    assert Counter(canonical(s) for s in roots_reaching(_lock("betzy"), "hcoll")) == Counter(
        canonical(s) for s in opt_in)
    for name, view in env["view"].items():
        hcoll = [s for s in view["select"] if "hcoll" in s]
        assert bool(hcoll) == (name == "ompi-hcoll"), (name, hcoll)


# --- one software generation per site --------------------------------------------------------


def _facts(machine: str) -> dict:
    return yaml.safe_load((REPO / "site-configs" / machine / "machine.yaml").read_text())


def _packages(machine: str) -> dict:
    path = REPO / "site-configs" / machine / "packages.yaml"
    return (yaml.safe_load(path.read_text()) or {}).get("packages", {}) if path.is_file() else {}


def site_versions(packages: dict, name: str) -> List[str]:
    """The versions packages.yaml gives ``name``: each external's and a require @= pin."""
    settings = packages.get(name) or packages.get(name + ":") or {}
    found = [m.group(1) for e in settings.get("externals") or []
             if (m := re.match(rf"\s*{re.escape(name)}@=?([^\s%+~]+)", str(e.get("spec", ""))))]
    for req in settings.get("require") or []:
        text = req if isinstance(req, str) else " ".join(map(str, req.get("one_of", req.get("any_of", []))))
        found += re.findall(r"@=([^\s%+~,]+)", text)
    return found


def _study_versions(facts: dict) -> set:
    """(package, version) of every machine.yaml studies: fact: a study's own externals."""
    found = set()
    for study in (facts.get("studies") or {}).values():
        for name, fact in study["facts"].items():
            found.add((name, fact.get("placeholder") if fact["value"] == VERIFY else fact["value"]))
    return found


def _without_studies(facts: dict, packages: dict, lock: dict = None) -> tuple:
    """packages.yaml and the lock without the externals and nodes of the studies' own stacks
    (studies:, another generation on purpose, checked by their own test)."""
    study = _study_versions(facts)
    if not study:
        return packages, lock
    packages = json.loads(json.dumps(packages))
    for name, settings in packages.items():
        kept = [e for e in (settings or {}).get("externals") or []
                if (name.rstrip(":"), (site_versions({name: {"externals": [e]}}, name)
                                       or [None])[0]) not in study]
        if (settings or {}).get("externals") is not None:
            settings["externals"] = kept
    if lock is not None:
        lock = dict(lock, concrete_specs={h: n for h, n in lock["concrete_specs"].items()
                                          if (n["name"], n["version"]) not in study})
    return packages, lock


def generation_problems(facts: dict, packages: dict, lock: dict = None) -> List[str]:
    """Every way ``facts``' generation block contradicts itself, os: or packages.yaml."""
    gen = facts.get("generation")
    if not gen:
        return ["no generation: (the software generation this site config describes)"]
    problems = []
    sources = gen["sources"]
    for name, fact in gen["facts"].items():
        source = sources.get(fact["source"])
        if source is None:
            problems.append(f"{name}: source {fact['source']!r} is not under generation.sources")
            continue
        if source["generation"] != gen["name"]:
            problems.append(f"{name}: its source {fact['source']!r} documents generation "
                            f"{source['generation']}, not {gen['name']}")
        value, placeholder = str(fact["value"]), fact.get("placeholder")
        if value == VERIFY and name not in ("os", "glibc") and placeholder is None \
                and site_versions(packages, name):
            problems.append(f"{name}: VERIFY with a version in packages.yaml: give it as "
                            "placeholder")
        expected = placeholder if value == VERIFY else value
        if name == "os":
            declared = str(facts["os"]["name"])
            if value != declared and not (value == VERIFY and declared == VERIFY):
                problems.append(f"os: generation says {value}, os.name says {declared}")
        elif name == "glibc":
            if value != str(facts["os"]["glibc"]):
                problems.append(f"glibc: generation says {value}, os.glibc says "
                                f"{facts['os']['glibc']}")
        else:
            versions = site_versions(packages, name)
            if not versions:
                problems.append(f"{name}: packages.yaml declares no external or @= pin of it "
                                "(a generation fact is what the site provides)")
            elif any(v != expected for v in versions):
                problems.append(f"{name}: generation says {expected}, packages.yaml "
                                f"{', '.join(versions)}")
        if lock is not None and name not in ("os", "glibc") and expected is not None:
            stale = sorted({n["version"] for n in lock["concrete_specs"].values()
                            if n["name"] == name and n["version"] != expected})
            if stale:
                problems.append(f"{name}: generation says {expected}, the lock has "
                                f"{', '.join(stale)} (re-solve: scripts/site_lock.py)")
        if fact.get("not_in_lock") and lock is not None:
            nodes = [n for n in lock["concrete_specs"].values() if n["name"] == name]
            if nodes:
                problems.append(f"{name}: not_in_lock, but the lock has "
                                f"{name}@{nodes[0]['version']}")
    return problems


@pytest.mark.parametrize("machine", SITES)
def test_site_describes_one_generation(machine: str) -> None:
    lock_file = REPO / "environments" / machine / "spack.lock"
    lock = json.loads(lock_file.read_text()) if machine in REMOTE else None
    facts = _facts(machine)
    packages, lock = _without_studies(facts, _packages(machine), lock)
    problems = generation_problems(facts, packages, lock)
    assert not problems, f"site-configs/{machine}: " + "; ".join(problems)


@pytest.mark.parametrize("machine", SITES)
def test_each_study_stack_is_one_generation_held_by_packages_yaml_and_the_lock(machine: str
                                                                             ) -> None:
    """machine.yaml studies: a published study's own software beside the site's generation
    (Betzy: cartex-2021, the Open MPI 4.0.5 module and HPC-X's UCX): consistent in itself, the
    externals packages.yaml declares, and in the lock as those externals."""
    facts = _facts(machine)
    for name, study in (facts.get("studies") or {}).items():
        assert study["name"] != facts["generation"]["name"], name
        # beside the site's own externals of the same packages: the study's version among them
        packages = _packages(machine)
        own = {package: {"externals": [
            e for e in (packages.get(package) or {}).get("externals") or []
            if site_versions({package: {"externals": [e]}}, package)
            == [fact.get("placeholder") if fact["value"] == VERIFY else fact["value"]]]}
            for package, fact in study["facts"].items()}
        problems = generation_problems({"generation": study, "os": facts["os"]}, own)
        assert not problems, f"site-configs/{machine}: studies.{name}: " + "; ".join(problems)
        if machine not in REMOTE:
            continue
        nodes = list(_lock(machine)["concrete_specs"].values())
        for package, fact in study["facts"].items():
            version = fact.get("placeholder") if fact["value"] == VERIFY else fact["value"]
            held = [n for n in nodes if n["name"] == package and n["version"] == version]
            assert held and all("external" in n for n in held), (
                f"environments/{machine}/spack.lock: no external {package}@{version} of study "
                f"{name} (re-solve: scripts/site_lock.py {machine})")


def test_a_fact_from_another_generation_is_refused() -> None:
    """Planted: Betzy's Slurm taken from the 2021 build files of the published cartex runs,
    and BM.Optimized3.36's Slurm from Oracle's OL 9.5 tip."""
    facts, packages = _facts("betzy"), _packages("betzy")
    assert not generation_problems(facts, packages)
    planted = json.loads(json.dumps(facts))
    planted["generation"]["sources"]["ghexbench"] = {
        "cites": "ghex-org/ghexbench cartex/build/betzy/config.ompi", "read": "2026-11-26",
        "generation": "betzy-2021"}
    planted["generation"]["facts"]["openmpi"] = {"value": "4.0.5", "source": "ghexbench"}
    problems = generation_problems(planted, packages)
    assert problems == [
        "openmpi: its source 'ghexbench' documents generation betzy-2021, not betzy-2024"]

    facts, packages = _facts("bm-optimized3-36"), _packages("bm-optimized3-36")
    assert not generation_problems(facts, packages)
    planted = json.loads(json.dumps(packages))
    planted["slurm"]["externals"][0]["spec"] = "slurm@25.05.3 +pmix"
    assert generation_problems(facts, planted) == [
        "slurm: generation says 24.11.0, packages.yaml 25.05.3"]


def test_a_verify_fact_the_lock_must_not_hold_is_caught() -> None:
    """Planted: Betzy's xpmem declared not_in_lock (the default stacks without it), but the
    lock's opt-in part has it."""
    facts = json.loads(json.dumps(_facts("betzy")))
    lock = _lock("betzy")
    assert not generation_problems(facts, _packages("betzy"), lock)
    facts["generation"]["facts"]["xpmem"]["not_in_lock"] = True
    assert generation_problems(facts, _packages("betzy"), lock) == [
        "xpmem: not_in_lock, but the lock has xpmem@2.6.5"]
