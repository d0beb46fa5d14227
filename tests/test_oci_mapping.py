"""The OCI BM.Optimized3.36 study's block and cyclic, as `commstack plan` prints them for srun
steps on site-configs/bm-optimized3-36, and as the placement check verifies them.

The study's definition (shared research oci_mapping.md, from oracle-japan/ocitutorials
tutorials/_hpc/benchmark/cpu-binding.md), NPS1, 2 sockets x 18 cores, k ranks per node:
block ``--cpu-bind=map_cpu:`` cores 0..k/2-1 then 18..18+k/2-1 (k=1: 18; k=2 and 36 the same
split); cyclic Slurm's block:cyclic, ranks alternating sockets 0,18,1,19,...
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from textwrap import dedent
from typing import Dict, List, Optional, Tuple

import pytest

from commstack.placement.check import CONTRADICTS, VERIFIED, verify
from commstack.placement.model import Expected
from commstack.placement.topology import parse_topology
from tests.conftest import REPO
from tests.sweeps import commstack, launcher_stand_ins

RANKS_PER_NODE = (1, 2, 4, 8, 16, 32, 36)


def study_block(k: int) -> List[int]:
    if k == 1:
        return [18]
    return list(range(k // 2)) + list(range(18, 18 + k // 2))


def study_cyclic(k: int) -> List[int]:
    if k == 1:
        return [18]  # the study ran one rank per node as block only
    return [(r % 2) * 18 + r // 2 for r in range(k)]


def _plan(tmp_path: Path, env_extra: Optional[Dict[str, str]] = None, extra: str = ""
          ) -> Dict[Tuple[int, str], str]:
    """(ranks per node, mapping) -> the printed command of each point, planned as inside a
    Slurm allocation (SLURM_JOB_ID set: srun steps; plan launches nothing)."""
    path = tmp_path / "matrices" / "bm-optimized3-36" / "oci.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(dedent(f"""
        benchmark: imb-mpi1
        stacks:
          ompi: {{flavour: openmpi, bin: {launcher_stand_ins(tmp_path / "bin")}}}
        parameters: {{executable: "true", nodes: 2{extra}}}
        product:
          ranks_per_node: [{", ".join(map(str, RANKS_PER_NODE))}]
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
    assert len(commands) == 2 * len(RANKS_PER_NODE), out.stdout
    return commands


def test_plan_binds_srun_steps_to_the_studys_cpu_maps(tmp_path):
    commands = _plan(tmp_path)
    for (k, mapping), command in commands.items():
        argv = command.split()
        want = study_block(k) if mapping == "block" else study_cyclic(k)
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
        want = study_block(k) if mapping == "block" else study_cyclic(k)
        assert f"--map-by pe-list={','.join(map(str, want))}:ordered --bind-to core" in command


def _topology() -> str:
    """hwloc XML of BM.Optimized3.36 with SMT off, NPS1: two NUMA nodes of 18 cores."""
    def obj(kind: str, cpus: List[int], index: int, inner: str = "") -> str:
        mask = hex(sum(1 << c for c in cpus))
        return (f'<object type="{kind}" os_index="{index}" cpuset="{mask}">{inner}</object>')
    packages = ""
    for s in range(2):
        cores = "".join(obj("Core", [c], c, obj("PU", [c], c)) for c in range(s * 18, s * 18 + 18))
        packages += obj("Package", list(range(s * 18, s * 18 + 18)), s,
                        obj("NUMANode", list(range(s * 18, s * 18 + 18)), s) + cores)
    return f'<topology>{obj("Machine", list(range(36)), 0, packages)}</topology>'


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
