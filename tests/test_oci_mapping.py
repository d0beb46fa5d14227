"""The OCI BM.Optimized3.36 study's block and cyclic, as `commstack plan` prints them for srun
steps on site-configs/bm-optimized3-36 (node types nps1 and nps2), and as the placement check
verifies them.

The study's definition (shared research oci_mapping.md, from oracle-japan/ocitutorials
tutorials/_hpc/benchmark/cpu-binding.md), 2 sockets x 18 cores, k ranks per node, by NUMA node
(NPS1: 0-17, 18-35; NPS2: 0-8, 9-17, 18-26, 27-35): block k/2 (NPS1) or k/4 (NPS2) consecutive
ranks per NUMA node from its first core (NPS1 k=1: 18; k=36: block:block, every core in order);
cyclic round-robin over the NUMA nodes (NPS1 0,18,1,19,...; NPS2 0,9,18,27,1,10,...). The
functions below follow those words; the document's own examples and tables are checked against
them (and the machine's maps) when the document is here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from textwrap import dedent
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from commstack.machine import MachineError, find_machine
from commstack.matrix.model import MatrixError
from commstack.placement.check import CONTRADICTS, VERIFIED, record_placement, verify
from commstack.placement.model import Expected
from commstack.placement.topology import parse_topology
from commstack.tune.plan import Step
from commstack.tune.step import measured_elsewhere
from tests.conftest import REPO
from tests.sweeps import commstack, launcher_stand_ins

RANKS_PER_NODE = (1, 2, 4, 8, 16, 32, 36)
NPS2_RANKS_PER_NODE = (4, 8, 16, 32, 36)  # the study's NPS2 rows
DOCUMENT = REPO.parent / "shared" / "research" / "oci_mapping.md"
# NUMA nodes' cores per node type, as the document states them (checked against it below)
NUMA = {"nps1": [range(0, 18), range(18, 36)],
        "nps2": [range(0, 9), range(9, 18), range(18, 27), range(27, 36)]}


def study_block(k: int, numa: Sequence[range] = NUMA["nps1"]) -> List[int]:
    """k / (NUMA nodes) consecutive ranks per NUMA node from its first core; k=1: CPU 18."""
    if k == 1:
        return [18]
    per = k // len(numa)
    assert per * len(numa) == k, f"{k} ranks do not split over {len(numa)} NUMA nodes"
    return [cpu for node in numa for cpu in node[:per]]


def study_cyclic(k: int, numa: Sequence[range] = NUMA["nps1"]) -> List[int]:
    """Cores dealt round-robin over the NUMA nodes."""
    if k == 1:
        return [18]  # the study ran one rank per node as block only
    return [numa[r % len(numa)][r // len(numa)] for r in range(k)]


def study(mapping: str, k: int, node_type: str = "nps1") -> List[int]:
    return (study_block if mapping == "block" else study_cyclic)(k, NUMA[node_type])


def _plan(tmp_path: Path, env_extra: Optional[Dict[str, str]] = None, extra: str = "",
          ranks: Sequence[int] = RANKS_PER_NODE, node_type: Optional[str] = None
          ) -> Dict[Tuple[int, str], str]:
    """(ranks per node, mapping) -> the printed command of each point, planned as inside a
    Slurm allocation (SLURM_JOB_ID set: srun steps; plan launches nothing)."""
    path = tmp_path / "matrices" / "bm-optimized3-36" / "oci.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(dedent(f"""
        benchmark: imb-mpi1
        {f"node_type: {node_type}" if node_type else ""}
        stacks:
          ompi: {{flavour: openmpi, bin: {launcher_stand_ins(tmp_path / "bin")}}}
        parameters: {{executable: "true", nodes: 2{extra}}}
        product:
          ranks_per_node: [{", ".join(map(str, ranks))}]
          mapping: [block, cyclic]
        """))
    env = {**os.environ, "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "n1,n2",
           **(env_extra or {})}
    out = commstack("plan", str(path), "--out", str(tmp_path / "results"), env=env)
    assert out.returncode == 0, out.stderr
    commands: Dict[Tuple[int, str], str] = {}
    lines = out.stdout.splitlines()
    for head, command in zip(lines, lines[1:]):
        m = re.search(r"ranks_per_node=(\d+)", head)
        if m and command.startswith("    "):
            mapping = re.search(r"mapping=(\w+)", head).group(1)
            commands[(int(m.group(1)), mapping)] = command.strip()
    assert len(commands) == 2 * len(ranks), out.stdout
    return commands


def test_plan_binds_srun_steps_to_the_studys_cpu_maps(tmp_path):
    commands = _plan(tmp_path)
    for (k, mapping), command in commands.items():
        argv = command.split()
        want = study(mapping, k)
        binding = [a for a in argv if a.startswith("--cpu-bind=")]
        assert binding == ["--cpu-bind=verbose,map_cpu:" + ",".join(map(str, want))], command
        # ranks fill node 1, then node 2; no socket-level distribution that would fill socket 0
        assert "--distribution=block" in argv and not any(
            a.startswith("--distribution=") and ":" in a for a in argv), command
        # whole cores per rank: floor(36 / k) CPUs, SMT off
        assert f"--cpus-per-task={36 // k}" in argv, command


def test_odd_ranks_per_node_have_no_block_split(tmp_path):
    path = tmp_path / "matrices" / "bm-optimized3-36" / "odd.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(dedent("""
        benchmark: imb-mpi1
        stacks:
          ompi: {flavour: openmpi, bin: BIN}
        parameters: {executable: "true", nodes: 2, ranks_per_node: 3, mapping: block}
        """).replace("BIN", str(launcher_stand_ins(tmp_path / "bin"))))
    out = commstack("plan", str(path), env={**os.environ, "SLURM_JOB_ID": "4242"})
    assert out.returncode == 2
    assert "cpu_map" in out.stderr and "3 ranks per node do not split evenly" in out.stderr


def test_open_mpi_own_launcher_gets_the_same_lists(tmp_path):
    """With launchers.openmpi: mpirun (PRRTE), the study's --map-by pe-list=<list>:ordered."""
    site = tmp_path / "site" / "bm-optimized3-36"
    site.mkdir(parents=True)
    facts = (REPO / "site-configs" / "bm-optimized3-36" / "machine.yaml").read_text()
    old = '  openmpi: {command: srun, args: ["--mpi=pmix"]}'
    assert old in facts
    (site / "machine.yaml").write_text(facts.replace(old, "  openmpi: {command: mpirun}"))
    commands = _plan(tmp_path, {"COMMSTACK_SITE_CONFIGS": str(site.parent)})
    for (k, mapping), command in commands.items():
        want = study(mapping, k)
        assert f"--map-by pe-list={','.join(map(str, want))}:ordered --bind-to core" in command


def _topology(node_type: str = "nps1") -> str:
    """hwloc XML of BM.Optimized3.36 with SMT off: two packages of 18 cores, holding the node
    type's NUMA nodes (NPS1: one per package; NPS2: two, each in a Group as hwloc 2 shows)."""
    def obj(kind: str, cpus: Sequence[int], index: int, inner: str = "") -> str:
        mask = hex(sum(1 << c for c in cpus))
        return (f'<object type="{kind}" os_index="{index}" cpuset="{mask}">{inner}</object>')
    numa = NUMA[node_type]
    per_package = len(numa) // 2
    packages = ""
    for s in range(2):
        inner = ""
        for n in range(s * per_package, (s + 1) * per_package):
            cores = "".join(obj("Core", [c], c, obj("PU", [c], c)) for c in numa[n])
            node = obj("NUMANode", numa[n], n) + cores
            inner += obj("Group", numa[n], n, node) if per_package > 1 else node
        packages += obj("Package", range(s * 18, s * 18 + 18), s, inner)
    return f'<topology>{obj("Machine", range(36), 0, packages)}</topology>'


def _srun_report(cpus_by_local: List[int], hosts=("n1", "n2")) -> str:
    """srun --cpu-bind=verbose lines, ranks block over nodes."""
    lines = []
    for n, host in enumerate(hosts):
        for local, cpu in enumerate(cpus_by_local):
            rank = n * len(cpus_by_local) + local
            lines.append(f"cpu-bind=MASK - {host}, task {rank:2d} {local:2d} [1{rank:04d}]: "
                         f"mask {hex(1 << cpu)} set")
    return "\n".join(lines)


@pytest.mark.parametrize("k", (4, 8, 16, 32))
def test_the_check_verifies_the_even_split_and_rejects_socket_0_first(k):
    """The study's block below 36 ranks per node half-fills each socket, which the generic
    block rule (fill a domain first) would reject; with the machine's map the check expects
    exactly the study's cores, and srun's block:block (socket 0 first) contradicts it."""
    topology = parse_topology(_topology())
    expected = Expected("block", k, 2, False, ("slurm",), "block", tuple(study_block(k)))
    ok = verify(expected, _srun_report(study_block(k)), topology)
    assert ok["verdict"] == VERIFIED, ok["summary"]
    filled = verify(expected, _srun_report(list(range(k))), topology)
    assert filled["verdict"] == CONTRADICTS and "the map puts it on CPU 18" in filled["summary"]
    cyclic = Expected("cyclic", k, 2, False, ("slurm",), "block", tuple(study_cyclic(k)))
    assert verify(cyclic, _srun_report(study_cyclic(k)), topology)["verdict"] == VERIFIED
    assert verify(cyclic, _srun_report(study_block(k)), topology)["verdict"] == CONTRADICTS


def test_the_generic_block_rule_would_reject_the_studys_block():
    """Why the map is needed: without it, the even split contradicts "block"."""
    topology = parse_topology(_topology())
    plain = Expected("block", 8, 2, False, ("slurm",), "block")
    assert verify(plain, _srun_report(study_block(8)), topology)["verdict"] == CONTRADICTS


def test_an_srun_without_binding_support_is_not_a_verification():
    topology = parse_topology(_topology())
    expected = Expected("block", 4, 1, False, ("slurm",), "block", tuple(study_block(4)))
    out = verify(expected, "srun: cluster configuration lacks support for cpu binding", topology)
    assert out["verdict"] != VERIFIED


# --- the document's own statements, and the machine's maps per node type ---------------------

def _document() -> str:
    if not DOCUMENT.exists():
        pytest.skip(f"skipped: the study's mapping summary is not here ({DOCUMENT})")
    return DOCUMENT.read_text()


def _ranges(text: str) -> List[range]:
    return [range(int(a), int(b) + 1) for a, b in re.findall(r"(\d+)-(\d+)", text)]


def _row(text: str, nps: int, ranks: str) -> List[str]:
    """The cells (NPS, ranks/node, block, cyclic) of the document's table row."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] == str(nps) and cells[1].startswith(ranks):
            return cells
    raise AssertionError(f"no row NPS {nps}, {ranks} ranks/node in {DOCUMENT.name}")


def _ints(text: str) -> List[int]:
    return [int(x) for x in text.split(",")]


def test_the_numa_nodes_are_the_documents():
    text = " ".join(_document().split())  # the document wraps its lines
    nps1 = re.search(r"NPS1: NUMA 0 = cores (\d+-\d+), NUMA 1 = cores (\d+-\d+)", text)
    assert _ranges(" ".join(nps1.groups())) == NUMA["nps1"]
    nps2 = re.search(r"NPS2: four NUMA nodes of (\d+) cores \(([^)]*)\)", text)
    assert _ranges(nps2.group(2)) == NUMA["nps2"] and all(
        len(r) == int(nps2.group(1)) for r in NUMA["nps2"])
    # and the machine's node types say the same: sockets x NUMA nodes per socket x cores
    machine = find_machine("bm-optimized3-36", REPO)
    for node_type, numa in NUMA.items():
        node = machine.with_node_type(node_type).node
        assert node["sockets"] * node["numa_per_socket"] == len(numa), node_type
        assert node["cores_per_socket"] // node["numa_per_socket"] == len(numa[0]), node_type


def test_the_documents_rules_and_examples_are_these_lists():
    """Each table row's words (k/2, k/4 ranks per NUMA node; rank_ldom; block:block at 36) and
    each literal example give the lists this file expects."""
    text = _document()
    block1 = _row(text, 1, "4, 8, 16, 32")
    assert set(_ints(block1[1].split("(")[0])) >= {8, 16, 32}
    assert "k/2" in block1[2] and "cores 0…k/2−1 then 18…18+k/2−1" in block1[2]
    example = re.search(r"k=4: `([\d,]+)`", block1[2]).group(1)
    assert _ints(example) == study_block(4)
    assert "0,18,1,19" in block1[3] and study_cyclic(4) == [0, 18, 1, 19]
    assert "block:block" in _row(text, 1, "36")[2]
    assert study_block(36) == study_block(36, NUMA["nps2"]) == list(range(36))
    assert _row(text, 1, "1")[2].startswith("`--cpu-bind=map_cpu:18`") and study_block(1) == [18]

    block2 = _row(text, 2, "8, 16, 32")
    assert "k/4 consecutive ranks per NUMA node" in block2[2]
    ldoms = _ints(re.search(r"k=8: `([\d,]+)`", block2[2]).group(1))
    numa_of = {cpu: n for n, cores in enumerate(NUMA["nps2"]) for cpu in cores}
    assert [numa_of[cpu] for cpu in study("block", 8, "nps2")] == ldoms
    assert "rank_ldom" in block2[3] and "round-robin over NUMA nodes" in block2[3]
    for k in (8, 16, 32, 36):
        assert [numa_of[c] for c in study("cyclic", k, "nps2")] == [r % 4 for r in range(k)]
    assert "rank_ldom" in _row(text, 2, "4")[2]  # one rank per NUMA node, on its first core
    assert study("block", 4, "nps2") == [r.start for r in NUMA["nps2"]]
    assert "block:block" in _row(text, 2, "36")[2]

    pe_lists = dict(re.findall(r"(NPS\d), k=\d+: `([\d,]+)`", text))
    assert _ints(pe_lists["NPS1"]) == study("cyclic", 4, "nps1")
    assert _ints(pe_lists["NPS2"]) == study("cyclic", 8, "nps2")
    assert "ppr:<k/2>:package" in text and "ppr:<k/4>:numa" in text


@pytest.mark.parametrize("node_type", sorted(NUMA))
@pytest.mark.parametrize("mapping", ("block", "cyclic"))
def test_the_machines_maps_are_the_studys(node_type, mapping):
    machine = find_machine("bm-optimized3-36", REPO).with_node_type(node_type)
    cpu_map = machine.cpu_map(mapping)
    for k in (4, 8, 16, 32, 36):
        assert list(cpu_map.cpus(k)) == study(mapping, k, node_type), (node_type, mapping, k)


def test_nps2_points_get_the_nps2_maps_in_the_plan(tmp_path):
    """A matrix of node_type nps2 plans srun steps with the NPS2 lists (0,1,9,10,... not the
    socket split 0-3,18-21 of NPS1)."""
    commands = _plan(tmp_path, ranks=NPS2_RANKS_PER_NODE, node_type="nps2")
    for (k, mapping), command in commands.items():
        argv = command.split()
        binding = [a for a in argv if a.startswith("--cpu-bind=")]
        want = study(mapping, k, "nps2")
        assert binding == ["--cpu-bind=verbose,map_cpu:" + ",".join(map(str, want))], command
        assert "--distribution=block" in argv and f"--cpus-per-task={36 // k}" in argv, command
    assert "map_cpu:0,1,9,10,18,19,27,28 " in commands[(8, "block")]


def test_nps2_block_needs_a_split_over_four_numa_nodes(tmp_path):
    path = tmp_path / "matrices" / "bm-optimized3-36" / "two.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(dedent("""
        benchmark: imb-mpi1
        node_type: nps2
        stacks:
          ompi: {flavour: openmpi, bin: BIN}
        parameters: {executable: "true", nodes: 2, ranks_per_node: 2, mapping: block}
        """).replace("BIN", str(launcher_stand_ins(tmp_path / "bin"))))
    out = commstack("plan", str(path), env={**os.environ, "SLURM_JOB_ID": "4242"})
    assert out.returncode == 2
    assert "cpu_map" in out.stderr and "4 NUMA domains" in out.stderr
    assert "2 ranks per node do not split evenly" in out.stderr


@pytest.mark.parametrize("k", (8, 16, 32, 36))
def test_the_record_verifies_nps2_maps_against_four_numa_nodes(k, tmp_path):
    """The record's placement verdict (saved topology, srun's verbose masks) for NPS2: the
    study's lists verified; NPS1's socket split on an NPS2 node contradicts the NPS2 map."""
    xml = tmp_path / "topology.xml"
    xml.write_text(_topology("nps2"))
    assert len(parse_topology(xml.read_text()).numa) == 4
    block, cyclic = study("block", k, "nps2"), study("cyclic", k, "nps2")
    expected = Expected("block", k, 2, False, ("slurm",), "block", tuple(block))
    placed = record_placement(expected, _srun_report(block), xml)
    assert placed["verdict"] == VERIFIED and placed["numa_domains"] == 4, placed["summary"]
    if k < 36:
        wrong = record_placement(expected, _srun_report(study("block", k, "nps1")), xml)
        assert wrong["verdict"] == CONTRADICTS and "the map puts it on CPU" in wrong["summary"]
        # the generic rule (fill a NUMA node first) would reject the study's block: the map is
        # what makes it checkable
        plain = Expected("block", k, 2, False, ("slurm",), "block")
        assert record_placement(plain, _srun_report(block), xml)["verdict"] == CONTRADICTS
    mapped = Expected("cyclic", k, 2, False, ("slurm",), "block", tuple(cyclic))
    assert record_placement(mapped, _srun_report(cyclic), xml)["verdict"] == VERIFIED
    # the map's cyclic is cyclic by the generic rule too: every 4 consecutive ranks on 4 nodes
    plain = Expected("cyclic", k, 2, False, ("slurm",), "block")
    assert record_placement(plain, _srun_report(cyclic), xml)["verdict"] == VERIFIED
    assert record_placement(mapped, _srun_report(block), xml)["verdict"] == CONTRADICTS


# --- node types -------------------------------------------------------------------------------

def test_node_types_are_the_same_from_every_node_type():
    machine = find_machine("bm-optimized3-36", REPO)
    nps2 = machine.with_node_type("nps2")
    assert machine.node_types == nps2.node_types == ["nps1", "nps2"]
    assert (machine.node_type, nps2.node_type) == ("nps1", "nps2")
    assert nps2.node["numa_per_socket"] == 2 and nps2.scheduler["partition"] == "nps2"
    back = nps2.with_node_type("nps1")
    assert back.node_type == "nps1" and back.node == machine.node
    assert back.scheduler == machine.scheduler and back.node_types == ["nps1", "nps2"]
    assert nps2.with_node_type("nps2") is nps2
    with pytest.raises(MachineError, match=r"no node type 'nps4'; node types: nps1, nps2"):
        nps2.with_node_type("nps4")


def test_a_tuning_step_on_an_unknown_node_type_is_refused_on_every_node_type():
    machine = find_machine("bm-optimized3-36", REPO)
    for here in (machine, machine.with_node_type("nps2")):
        with pytest.raises(MatrixError, match=r"node_type 'nps4' is not a node type of "
                                              r"bm-optimized3-36 \(nps1, nps2\)"):
            measured_elsewhere(Step("tls-rndv", node_type="nps4"), here)
        assert measured_elsewhere(Step("s", node_type="nps1"), here) == (
            None if here.node_type == "nps1" else "nps1")
