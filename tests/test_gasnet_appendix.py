"""The GASNet-EX paper's method on Perlmutter: its artifact appendix's commands, nodes and versions.

Hargrove & Bonachea, "GASNet-EX RMA Communication Performance on Recent Supercomputing Systems"
(PAW-ATM 2022). The paper's text is read from the project's shared seeds (../shared/seeds next to
this checkout); `commstack plan` of matrices/perlmutter/gasnet-* must print every command of its
appendix, with the [RUN] prefix it gives for Perlmutter, and no other.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
import yaml

from commstack.machine import MachineError, load_machine_file
from tests.conftest import REPO
from tests.sweeps import commstack

SEEDS = REPO.parent / "shared" / "seeds"
MATRICES = sorted((REPO / "matrices" / "perlmutter").glob("gasnet-*.yaml"))
# The same commands on the paper's own Cray PE (machine.yaml studies: gasnet-paw22).
STUDY_MATRICES = sorted((REPO / "matrices" / "perlmutter").glob("study-gasnet-*.yaml"))
ENV = REPO / "environments" / "perlmutter" / "spack.yaml"

# srun options of the appendix, each under one name (short and long spellings alike).
SRUN_NAMES = {"-c": "cpus-per-task", "--cpus-per-task": "cpus-per-task", "-n": "ntasks",
              "--ntasks": "ntasks", "-N": "nodes", "--nodes": "nodes", "--cpu-bind": "cpu-bind",
              "--cpu_bind": "cpu-bind"}
# What commstack's srun adds of its own (launcher facts, not the method): srun -v for the step's
# provenance, the PMI plugin, --kill-on-bad-exit, --ntasks-per-node (checked against -n/-N), and
# "verbose" in --cpu-bind (the binding report that verifies placement).
LAUNCHER_OWN = {"-v", "--mpi", "--kill-on-bad-exit", "--ntasks-per-node"}


def _paper() -> str:
    if not SEEDS.is_dir():
        pytest.skip(f"skipped: {SEEDS} is absent (the project's shared seeds hold the paper's text)")
    found = [p for p in sorted(SEEDS.glob("*.md")) if "GASNet-EX RMA Communication Performance"
             in p.read_text(errors="replace")]
    if not found:
        pytest.skip(f"skipped: no GASNet-EX RMA paper among {SEEDS}/*.md")
    return found[0].read_text()


def appendix_commands(text: str) -> List[List[str]]:
    """Every `[RUN] command` of the appendix, [RUN] replaced by its Perlmutter definition."""
    appendix = text.split("ARTIFACT DESCRIPTION", 1)[1]
    run = re.search(r"for \W(srun [^”\"]+)\W on the other systems", appendix)
    assert run, "the appendix defines [RUN] for the Slurm systems"
    commands = re.findall(r"^\s*-\s*\[RUN\]\s*`([^`]+)`", appendix, re.M)
    return [shlex.split(run.group(1)) + shlex.split(c) for c in commands]


def _srun_settings(tokens: List[str]) -> Tuple[Dict[str, str], List[str]]:
    """srun's options (by their names above, launcher-own ones kept aside) and the program argv.
    An option given twice is an error: the appendix's value must not be overridden."""
    assert tokens[0] == "srun", tokens
    settings: Dict[str, str] = {}
    own: Dict[str, str] = {}
    i = 1
    while i < len(tokens) and tokens[i].startswith("-"):
        token = tokens[i]
        name, value = token.split("=", 1) if "=" in token else (token, "")
        if not value and name[:2] in SRUN_NAMES and len(name) > 2 and not name.startswith("--"):
            name, value = name[:2], name[2:]  # -c8, -n2, -N2
        elif not value and name in SRUN_NAMES:
            i += 1
            value = tokens[i]
        i += 1
        if name in LAUNCHER_OWN:
            own[name] = value
            continue
        assert name in SRUN_NAMES, f"srun option {token} is neither the appendix's nor commstack's own"
        key = SRUN_NAMES[name]
        assert key not in settings, f"srun {key} given twice in {shlex.join(tokens)}"
        if key == "cpu-bind":
            value = ",".join(v for v in value.split(",") if v != "verbose")
        settings[key] = value
    if "--ntasks-per-node" in own:
        assert int(own["--ntasks-per-node"]) * int(settings["nodes"]) == int(settings["ntasks"])
    return settings, tokens[i:]


def _program(argv: List[str]) -> Tuple[str, Tuple]:
    """The program's name (no directory; gasnet-tests installs <test>-<conduit>) and arguments:
    GASNet-EX tests' as given, IMB's as benchmark names plus option pairs (IMB reads them in any
    order; commstack writes the names first)."""
    name = os.path.basename(argv[0])
    name = re.sub(r"^(test\w+)-(ofi|ibv|ucx|udp|mpi|smp)$", r"\1", name)
    args = argv[1:]
    if not name.startswith("IMB-"):
        return name, tuple(args)
    names, options, i = [], [], 0
    while i < len(args):
        if args[i].startswith("-"):
            options.append((args[i], args[i + 1]))
            i += 2
        else:
            names.append(args[i])
            i += 1
    return name, (tuple(names), tuple(sorted(options)))


def normalised(tokens: List[str]) -> Tuple:
    settings, program = _srun_settings(tokens)
    return tuple(sorted(settings.items())), _program(program)


def _views_with_programs(tmp: Path) -> Path:
    """environments/perlmutter/spack.yaml in tmp with every view's bin/ holding the programs the
    appendix matrices start. `commstack plan` launches nothing: it only resolves these names."""
    env = tmp / "environments" / "perlmutter"
    env.mkdir(parents=True)
    shutil.copy(ENV, env / "spack.yaml")
    views = (yaml.safe_load(ENV.read_text())["spack"]["view"])
    for view in views.values():
        bin_dir = env / view["root"] / "bin"
        bin_dir.mkdir(parents=True)
        # srun too: plan looks a stack's launcher up in its view first, and a machine without
        # Slurm (CI) has none on PATH.
        for program in ("IMB-RMA", "IMB-MPI1", "testlarge-ofi", "testsmall-ofi", "gasnetrun_ofi",
                        "srun"):
            (bin_dir / program).symlink_to(shutil.which("true"))
    return env.parent


def plan_commands(tmp: Path, matrices: List[Path] = MATRICES) -> List[List[str]]:
    """The srun lines `commstack plan` prints for the appendix matrices, as inside a Slurm
    allocation on Perlmutter (SLURM_JOB_ID set; an empty slurm.conf, so the squeue that asks for
    the time left stops at once and asks no cluster), without the launcher's own `env VAR=...`
    prefix."""
    (tmp / "slurm.conf").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(COMMSTACK_ENVIRONMENTS=str(_views_with_programs(tmp)), SLURM_JOB_ID="appendix",
               SLURM_CONF=str(tmp / "slurm.conf"))
    commands = []
    for matrix in matrices:
        out = commstack("plan", str(matrix), "--out", str(tmp / "results"), env=env)
        assert out.returncode == 0, out.stderr
        assert "machine facts: " + str(REPO / "site-configs" / "perlmutter") in out.stdout
        for line in out.stdout.splitlines():
            if line.startswith("    "):
                tokens = shlex.split(line)
                commands.append(tokens[tokens.index("srun"):])
    assert not (tmp / "results").exists(), "plan wrote nothing"
    return commands


def test_plan_prints_every_appendix_command(tmp_path: Path) -> None:
    paper = appendix_commands(_paper())
    assert len(paper) == 8, [shlex.join(c) for c in paper]
    assert all(c[:5] == ["srun", "-c8", "--cpu_bind=cores", "-n2", "-N2"] for c in paper)
    planned = plan_commands(tmp_path)
    expected = Counter(normalised(c) for c in paper)
    got = Counter(normalised(c) for c in planned)
    missing = [shlex.join(c) for c in paper if normalised(c) not in got]
    extra = [shlex.join(c) for c in planned if normalised(c) not in expected]
    assert not missing and not extra, f"not planned: {missing}; not in the appendix: {extra}"
    assert got == expected
    # Every step asks for 8 CPUs per task, the IMB steps included.
    assert all("--cpus-per-task=8" in c or "-c8" in c for c in planned)


def test_the_papers_own_stack_plans_the_same_commands_from_its_views(tmp_path: Path) -> None:
    """matrices/perlmutter/study-gasnet-*.yaml: one per appendix matrix, the same srun lines,
    each program from the study part's views (cray-mpich-study, gasnet-study)."""
    assert [p.name for p in STUDY_MATRICES] == ["study-" + p.name for p in MATRICES]
    (tmp_path / "today").mkdir()
    (tmp_path / "study").mkdir()
    today = plan_commands(tmp_path / "today")
    study = plan_commands(tmp_path / "study", STUDY_MATRICES)
    assert Counter(normalised(c) for c in study) == Counter(normalised(c) for c in today)
    programs = [t for c in study for t in c if "/views/" in t]
    assert programs and all("/views/cray-mpich-study/" in t or "/views/gasnet-study/" in t
                            for t in programs), programs
    for path in STUDY_MATRICES:
        matrix = yaml.safe_load(path.read_text())
        assert all(stack.get("optional") for stack in matrix["stacks"].values()), path.name
        assert any("gasnet-paw22" in d for d in matrix["deviations"]), path.name


def test_normalisation_tells_commands_apart() -> None:
    base = shlex.split("srun -c8 --cpu_bind=cores -n2 -N2 IMB-MPI1 -time 600 -iter 500 Uniband")
    same = shlex.split("srun -v --mpi=cray_shasta -N 2 --ntasks-per-node=1 -n 2 --cpus-per-task=8 "
                       "--cpu-bind=verbose,cores /v/bin/IMB-MPI1 Uniband -iter 500 -time 600")
    assert normalised(base) == normalised(same)
    for other in ("srun --cpu_bind=cores -n2 -N2 IMB-MPI1 -time 600 -iter 500 Uniband",
                  "srun -c8 --cpu_bind=cores -n2 -N2 IMB-MPI1 -time 600 -iter 50 Uniband",
                  "srun -c8 --cpu_bind=cores -n2 -N2 IMB-MPI1 -time 600 -iter 500 PingPong",
                  "srun -c8 --cpu_bind=threads -n2 -N2 IMB-MPI1 -time 600 -iter 500 Uniband"):
        assert normalised(shlex.split(other)) != normalised(base), other
    with pytest.raises(AssertionError, match="given twice"):
        normalised(shlex.split("srun -c8 --cpus-per-task=128 -n2 -N2 testsmall 10"))


def _ss11_section(text: str) -> str:
    return text.rsplit("Perlmutter SS-11:", 1)[1]  # the appendix's system description


def test_appendix_matrices_run_on_the_papers_nodes() -> None:
    """The paper's Perlmutter SS-11 nodes are the GPU nodes: one socket, four Cassini NICs."""
    system = _ss11_section(_paper())
    sockets = 1 if "Single-socket" in system else None
    cores = int(re.search(r"(\d+)-core", system).group(1))
    nics = int(re.search(r"(\d+)x HPE \W?Cassini\W? NICs", system).group(1))
    memory = int(re.search(r"(\d+) GB DDR4", system).group(1))
    machine = load_machine_file(REPO / "site-configs" / "perlmutter" / "machine.yaml")
    assert machine.node["sockets"] == 2 and len(machine.facts["network"]["devices"]) == 1
    for path in MATRICES:
        node_type = yaml.safe_load(path.read_text()).get("node_type")
        gpu = machine.with_node_type(node_type)
        assert (gpu.node["sockets"], gpu.node["cores_per_socket"]) == (sockets, cores), path.name
        assert len(gpu.facts["network"]["devices"]) == nics, path.name
        assert gpu.node["memory_gib"] == memory and gpu.scheduler["constraint"] == "gpu"


def _spec_versions(view: str) -> Dict[str, Optional[str]]:
    spack = yaml.safe_load(ENV.read_text())["spack"]
    found = {}
    for select in spack["view"][view]["select"]:
        name, _, version = select.partition("@")
        found[name.split()[0]] = version.split()[0] if version else None
    return found


def test_appendix_matrices_use_the_papers_versions() -> None:
    text = _paper()
    gasnet = re.search(r"GASNet-EX version (\d+\.\d+\.\d+)", text).group(1)
    imb = re.search(r"\(IMB\) \[\d+\] version v(\d+\.\d+)", text).group(1)
    spack = yaml.safe_load(ENV.read_text())["spack"]
    roots = [s for s in spack["specs"] if isinstance(s, str)]
    assert any(s.startswith(f"gasnet-tests@{gasnet} conduits=ofi ") for s in roots)
    assert any(f"@{gasnet}" in s for s in roots) and any("gasnet-tests@2025" in s for s in roots)
    assert spack["definitions"][2]["imb"] == [f"intel-mpi-benchmarks@{imb}"]
    for path in MATRICES:
        for stack in yaml.safe_load(path.read_text())["stacks"].values():
            if stack["flavour"] == "gasnet":
                assert _spec_versions(stack["spack"]["view"]) == {"gasnet-tests": gasnet,
                                                                  "gasnet": gasnet}
    mirror = (REPO / "packages" / "mirror-sources.tsv").read_text()
    row = next(line.split("\t") for line in mirror.splitlines()
               if line.startswith(f"gasnet\t{gasnet}\t"))
    recipe = (REPO / "packages" / "gasnet" / "package.py").read_text()
    assert f'version("{gasnet}", sha256="{row[5]}")' in recipe
    assert row[3].endswith(f"GASNet-{gasnet}.tar.gz")


def test_unknown_node_type_is_refused_before_launch(tmp_path: Path) -> None:
    matrix = tmp_path / "matrices" / "perlmutter" / "m.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text("node_type: tpu\nbenchmark: imb-mpi1\n"
                      "stacks: {s: {flavour: cray-mpich, bin: /bin}}\n"
                      "parameters: {executable: 'true', benchmarks: PingPong, nodes: 2}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["COMMSTACK_SITE_CONFIGS"] = str(REPO / "site-configs")
    out = commstack("plan", str(matrix), "--out", str(tmp_path / "r"), env=env)
    assert out.returncode != 0
    assert "no node type 'tpu'; node types: cpu, gpu" in out.stderr


def test_node_types_need_the_default_named(tmp_path: Path) -> None:
    facts = yaml.safe_load((REPO / "site-configs" / "perlmutter" / "machine.yaml").read_text())
    del facts["node_type"]
    path = tmp_path / "machine.yaml"
    path.write_text(yaml.safe_dump(facts))
    with pytest.raises(MachineError, match="'node_type' is a dependency of 'node_types'"):
        load_machine_file(path)


def test_gasnet_2022_3_0_builds_and_runs(tmp_path_factory) -> None:
    """The paper's GASNet-EX release, built offline by this repository's recipes (smp-conduit:
    the network conduits need their networks)."""
    from tests import spack_support

    reason = spack_support.gasnet_skip_reason()
    if reason:
        pytest.skip(reason)
    sha = "91b59aa84c0680c807e00d3d1d8fa7c33c1aed50b86d1616f93e499620a9ba09"
    if not (spack_support.find_mirror() / "_source-cache" / "archive" / sha[:2]
            / f"{sha}.tar.gz").exists():
        pytest.skip("skipped: GASNet 2022.3.0 not in the mirror (commstack mirror --package gasnet)")
    src = tmp_path_factory.mktemp("src") / "gasnet-2022.3.0-smp"
    src.mkdir()
    template = (spack_support.GASNET_ENV / "spack.yaml").read_text()
    assert "gasnet-tests@2025.8.0 conduits=smp,udp" in template
    (src / "spack.yaml").write_text(template.replace("gasnet-tests@2025.8.0 conduits=smp,udp",
                                                     "gasnet-tests@2022.3.0 conduits=smp"))
    bin_dir = spack_support.install_view_bin(src, tmp_path_factory.mktemp("spack"),
                                             "testsmall-smp")
    out = subprocess.run([str(bin_dir / "testsmall-smp"), "100", "64"], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "GASNET_PSHM_NODES": "2"})
    assert out.returncode == 0, out.stderr
    assert "RELEASE=2022.3.0" in out.stdout and "nprocs=2" in out.stdout
