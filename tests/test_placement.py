"""Must show (placement): binding reports of real runs are parsed (tests/fixtures/placement, and
other versions' spellings from public documentation); the check tells a placement that
contradicts its mapping from one it cannot verify; real runs of each local flavour carry a
parsed placement, and a run placed against its mapping is `placement-mismatch`, never ok."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import subprocess
from pathlib import Path
from textwrap import dedent
from typing import List, Optional

import pytest
import yaml

from commstack.placement import reports
from commstack.placement.check import CONTRADICTS, VERIFIED, verify
from commstack.placement.model import Expected
from commstack.placement.topology import parse_cpuset, parse_topology
from tests.conftest import REPO
from tests.sweeps import commstack, records, records_csv

FIX = REPO / "tests" / "fixtures" / "placement"
VM = parse_topology((FIX / "topology" / "vm-1numa-2cores.xml").read_text())
FOUR_NUMA = parse_topology((FIX / "topology" / "fake-2packages-4numa-8cores.xml").read_text())


def _text(name: str) -> str:
    return (FIX / name).read_text()


# --- topology ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, cpus", [
    ("0x00000003", {0, 1}),
    ("0x0000000c", {2, 3}),
    ("0xffffffff,0xffffffff", set(range(64))),
    ("0x00000001,,,,,,,0x0", {224}),  # hwloc elides zero words
    ("0x0", set()),
])
def test_hwloc_cpusets(text, cpus):
    assert parse_cpuset(text) == cpus


def test_topologies():
    assert VM.pus == [0, 1] and VM.cores == [{0}, {1}] and VM.numa == {0: {0, 1}}
    assert FOUR_NUMA.numa == {0: {0, 1}, 1: {2, 3}, 2: {4, 5}, 3: {6, 7}}
    assert FOUR_NUMA.cores_in_numa(2) == 2 and FOUR_NUMA.numa_of([4]) == [2]


# --- parsers: real output captured here --------------------------------------------------------

# file, parser, [(rank, host, cpus)] (cpus: OS processors, through the VM's topology;
# None: not bound). Hydra names neither rank nor host: rank None, host "node <n>".
PARSED = [
    ("intelmpi-2021.18/local-block.txt", "intelmpi", [(0, "vm", [0]), (1, "vm", [1])]),
    ("intelmpi-2021.18/local-oversubscribed.txt", "intelmpi",
     [(0, "vm", [0]), (1, "vm", [1]), (2, "vm", [0]), (3, "vm", [1])]),
    ("intelmpi-2021.18/local-pin-off.txt", "intelmpi", [(0, "vm", [0, 1]), (1, "vm", [0, 1])]),
    ("intelmpi-2021.18/srun-cyclic.txt", "intelmpi",
     [(0, "n1", [0]), (2, "n1", [1]), (1, "n2", [0]), (3, "n2", [1])]),
    ("intelmpi-2021.18/srun-cyclic.txt", "slurm",
     [(0, "n1", [0]), (2, "n1", [1]), (1, "n2", [0]), (3, "n2", [1])]),
    ("intelmpi-2021.18/mpirun-in-allocation-cyclic.txt", "intelmpi",
     [(0, "n1", [0]), (1, "n1", [1]), (2, "n2", [0]), (3, "n2", [1])]),
    ("openmpi-4.1.4/local-cyclic.txt", "openmpi", [(0, "vm", [0]), (1, "vm", [1])]),
    ("openmpi-4.1.4/local-oversubscribed.txt", "openmpi",
     [(0, "vm", [0]), (1, "vm", [1]), (2, "vm", [0]), (3, "vm", [1])]),
    ("openmpi-4.1.4/local-bind-none.txt", "openmpi", [(0, "vm", None), (1, "vm", None)]),
    ("openmpi-4.1.4/srun-block.txt", "openmpi", []),  # no mpirun, no Open MPI report
    ("openmpi-4.1.4/srun-block.txt", "slurm",
     [(0, "n1", [0]), (1, "n1", [1]), (2, "n2", [0]), (3, "n2", [1])]),
    ("openmpi-4.1.4/mpirun-in-allocation-cyclic.txt", "openmpi",
     [(0, "n1", [0]), (1, "n1", [1]), (2, "n2", [0]), (3, "n2", [1])]),
    ("mpich-4.0.2/local-block.txt", "hydra", [(None, "node 1", [0]), (None, "node 1", [1])]),
    ("mpich-4.0.2/local-bind-socket.txt", "hydra",
     [(None, "node 1", [0, 1]), (None, "node 1", [0, 1])]),
    ("mpich-4.0.2/local-no-bind.txt", "hydra", []),
    ("mpich-4.0.2/mpiexec-in-allocation-block.txt", "hydra",
     [(None, "node 1", [0]), (None, "node 1", [1]), (None, "node 2", [0]), (None, "node 2", [1])]),
    ("slurm-22.05/cpu-bind-none.txt", "slurm", [(0, "n1", None), (1, "n1", None)]),
    ("slurm-22.05/cpu-bind-map.txt", "slurm", [(0, "n1", [1]), (1, "n1", [0])]),
]


def _ranks(text: str, parser: str, topology=VM, nodes: int = 1) -> List[tuple]:
    result = verify(Expected(None, 2, nodes, False, (parser,)), text, topology)
    return [(r["rank"], r["host"] or f"node {r['node']}", r["cpus"]) for r in result["ranks"]]


@pytest.mark.parametrize("name, parser, ranks", PARSED)
def test_real_reports_parse(name, parser, ranks):
    assert _ranks(_text(name), parser) == ranks


# Other versions' spellings, quoted from public documentation and tutorials (where from: the
# comment). Open MPI 5 (PRRTE) names logical cores; hwloc's logical order maps them.
PUBLIC = [
    # Open MPI 5 documentation, "mpirun --report-bindings --map-by package --bind-to core"
    ("[b5227] Rank 0 bound to package[0][core:L0]\n[b5227] Rank 2 bound to package[1][core:L4]",
     "openmpi", [(0, "b5227", [0]), (2, "b5227", [4])]),
    # PRRTE documentation, "prun --np 4 --map-by core --bind-to core:REPORT"
    ("[node01:103137] MCW rank 0 bound to package[0][core:0]\n"
     "[node01:103137] MCW rank 1 bound to package[0][core:1]",
     "openmpi", [(0, "node01", [0]), (1, "node01", [1])]),
    # oracle-japan/ocitutorials, Open MPI 5 on BM.Standard.E5 ("core:0-23"-style ranges)
    ("[inst-e5-ol95-nps1:15420] Rank 0 bound to package[0][core:0-1]\n"
     "[inst-e5-ol95-nps1:15420] Rank 1 bound to package[1][core:4]",
     "openmpi", [(0, "inst-e5-ol95-nps1", [0, 1]), (1, "inst-e5-ol95-nps1", [4])]),
    ("[gpu-host:309064] Rank 1 is not bound (or bound to all available processors)",
     "openmpi", [(1, "gpu-host", None)]),
    # Slurm with hardware threads (ULHPC documentation; a LUMI-style 4-bit-apart mask)
    ("cpu-bind=MASK - aion-0014, task  1  1 [3431379]: mask 0x2 set", "slurm",
     [(1, "aion-0014", [1])]),
    ("cpu-bind=MASK - login08, task  0  0 [2499314]: mask 0x8000000040000000800000004 set",
     "slurm", [(0, "login08", [2, 35, 66, 99])]),
    # Slurm before 17.11 spelled the option cpu_bind
    ("cpu_bind=MASK - c1, task  0  0 [8685]: mask 0x1 set", "slurm", [(0, "c1", [0])]),
    # Intel MPI 2019 style: a list of processors per rank
    ("[0] MPI startup(): ===== CPU pinning =====\n"
     "[0] MPI startup(): Rank    Pid      Node name  Pin cpu\n"
     "[0] MPI startup(): 0       16437    node1      {0,4}\n"
     "[0] MPI startup(): 1       16438    node1      {2,6}", "intelmpi",
     [(0, "node1", [0, 4]), (1, "node1", [2, 6])]),
]


@pytest.mark.parametrize("text, parser, ranks", PUBLIC)
def test_other_versions_spellings_parse(text, parser, ranks):
    assert _ranks(text, parser, FOUR_NUMA) == ranks


def test_hydra_before_mpich_4_printed_instead_of_binding():
    """Hydra's old debug output ("%d " per processor, from its source) came without binding."""
    text = "process 0 binding: 1 0 0 0 0 0 0 0 \nprocess 1 binding: 0 1 0 0 0 0 0 0 \n"
    result = verify(Expected("block", 2, 1, False, ("hydra",)), text, FOUR_NUMA)
    assert result["verdict"] == "contradicts"
    assert reports.OLD_HYDRA_NOTE in result["reasons"]


# --- the check ---------------------------------------------------------------------------------

# file, reports asked for, mapping, ranks per node, nodes, oversubscribed, topology,
# verdict, what the reasons must say
CHECKS = [
    ("intelmpi-2021.18/local-block.txt", ("intelmpi",), "block", 2, 1, False, VM,
     "not verifiable", "one NUMA domain"),
    ("intelmpi-2021.18/local-cyclic.txt", ("intelmpi",), "cyclic", 2, 1, False, VM,
     "not verifiable", "one NUMA domain"),
    ("intelmpi-2021.18/local-block.txt", ("intelmpi",), "block", 2, 1, False, None,
     "not verifiable", "no topology of the node to find NUMA domains"),
    ("openmpi-4.1.4/local-block.txt", ("openmpi",), "block", 2, 1, False, None,
     "not verifiable", "the report names logical processors and no topology maps them"),
    ("intelmpi-2021.18/local-oversubscribed.txt", ("intelmpi",), "block", 4, 1, True, VM,
     "not verifiable", "one NUMA domain"),
    ("intelmpi-2021.18/local-oversubscribed.txt", ("intelmpi",), "block", 4, 1, False, VM,
     "contradicts", "rank 0 and rank 2 on vm share core 0"),
    ("intelmpi-2021.18/local-pin-off.txt", ("intelmpi",), "cyclic", 2, 1, False, VM,
     "contradicts", "rank 0 on vm is bound to every processor of the node"),
    ("intelmpi-2021.18/local-domain-node.txt", ("intelmpi",), "block", 2, 1, False, VM,
     "contradicts", "bound to every processor"),
    ("intelmpi-2021.18/srun-cyclic.txt", ("intelmpi", "slurm"), "cyclic", 2, 2, False, VM,
     "not verifiable", "one NUMA domain"),
    ("openmpi-4.1.4/local-block.txt", ("openmpi",), "block", 2, 1, False, VM,
     "not verifiable", "one NUMA domain"),
    ("openmpi-4.1.4/local-bind-none.txt", ("openmpi",), "cyclic", 2, 1, False, VM,
     "contradicts", "rank 1 on vm is not bound"),
    ("openmpi-4.1.4/local-bind-socket.txt", ("openmpi",), "block", 2, 1, False, VM,
     "contradicts", "is not bound"),
    ("openmpi-4.1.4/srun-block.txt", ("openmpi", "slurm"), "block", 2, 2, False, VM,
     "not verifiable", "one NUMA domain"),
    ("openmpi-4.1.4/mpirun-in-allocation-cyclic.txt", ("openmpi",), "cyclic", 2, 2, False, VM,
     "not verifiable", "one NUMA domain"),
    ("mpich-4.0.2/local-cyclic.txt", ("hydra",), "cyclic", 2, 1, False, VM,
     "not verifiable", "one NUMA domain"),
    ("mpich-4.0.2/local-bind-socket.txt", ("hydra",), "block", 2, 1, False, VM,
     "contradicts", "process 0 and process 1 on node 1 share core 0, 1"),
    ("mpich-4.0.2/local-no-bind.txt", ("hydra",), "block", 2, 1, False, VM,
     "not reported", "no hydra binding report"),
    ("mpich-4.0.2/mpiexec-in-allocation-block.txt", ("hydra",), "block", 2, 2, False, VM,
     "not verifiable", "one NUMA domain"),
    ("slurm-22.05/cpu-bind-none.txt", ("slurm",), "block", 2, 1, False, VM,
     "contradicts", "rank 0 on n1 is not bound"),
    ("slurm-22.05/cpu-bind-sockets.txt", ("slurm",), "block", 2, 1, False, VM,
     "contradicts", "bound to every processor"),
    # hydra's real plans on a 4-NUMA topology, each checked against both mappings
    ("mpich-4.0.2/fake-4numa-block.txt", ("hydra",), "block", 4, 1, False, FOUR_NUMA,
     "verified", "block over 4 NUMA domains"),
    ("mpich-4.0.2/fake-4numa-cyclic.txt", ("hydra",), "cyclic", 4, 1, False, FOUR_NUMA,
     "verified", "cyclic over 4 NUMA domains"),
    ("mpich-4.0.2/fake-4numa-block.txt", ("hydra",), "cyclic", 4, 1, False, FOUR_NUMA,
     "contradicts", "cyclic: 4 consecutive ranks from process 0 on node 1 use 2 of 4 NUMA "
     "domains: domains by rank 0 0 1 1"),
    ("mpich-4.0.2/fake-4numa-cyclic.txt", ("hydra",), "block", 4, 1, False, FOUR_NUMA,
     "contradicts", "block: NUMA domain 0 on node 1 holds 1 rank(s) with room for 2"),
]


@pytest.mark.parametrize("name, asked, mapping, per_node, nodes, oversubscribed, topology, "
                         "verdict, reason", CHECKS)
def test_placement_check(name, asked, mapping, per_node, nodes, oversubscribed, topology,
                         verdict, reason):
    result = verify(Expected(mapping, per_node, nodes, oversubscribed, asked), _text(name),
                    topology)
    assert result["verdict"] == verdict, result["summary"]
    assert reason in result["summary"]
    assert result["summary"].startswith(verdict)


def test_the_first_report_asked_for_wins():
    """The MPI's own report comes first (it names ranks and hosts as the MPI sees them); srun's
    is read when the MPI printed none (Open MPI and MPICH started by srun)."""
    result = verify(Expected("cyclic", 2, 2, False, ("intelmpi", "slurm")),
                    _text("intelmpi-2021.18/srun-cyclic.txt"), VM)
    assert result["source"] == reports.LABELS["intelmpi"]
    assert verify(Expected("cyclic", 2, 2, False, ("openmpi", "slurm")),
                  _text("openmpi-4.1.4/srun-block.txt"), VM)["source"] == reports.LABELS["slurm"]


@pytest.mark.parametrize("name, asked, order, verdict, reason", [
    # srun steps: --distribution=block:... keeps a node's ranks consecutive, cyclic:... deals
    # them round-robin; each capture is checked against the mapping of the other run too.
    ("intelmpi-2021.18/srun-block.txt", ("intelmpi", "slurm"), "block", "not verifiable",
     "one NUMA domain"),
    ("intelmpi-2021.18/srun-cyclic.txt", ("intelmpi", "slurm"), "cyclic", "not verifiable",
     "one NUMA domain"),
    ("intelmpi-2021.18/srun-cyclic.txt", ("intelmpi", "slurm"), "block", "contradicts",
     "block over nodes: n1 holds ranks 0, 2, which are not consecutive"),
    ("intelmpi-2021.18/srun-block.txt", ("intelmpi", "slurm"), "cyclic", "contradicts",
     "cyclic over nodes: ranks 0 and 1 are both on n1"),
    ("openmpi-4.1.4/srun-block.txt", ("openmpi", "slurm"), "cyclic", "contradicts",
     "cyclic over nodes: ranks 0 and 1 are both on n1"),
    ("mpich-4.0.2/srun-cyclic.txt", ("hydra", "slurm"), "block", "contradicts",
     "block over nodes: n1 holds ranks 0, 2"),
])
def test_srun_steps_over_nodes(name, asked, order, verdict, reason):
    result = verify(Expected(order, 2, 2, False, asked, node_order=order), _text(name), VM)
    assert result["verdict"] == verdict and reason in result["summary"], result["summary"]


def test_no_mapping_is_recorded_not_judged():
    result = verify(Expected(None, 2, 1, False, ("openmpi",)),
                    _text("openmpi-4.1.4/local-bind-none.txt"), VM)
    assert result["verdict"] == "not checked" and len(result["ranks"]) == 2


# --- real runs -------------------------------------------------------------------------------

def _this_node_numa_domains() -> Optional[int]:
    """NUMA domains of this node, or None without hwloc's lstopo (records then have no topology)."""
    if not shutil.which("lstopo"):
        return None
    out = subprocess.run(["lstopo", "--of", "xml", "-"], capture_output=True, text=True)
    return len(parse_topology(out.stdout).numa) if out.returncode == 0 else None


STACKS = {
    "intelmpi": 'impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}',
    "openmpi": "ompi: {flavour: openmpi, bin: BIN}",
    "mpich": "mpich: {flavour: mpich, bin: BIN}",
}
LABEL = {"intelmpi": reports.LABELS["intelmpi"], "openmpi": reports.LABELS["openmpi"],
         "mpich": reports.LABELS["hydra"]}


def _matrix(tmp_path: Path, bins: dict, name: str) -> Path:
    lines = [STACKS[f].replace("BIN", f'"{bins[f]}"') for f in bins]
    path = tmp_path / "matrices" / "local" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent("""
        benchmark: imb-mpi1
        repeats: 1
        timeout: 120
        stacks:
        """) + "".join(f"  {line}\n" for line in lines) + dedent(f"""
        parameters: {{benchmarks: PingPong, msglog: "0:2", iter: 10, ranks_per_node: 2}}
        product:
          stack: [{", ".join(line.split(":")[0] for line in lines)}]
          mapping: [block, cyclic]
        """))
    return path


@pytest.mark.mpi
def test_local_runs_of_each_flavour_carry_a_parsed_placement(local_imb_bins, tmp_path):
    matrix = _matrix(tmp_path, local_imb_bins, "placed")
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    root = tmp_path / "results" / "local" / "placed"
    recs = records(root)
    flavours = {r["stack_info"]["flavour"] for r in recs}
    assert flavours == set(local_imb_bins) and len(recs) == 2 * len(local_imb_bins)
    assert run.returncode == 0, run.stderr[-3000:]
    domains = _this_node_numa_domains()
    for rec in recs:
        placement = rec["placement"]
        assert rec["status"] == "ok" and placement["mapping"] == rec["params"]["mapping"]
        assert placement["source"] == LABEL[rec["stack_info"]["flavour"]]
        ranks = placement["ranks"]
        assert len(ranks) == 2 and all(r["bound"] and r["cpus"] for r in ranks)
        if domains is None:  # no topology: processors are checked, NUMA domains cannot be
            assert not set(ranks[0]["cpus"]) & set(ranks[1]["cpus"])
            assert placement["verdict"] == "not verifiable", placement["summary"]
            continue
        assert not set(ranks[0]["cores"]) & set(ranks[1]["cores"])  # a core each
        if domains == 1:
            assert placement["summary"] == "not verifiable: one NUMA domain"
        else:  # a machine with several NUMA domains tells block from cyclic
            assert placement["verdict"] in ("verified", "contradicts"), placement["summary"]
    rows = list(csv.DictReader(io.StringIO(records_csv(root))))
    assert {r["placement"] for r in rows} == {r["placement"]["verdict"] for r in recs}


BAD_PLACEMENT = """
mapping:
  block:
    openmpi: ["--map-by", "core", "--bind-to", "core"]
    mpich: ["-bind-to", "core", "-map-by", "core"]
    intelmpi: {env: {I_MPI_PIN_DOMAIN: core, I_MPI_PIN_ORDER: compact}}
  cyclic:
    openmpi: ["--map-by", "numa", "--bind-to", "none"]
    mpich: ["-bind-to", "user:0,0"]
    intelmpi: {env: {I_MPI_PIN_PROCESSOR_LIST: "0"}}
"""


@pytest.mark.mpi
def test_a_run_placed_against_its_mapping_is_flagged_never_ok(local_imb_bins, tmp_path,
                                                              monkeypatch):
    """machine.yaml tells every MPI a cyclic placement that is not one (no binding, or both
    ranks on processor 0): those runs are `placement-mismatch`, counted as failed, shown by
    status and report, retried by --retry-failed; the block runs stay ok."""
    site = tmp_path / "site" / "local"
    site.mkdir(parents=True)
    facts = (REPO / "site-configs" / "local" / "machine.yaml").read_text()
    (site / "machine.yaml").write_text(facts[:facts.index("\nmapping:")] + BAD_PLACEMENT)
    monkeypatch.setenv("COMMSTACK_SITE_CONFIGS", str(site.parent))
    matrix = _matrix(tmp_path, local_imb_bins, "misplaced")
    root = tmp_path / "results" / "local" / "misplaced"
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"), "--report")
    assert run.returncode == 3, run.stderr[-3000:]
    recs = records(root)
    assert len(recs) == 2 * len(local_imb_bins)
    for rec in recs:  # the sweep's log says why each failed run failed
        if rec["status"] != "ok":
            assert f"    placement {rec['placement']['summary']} (misplaced/points/" in run.stdout
    for rec in recs:
        placement = rec["placement"]
        if rec["params"]["mapping"] == "block":
            assert rec["status"] == "ok", placement["summary"]
            continue
        assert rec["status"] == "placement-mismatch" and placement["verdict"] == "contradicts"
        assert rec["parsed"], "the numbers are kept, under their real placement"
        assert any(n.startswith("placement contradicts: ") for n in rec["notes"])
        # "share core" with the node's topology; "share processor" without hwloc's lstopo
        assert ("is not bound" in placement["summary"] or "share core" in placement["summary"]
                or "share processor" in placement["summary"]), placement["summary"]
    n = len(local_imb_bins)
    status = commstack("status", str(root))
    assert status.returncode == 3 and f"{n} done, {n} failed" in status.stdout
    report = (root / "report" / "report.md").read_text()
    assert report.count("placement-mismatch") >= n
    again = commstack("run", str(matrix), "--out", str(tmp_path / "results"), "--retry-failed")
    assert again.returncode == 3 and f"{n} runs now, {n} already done" in again.stderr
    retried = [r for r in records(root) if r["attempt"] == 2]
    assert len(retried) == n and {r["status"] for r in retried} == {"placement-mismatch"}
    assert json.loads((root / "campaign.json").read_text())["benchmark"] == "imb-mpi1"


SPREAD_PLACEMENT = """
mapping:
  block:
    intelmpi: {env: {I_MPI_PIN_PROCESSOR_LIST: "{cpus}"}, cpu_map: {order: spread, one_rank: 1}}
"""


@pytest.mark.mpi
def test_a_flavours_own_cpu_map_pins_intel_mpi_and_is_verified(local_imb_bins, tmp_path,
                                                               monkeypatch):
    """machine.yaml's mapping.<m>.intelmpi.cpu_map (Betzy's bench.xml processor list): Intel MPI
    gets the map as I_MPI_PIN_PROCESSOR_LIST and the record checks each rank on its CPU of the
    map. One rank per node with one_rank 1 puts it on CPU 1, which Intel MPI's own block would
    not (CPU 0): the verdict is the map's, read from Intel MPI's pin report."""
    if "intelmpi" not in local_imb_bins:
        pytest.skip("skipped: no Intel MPI (pip impi-rt) here")
    site = tmp_path / "site" / "local"
    site.mkdir(parents=True)
    facts = (REPO / "site-configs" / "local" / "machine.yaml").read_text()
    (site / "machine.yaml").write_text(facts[:facts.index("\nmapping:")] + SPREAD_PLACEMENT)
    monkeypatch.setenv("COMMSTACK_SITE_CONFIGS", str(site.parent))
    matrix = _matrix(tmp_path, {"intelmpi": local_imb_bins["intelmpi"]}, "spread")
    text = matrix.read_text().replace("ranks_per_node: 2}", "}").replace(
        "mapping: [block, cyclic]", "mapping: [block]\n  ranks_per_node: [1, 2]")
    matrix.write_text(text)
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    assert run.returncode == 0, run.stderr[-3000:]
    recs = {r["params"]["ranks_per_node"]: r
            for r in records(tmp_path / "results" / "local" / "spread")}
    assert sorted(recs) == [1, 2]
    for k, cpus in ((1, [1]), (2, [0, 1])):
        placement = recs[k]["placement"]
        assert [r["cpus"] for r in placement["ranks"]] == [[c] for c in cpus], placement
        if _this_node_numa_domains() is None:  # no hwloc: CPUs compared, cores cannot be
            assert placement["summary"] == ("not verifiable: no topology: cores not compared, "
                                            "only CPUs"), placement["summary"]
            continue
        assert placement["verdict"] == "verified", placement["summary"]
        assert f"every rank on its CPU of the machine's map ({', '.join(map(str, cpus))})" \
            in placement["summary"]


def test_spread_lays_ranks_evenly_over_the_cores_and_refuses_an_uneven_count():
    """Betzy's bench.xml lists: seq 0 2 127 at 64 ranks per node, seq 0 1 127 at 128."""
    from commstack.placement.cpu_map import CpuMap, CpuMapError
    betzy = CpuMap("spread", sockets=2, cores_per_socket=64, numa_per_socket=4)
    assert betzy.cpus(64) == tuple(range(0, 128, 2))
    assert betzy.cpus(128) == tuple(range(128))
    assert betzy.cpus(4) == (0, 32, 64, 96)
    with pytest.raises(CpuMapError, match="48 ranks per node do not divide them"):
        betzy.cpus(48)


PPR_PLACEMENT = """
mapping:
  block:
    openmpi:
      args: ["--map-by", "ppr:{ranks_per_socket}:socket:pe={cores_per_rank}", "--bind-to", "core"]
      cpu_map: {order: spread}
"""


@pytest.mark.mpi
def test_open_mpis_ppr_placeholders_launch_and_are_checked_against_the_spread_map(
        local_imb_bins, tmp_path, monkeypatch):
    """Betzy's published Open MPI runs: mpirun -map-by ppr:32:socket:pe=2 -bind-to core, from
    machine.yaml's mapping.block.openmpi with its own spread map. Here, one rank per core of
    this node (ppr:<cores>:socket:pe=1): Open MPI places them, the record checks each on its
    map CPU. (A rank on several cores needs a node larger than a rank's share: below, with a
    report in Open MPI 4.1's words.)"""
    if "openmpi" not in local_imb_bins:
        pytest.skip("skipped: no Open MPI (Debian openmpi-bin) here")
    if _this_node_numa_domains() is None:
        pytest.skip("skipped: no hwloc lstopo: the node's sockets and cores cannot be read")
    site = tmp_path / "site" / "local"
    site.mkdir(parents=True)
    text = (REPO / "site-configs" / "local" / "machine.yaml").read_text()
    node = yaml.safe_load(text)["node"]
    (site / "machine.yaml").write_text(text[:text.index("\nmapping:")] + PPR_PLACEMENT)
    monkeypatch.setenv("COMMSTACK_SITE_CONFIGS", str(site.parent))
    matrix = _matrix(tmp_path, {"openmpi": local_imb_bins["openmpi"]}, "ppr")
    k = node["sockets"] * node["cores_per_socket"]
    matrix.write_text(matrix.read_text().replace("ranks_per_node: 2}", "}").replace(
        "mapping: [block, cyclic]", f"mapping: [block]\n  ranks_per_node: [{k}]"))
    run = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    (rec,) = records(tmp_path / "results" / "local" / "ppr")
    assert f"ppr:{node['cores_per_socket']}:socket:pe=1" in " ".join(rec["argv"]), rec["argv"]
    assert run.returncode == 0, run.stderr[-3000:]
    placement = rec["placement"]
    assert placement["verdict"] == "verified", placement["summary"]
    assert f"every rank on its CPU of the machine's map ({', '.join(map(str, range(k)))})" \
        in placement["summary"]


def _ompi_pe_report(first_cores: List[int], pe: int) -> str:
    """Open MPI 4.1's --report-bindings lines on 2 sockets x 4 cores, each rank on ``pe`` cores."""
    lines = []
    for rank, first in enumerate(first_cores):
        cores = range(first, first + pe)
        where = ", ".join(f"socket {c // 4}[core {c}[hwt 0]]" for c in cores)
        marks = ["B" if c in cores else "." for c in range(8)]
        lines.append(f"[n1:4242] MCW rank {rank} bound to {where}: "
                     f"[{'/'.join(marks[:4])}][{'/'.join(marks[4:])}]")
    return "\n".join(lines)


def test_a_spread_map_takes_a_rank_on_its_cpu_and_the_cores_of_its_share():
    """ppr:2:socket:pe=2 on 2 x 4 cores (Betzy's ppr:32:socket:pe=2 in small): each rank on its
    map CPU (0, 2, 4, 6) and the next core; a rank shifted by one core contradicts."""
    expected = Expected("block", 4, 1, False, ("openmpi",), None, (0, 2, 4, 6), None, 2)
    ok = verify(expected, _ompi_pe_report([0, 2, 4, 6], 2), FOUR_NUMA)
    assert ok["verdict"] == VERIFIED, ok["summary"]
    assert "holding at most 2 cores from it" in ok["summary"]
    shifted = verify(expected, _ompi_pe_report([0, 2, 5, 6], 1), FOUR_NUMA)
    assert shifted["verdict"] == CONTRADICTS and "the map puts it on CPU 4" in shifted["summary"]
    one_core = dataclasses.replace(expected, cpu_span=1)  # Intel MPI's list: one CPU a rank
    assert verify(one_core, _ompi_pe_report([0, 2, 4, 6], 2), FOUR_NUMA)["verdict"] == CONTRADICTS
