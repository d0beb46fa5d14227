"""Every flavour x launch path x mapping x site config: the exact launcher argv and environment.

No cluster and no MPI run: commands are built as `commstack plan` builds them, from each
site-configs/<machine>/machine.yaml. The expected values are this file's tables; what a machine
declares is read here with plain YAML, so a fact that commstack ignores makes a row fail.

Adding a flavour: a row in FLAVOURS, its built-in placements in BUILT_IN and its three launch
paths in ROWS (docs/howto/add-a-flavour.md).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml

from commstack import flavours
from commstack.benchmarks import registry
from commstack.launch.command import LaunchCommand, LaunchError, local_command, machine_launcher
from commstack.launch.stack import resolve
from commstack.machine import STEP_LAUNCHERS, Machine, load_machine_file
from commstack.matrix.model import Point, Stack
from commstack.schedulers.slurm import SlurmAllocation as Allocation
from commstack.schedulers.slurm_step import srun_command
from tests.conftest import REPO

MACHINES = sorted(p.parent.name for p in (REPO / "site-configs").glob("*/machine.yaml"))
MAPPINGS = ("block", "cyclic")

# flavour: its default launcher, srun's --mpi plugin, the launcher used here for "its own
# launcher inside an allocation", the variables that make it report its binding, and whether
# its placement variables are set under srun (Intel MPI's act through its mpirun only).
FLAVOURS = {
    "openmpi": ("mpirun", "pmix", "mpirun", {}, True),
    "intelmpi": ("mpirun", "pmi2", "mpirun", {"I_MPI_DEBUG": "4"}, False),
    "mpich": ("mpiexec", "pmi2", "mpiexec.hydra", {"HYDRA_TOPO_DEBUG": "1"}, True),
    "cray-mpich": ("srun", "cray_shasta", None, {}, True),
    "gasnet": ("gasnetrun_ibv", "pmi2", "gasnetrun_ibv", {}, True),
}

# (flavour, mapping): built-in placement when machine.yaml declares none: launcher args, env.
BUILT_IN = {
    ("openmpi", "block"): ("--map-by core --bind-to core", {}),
    ("openmpi", "cyclic"): ("--map-by numa --bind-to core", {}),
    ("intelmpi", "block"): ("", {"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "compact"}),
    ("intelmpi", "cyclic"): ("", {"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "scatter"}),
    ("mpich", "block"): ("-bind-to core -map-by core", {}),
    ("mpich", "cyclic"): ("-bind-to core -map-by numa", {}),
    ("cray-mpich", "block"): ("", {}),
    ("cray-mpich", "cyclic"): ("", {}),
    # gasnet: none (GASNet-EX does not bind); a mapping needs machine.yaml's mapping.<m>.gasnet
}

SRUN = ("srun -v {srun_args} -N 2 --ntasks-per-node=4 -n 8 {cpus_per_task} {binding} "
        "--kill-on-bad-exit=1 {distribution}")
# (flavour, path): the launcher's argv for 4 ranks per node (1 node locally, 2 in an allocation)
# or "error: <what the message must say>". {L}: the launcher on this node, {C}: the command
# inside an allocation, {map}: the placement's arguments, {x}: Open MPI's -x for every variable.
ROWS = {
    ("openmpi", "local"): "{L} -np 4 {root} {map} --report-bindings {x}",
    ("openmpi", "srun"): SRUN,
    ("openmpi", "alloc"): "{C} -np 8 --npernode 4 {root} {map} --report-bindings {x}",
    ("intelmpi", "local"): "{L} -n 4 -ppn 4 {map}",
    ("intelmpi", "srun"): SRUN,
    ("intelmpi", "alloc"): "{C} -n 8 -ppn 4 {map}",
    ("mpich", "local"): "{L} -n 4 -ppn 4 {map}",
    ("mpich", "srun"): SRUN,
    ("mpich", "alloc"): "{C} -n 8 -ppn 4 {map}",
    ("cray-mpich", "local"): "error: launched with srun inside a Slurm allocation, not locally",
    ("cray-mpich", "srun"): SRUN,
    ("cray-mpich", "alloc"): "error: no launcher of its own inside an allocation",
    ("gasnet", "local"): "error: no built-in placement for GASNet-EX stacks",
    ("gasnet", "srun"): "error: no built-in placement for GASNet-EX stacks",
    ("gasnet", "alloc"): "error: no built-in placement for GASNet-EX stacks",
}
PATHS = ("local", "srun", "alloc")
LAUNCHER_NAMES = ("srun", "mpirun", "mpiexec", "mpiexec.hydra", "mpirun.openmpi", "mpiexec.mpich",
                  "gasnetrun_ibv", "gasnetrun_smp", "amudprun")


def test_the_tables_cover_every_flavour():
    # A simulator launches on this node whatever the path, on its platform: tests/test_smpi.py.
    assert set(FLAVOURS) == {n for n in flavours.names() if not flavours.get(n).simulated}
    assert set(ROWS) == {(f, p) for f in FLAVOURS for p in PATHS}
    for flavour in FLAVOURS:
        for mapping in MAPPINGS:
            assert (flavour, mapping) in BUILT_IN or ROWS[(flavour, "local")].startswith("error")


@pytest.fixture(scope="module")
def install(tmp_path_factory) -> Path:
    """A bin directory holding the benchmark and launcher names (found, never run)."""
    bin_dir = tmp_path_factory.mktemp("install") / "bin"
    bin_dir.mkdir()
    for name in ("IMB-MPI1", "testlarge-ibv", "testlarge-smp", *LAUNCHER_NAMES):
        path = bin_dir / name
        path.write_text("#!/bin/sh\nexit 99\n")
        path.chmod(0o755)
    return bin_dir


def _facts(machine: str) -> dict:
    return yaml.safe_load((REPO / "site-configs" / machine / "machine.yaml").read_text())


def _machine_for(machine: str, flavour: str, path: str) -> Machine:
    """The machine's facts, with the flavour launched by srun (path srun) or by its own launcher
    (path alloc); mapping facts as written."""
    facts = copy.deepcopy(_facts(machine))
    launcher = facts.setdefault("launchers", {}).get(flavour) or {}
    own = FLAVOURS[flavour][2]
    if path == "srun" and launcher.get("command", "srun") != "srun":
        facts["launchers"][flavour] = {"command": "srun", "env": launcher.get("env", {})}
    if path == "alloc" and launcher.get("command", "srun") == "srun" and own:
        facts["launchers"][flavour] = {"command": own, "env": launcher.get("env", {})}
    if path == "alloc" and not own:
        facts["launchers"][flavour] = {"command": "mpirun"}
    return Machine(machine, None, facts)


def _command(machine: Machine, flavour: str, path: str, mapping: str, bin_dir: Path
             ) -> LaunchCommand:
    conduit = "ibv" if flavour == "gasnet" else None
    benchmark = registry.get("gasnet-testlarge" if conduit else "imb-mpi1")
    stack = Stack("s", flavour, bin=str(bin_dir), conduit=conduit)
    allocation = None if path == "local" else Allocation("1", ["n1", "n2", "n3"], "debug")
    resolved = resolve(stack, machine_launcher(machine, flavour, allocation))
    nodes = 1 if path == "local" else 2
    point = Point(benchmark.name, (("stack", "s"), ("nodes", nodes), ("ranks_per_node", 4),
                                   ("mapping", mapping)))
    if allocation is None:
        return local_command(point, benchmark, resolved, cores=8, machine=machine)
    return srun_command(point, benchmark, resolved, machine, allocation)


def _declared(machine: str, flavour: str, mapping: str) -> "tuple[Optional[str], Dict[str, str]]":
    """mapping.<m>.<flavour> of machine.yaml as written: (args or None, env)."""
    entry = ((_facts(machine).get("mapping") or {}).get(mapping) or {}).get(flavour)
    if entry is None:
        return None, {}
    if isinstance(entry, list):
        return " ".join(entry), {}
    return " ".join(entry.get("args", [])), {k: str(v) for k, v in (entry.get("env") or {}).items()}


def _expected(machine: str, flavour: str, path: str, mapping: str, bin_dir: Path
              ) -> "tuple[List[str], Dict[str, str]]":
    facts = _facts(machine)
    default_launcher, plugin, own, report_env, env_under_srun = FLAVOURS[flavour]
    args, env = _declared(machine, flavour, mapping)
    if args is None:
        args, env = BUILT_IN[(flavour, mapping)]
    node = facts["node"]
    # 4 ranks per node: whole cores with all their threads (NERSC's -c), and a declared cpu_map
    # of 2 sockets: two ranks per socket (block) or alternating sockets (cyclic).
    cores = node["sockets"] * node["cores_per_socket"]
    cpus_per_task = f"--cpus-per-task={max(1, node.get('threads_per_core', 1) * (cores // 4))}"
    binding = "--cpu-bind=verbose,cores"
    declared = (facts.get("mapping") or {}).get(mapping) or {}
    if "cpu_map" in declared:
        c = node["cores_per_socket"]
        cpus = f"0,1,{c},{c + 1}" if mapping == "block" else f"0,{c},1,{c + 1}"
        binding = f"--cpu-bind=verbose,map_cpu:{cpus}"
        args = args.replace("{cpus}", cpus)
        env = {k: v.replace("{cpus}", cpus) for k, v in env.items()}
    own_map = ((declared.get(flavour) or {}) if isinstance(declared.get(flavour), dict)
               else {}).get("cpu_map")
    if own_map:  # the flavour's own map fills its {cpus} only
        assert own_map["order"] == "spread", own_map  # the one order a machine uses here
        cpus = ",".join(str(r * cores // 4) for r in range(4))  # 4 ranks evenly over the cores
        filled = {"{cpus}": cpus, "{ranks_per_socket}": str(4 // node["sockets"]),
                  "{cores_per_rank}": str(cores // 4)}
        for name, value in filled.items():
            args = args.replace(name, value)
            env = {k: v.replace(name, value) for k, v in env.items()}
    launcher = (facts.get("launchers") or {}).get(flavour) or {}
    if path == "local":
        command = launcher.get("command", "srun")  # a step launcher (srun, flux) is not local
        local = command if command not in STEP_LAUNCHERS else None
        full_env = dict(env)
    else:
        local = None
        full_env = {k: str(v) for k, v in ((facts.get("network") or {}).get("env") or {}).items()}
        full_env.update({k: str(v) for k, v in (launcher.get("env") or {}).items()})
        if path != "srun" or env_under_srun:
            full_env.update(env)
    full_env.update(report_env)
    srun_args = launcher.get("args") if launcher.get("command", "srun") == "srun" else None
    distribution = (((facts.get("mapping") or {}).get(mapping) or {}).get("srun")
                    or [f"--distribution={mapping}:{mapping}"])
    text = ROWS[(flavour, path)].format(
        L=str(bin_dir / (local or default_launcher)),
        C=launcher.get("command") if launcher.get("command", "srun") != "srun" else own,
        root="--allow-run-as-root" if os.geteuid() == 0 else "",
        map=args if path != "srun" else "",
        x=" ".join(f"-x {name}" for name in sorted(full_env)),
        srun_args=" ".join(srun_args or [f"--mpi={plugin}"]),
        distribution=" ".join(distribution),
        cpus_per_task=cpus_per_task, binding=binding,
    )
    if (flavour, path) == ("openmpi", "alloc") and "ppr:" in args:
        text = text.replace(" --npernode 4 ", " ")  # the placement's ppr fixes ranks per node
    return text.split(), full_env


@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("machine", MACHINES)
def test_launch_table(machine, flavour, path, mapping, install):
    facts = _machine_for(machine, flavour, path)
    row = ROWS[(flavour, path)]
    if row.startswith("error: "):
        with pytest.raises(LaunchError) as info:
            _command(facts, flavour, path, mapping, install)
        assert row[len("error: "):] in str(info.value)
        return
    cmd = _command(facts, flavour, path, mapping, install)
    argv, env = _expected(machine, flavour, path, mapping, install)
    assert cmd.argv[:len(argv)] == argv
    assert cmd.argv[len(argv)] == str(install / "IMB-MPI1")
    assert cmd.env == env
    assert cmd.expected is not None and cmd.expected.mapping == mapping


def test_betzy_intel_mpi_cyclic_by_mpirun_gets_the_pinning_environment(install):
    """The case of the issue: Betzy starts Intel MPI with its own mpirun inside the allocation;
    a cyclic point must carry I_MPI_PIN_* (it used to get none)."""
    betzy = load_machine_file(REPO / "site-configs" / "betzy" / "machine.yaml")
    cmd = _command(betzy, "intelmpi", "srun", "cyclic", install)  # machine.yaml says mpirun
    assert cmd.argv[:5] == ["mpirun", "-n", "8", "-ppn", "4"]
    assert cmd.env == {"I_MPI_PIN_DOMAIN": "core", "I_MPI_PIN_ORDER": "scatter", "I_MPI_PIN": "1",
                       "I_MPI_PIN_PROCESSOR_EXCLUDE_LIST": "128-255", "I_MPI_DEBUG": "4"}


GASNET_MAPPING = """
mapping:
  block: {srun: ["--distribution=block:block"], gasnet: {args: ["-v"], env: {GASNET_BIND: core}}}
  cyclic: {srun: ["--distribution=cyclic:cyclic"], gasnet: {env: {GASNET_BIND: numa}}}
"""


def test_declared_gasnet_mapping_reaches_every_gasnet_path(install, tmp_path):
    """machine.yaml's mapping.<m>.gasnet is applied locally, in a node-local step, under srun
    (its env) and with the conduit's spawner inside an allocation (args and env)."""
    text = (REPO / "site-configs" / "slurm-ci" / "machine.yaml").read_text()
    text = text[:text.index("\nmapping:")] + GASNET_MAPPING
    (tmp_path / "machine.yaml").write_text(text)
    machine = load_machine_file(tmp_path / "machine.yaml")
    benchmark = registry.get("gasnet-testlarge")
    allocation = Allocation("1", ["n1", "n2"], "debug")
    for conduit, nodes, where in (("smp", 1, None), ("smp", 1, allocation), ("ibv", 2, allocation)):
        stack = resolve(Stack("g", "gasnet", bin=str(install), conduit=conduit))
        point = Point(benchmark.name, (("stack", "g"), ("nodes", nodes), ("ranks_per_node", 2),
                                       ("mapping", "block")))
        cmd = (local_command(point, benchmark, stack, cores=8, machine=machine) if where is None
               else srun_command(point, benchmark, stack, machine, where))
        assert cmd.env["GASNET_BIND"] == "core", (conduit, where)
        if conduit == "smp":  # the spawner gets the launcher arguments
            spawner = cmd.argv.index(str(install / "gasnetrun_smp"))
            assert cmd.argv[spawner:spawner + 4] == [str(install / "gasnetrun_smp"), "-n", "2", "-v"]
        else:  # srun starts the processes: its distribution, the placement's variables
            assert "--distribution=block:block" in cmd.argv and "-v" not in cmd.argv[2:]
    ibv = resolve(Stack("g", "gasnet", bin=str(install), conduit="ibv"))
    own = Machine("x", None, {**machine.facts, "launchers": {"gasnet": {"command": "gasnetrun_ibv"}}})
    point = Point(benchmark.name, (("stack", "g"), ("nodes", 2), ("ranks_per_node", 2),
                                   ("mapping", "block")))
    cmd = srun_command(point, benchmark, ibv, own, allocation)
    assert cmd.argv[:6] == ["gasnetrun_ibv", "-n", "4", "-N", "2", "-v"]
    assert cmd.env == {"GASNET_BIND": "core"}


def test_oversubscribed_open_mpi_placement_allows_overload(install):
    local = load_machine_file(REPO / "site-configs" / "local" / "machine.yaml")
    stack = resolve(Stack("o", "openmpi", bin=str(install)), machine_launcher(local, "openmpi", None))
    benchmark = registry.get("imb-mpi1")
    point = Point(benchmark.name, (("stack", "o"), ("ranks_per_node", 4), ("mapping", "cyclic")))
    cmd = local_command(point, benchmark, stack, cores=2, machine=local)
    assert cmd.oversubscribed and cmd.argv[0] == str(install / "mpirun.openmpi")
    i = cmd.argv.index("--map-by")
    assert cmd.argv[i - 1:i + 4] == ["--oversubscribe", "--map-by", "numa:OVERSUBSCRIBE",
                                     "--bind-to", "core:overload-allowed"]


def test_a_machine_mapping_for_an_unknown_flavour_is_rejected(tmp_path):
    text = (REPO / "site-configs" / "slurm-ci" / "machine.yaml").read_text()
    (tmp_path / "machine.yaml").write_text(text.replace("intelmpi: {env:", "mvapich: {env:", 1))
    with pytest.raises(Exception) as info:
        load_machine_file(tmp_path / "machine.yaml")
    assert "mvapich" in str(info.value)


@pytest.mark.parametrize("path", PATHS)
def test_a_per_size_open_mpi_algorithm_is_launched_as_a_rules_file_on_every_path(install, path,
                                                                                  tmp_path):
    """Locally, by srun and by mpirun in an allocation: the forced variable is replaced by the
    coll/tuned rules file for the launch's ranks (written where the run happens, the campaign's
    directory on a shared file system) and exported to every rank; other flavours get nothing."""
    from commstack.flavours import ompi_coll_rules as rules

    facts = _machine_for("slurm-ci", "openmpi", path)
    benchmark = registry.get("imb-mpi1")
    stack = Stack("s", "openmpi", bin=str(install))
    allocation = None if path == "local" else Allocation("1", ["n1", "n2", "n3"], "debug")
    resolved = resolve(stack, machine_launcher(facts, "openmpi", allocation))
    nodes = 1 if path == "local" else 2
    point = Point(benchmark.name, (("stack", "s"), ("nodes", nodes), ("ranks_per_node", 4),
                                   ("mca.coll_tuned_alltoall_algorithm", "1:0-1023;2:1024-")))
    cmd = (local_command(point, benchmark, resolved, cores=8, machine=facts) if allocation is None
           else srun_command(point, benchmark, resolved, facts, allocation))
    assert "OMPI_MCA_coll_tuned_alltoall_algorithm" not in cmd.env
    assert cmd.env[rules.USE_RULES] == "1" and cmd.env[rules.RULES_FILE] == rules.FILE_NAME
    if path != "srun":  # mpirun passes only what -x names to remote ranks
        assert ["-x", rules.RULES_FILE] == cmd.argv[cmd.argv.index(rules.RULES_FILE) - 1:][:2]
    (file,) = cmd.files
    sizes = rules.comm_sizes(4 * nodes)
    assert f"{len(sizes)}  # communicator sizes" in file.text
    assert f"{1024 * 4 * nodes} 2 4 0" in file.text
    placed = cmd.placed(tmp_path)
    assert placed.env[rules.RULES_FILE] == str(tmp_path.resolve() / rules.FILE_NAME)
    assert (tmp_path / rules.FILE_NAME).read_text() == file.text
    for other in flavours.names():
        if other != "openmpi":
            env = {"OMPI_MCA_coll_tuned_alltoall_algorithm": "1:0-1023;2:1024-"}
            assert flavours.get(other).launch_files(env, 8) == (env, ())
    with pytest.raises(LaunchError, match="mca.coll_tuned_alltoall_algorithm='1:0-1023;2:10-'"):
        bad = Point(point.benchmark, tuple((k, "1:0-1023;2:10-" if k.startswith("mca.") else v)
                                           for k, v in point.params))
        (local_command(bad, benchmark, resolved, cores=8, machine=facts) if allocation is None
         else srun_command(bad, benchmark, resolved, facts, allocation))
