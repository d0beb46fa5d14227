"""The simulated flavour `smpi`: platforms from machine facts, where ranks go, what the knobs
become, what SMPI's own output says; and (where SimGrid and an SMPI build of IMB are here)
simulated campaigns run end to end through `commstack run`."""

from __future__ import annotations

import copy
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from commstack.flavours import FlavourError, Request, smpi, smpi_platform
from commstack.machine import load_machine_file
from commstack.placement.check import CONTRADICTS, NOT_VERIFIABLE, VERIFIED, verify
from commstack.placement.model import Expected
from commstack.placement.reports import smpi as read_map
from tests.conftest import REPO

FIXTURES = Path(__file__).parent / "fixtures" / "smpi"
SIMULATED = ("bm-optimized3-36", "betzy", "perlmutter")


def _facts(machine: str) -> dict:
    return load_machine_file(REPO / "site-configs" / machine / "machine.yaml").facts


def _model(machine: str, node_type=None) -> smpi_platform.Model:
    found = load_machine_file(REPO / "site-configs" / machine / "machine.yaml")
    return smpi_platform.model(found.with_node_type(node_type).facts)


# --- the model --------------------------------------------------------------------------


@pytest.mark.parametrize("machine", SIMULATED)
def test_every_simulated_site_has_a_complete_model_with_its_placeholders_named(machine):
    m = _model(machine)
    declared = yaml.safe_load((REPO / "site-configs" / machine / "machine.yaml").read_text())
    verify_count = yaml.safe_dump(declared["simulation"]).count("VERIFY")
    assert len(m.placeholders) == verify_count  # every VERIFY is run with its placeholder, named
    line = smpi_platform.describe(m, 2)
    assert line.startswith(m.label) and all(p in line for p in m.placeholders)
    for fact in m.facts:  # every number cites a declared source
        assert fact.source in dict(m.sources)


def test_a_node_type_on_another_network_has_no_simulation():
    with pytest.raises(FlavourError, match="no simulation: facts for node type 'gpu'"):
        _model("perlmutter", "gpu")
    assert _model("bm-optimized3-36", "nps2").domains == 4  # NPS2: 4 NUMA hosts per node


@pytest.mark.parametrize("change, message", [
    (lambda s: s["network"].pop("latency"), r"simulation.network.latency is missing"),
    (lambda s: s["network"].update(latency={"value": "fast", "source": "run-imb"}),
     r"'fast' is not a time such as 1.5us"),
    (lambda s: s["network"].update(bandwidth={"value": "100Gbit", "source": "cn-spinup"}),
     r"is not a bandwidth such as 12.5GBps"),
    (lambda s: s["node"].update(latency={"value": "VERIFY", "source": "unstated"}),
     r"a VERIFY value needs a placeholder"),
    (lambda s: s["node"].update(latency={"value": "1us", "source": "nowhere"}),
     r"source 'nowhere' is not a key of simulation.sources"),
    (lambda s: s["network"]["topology"].update(kind="torus"), r"kind 'torus' is not one of"),
    (lambda s: s["network"]["topology"].update(spines={"value": "many", "source": "unstated"}),
     r"topology.spines must be a positive whole number"),
])
def test_a_broken_simulation_fact_is_named(change, message):
    facts = copy.deepcopy(_facts("bm-optimized3-36"))
    change(facts["simulation"])
    with pytest.raises(FlavourError, match=message):
        smpi_platform.model(facts)


def test_units_are_simgrids():
    assert smpi_platform.bandwidth("100Gbps", "x") == 12.5e9
    assert smpi_platform.bandwidth("12.5GBps", "x") == 12.5e9
    assert smpi_platform.bandwidth("1KiBps", "x") == 1024
    assert smpi_platform.seconds("1.66us", "x") == pytest.approx(1.66e-6)
    for bad in ("1e400GBps", "-1GBps", "0Bps"):
        with pytest.raises(FlavourError):
            smpi_platform.bandwidth(bad, "x")


# --- the platform file ------------------------------------------------------------------


def _links(xml: str) -> "tuple[dict, dict]":
    root = ET.fromstring(xml.split("\n", 2)[2])  # past the XML declaration and DOCTYPE
    zone = root.find("zone")
    links = {link.get("id"): link for link in zone.findall("link")}
    routes = {(r.get("src"), r.get("dst")): [c.get("id") for c in r.findall("link_ctn")]
              for r in zone.findall("zoneRoute")}
    return links, routes


@pytest.mark.parametrize("machine, nodes", [("bm-optimized3-36", 4), ("betzy", 27),
                                            ("perlmutter", 20)])
def test_the_platform_routes_every_pair_of_nodes_over_declared_links(machine, nodes):
    m = _model(machine)
    links, routes = _links(smpi_platform.platform_xml(m, nodes))
    assert len(routes) == nodes * (nodes - 1)
    for (src, dst), path in routes.items():
        assert path[0] == f"nic{src[4:]}" and path[-1] == f"nic{dst[4:]}"
        assert all(link in links for link in path)
        back = routes[(dst, src)]
        assert sorted(back) == sorted(path)  # the same links both ways (split duplex)


def _model_of(kind: str, **sizes) -> smpi_platform.Model:
    facts = copy.deepcopy(_facts("bm-optimized3-36"))
    facts["simulation"]["network"]["topology"] = {
        "kind": kind, **{k: {"value": v, "source": "unstated"} for k, v in sizes.items()}}
    return smpi_platform.model(facts)


def test_routes_take_the_switch_hops_of_their_topology():
    fat = _model_of("fat_tree", nodes_per_leaf=2, spines=3)
    _, routes = _links(smpi_platform.platform_xml(fat, 6))
    assert routes[("node0", "node1")] == ["nic0", "nic1"]  # one leaf
    assert routes[("node0", "node5")] == ["nic0", "leaf0-spine2", "leaf2-spine2", "nic5"]
    fly = _model_of("dragonfly", nodes_per_switch=2, switches_per_group=3, global_links=2)
    _, routes = _links(smpi_platform.platform_xml(fly, 12))
    assert routes[("node0", "node3")] == ["nic0", "g0-sw0-sw1", "nic3"]  # one group
    # to group 1 (switch 4, its switch 1): global link from switch 1 of group 0 to switch 0 of
    # group 1, then a local link; the pair takes global link (0 + 9) mod 2
    assert routes[("node0", "node9")] == ["nic0", "g0-sw0-sw1", "global-g0-g1-1", "g1-sw0-sw1",
                                          "nic9"]
    plus = _model_of("dragonfly_plus", nodes_per_leaf=2, leaves_per_group=2, spines_per_group=2,
                     global_links=1)
    _, routes = _links(smpi_platform.platform_xml(plus, 8))
    assert routes[("node0", "node2")] == ["nic0", "g0-leaf0-spine1", "g0-leaf1-spine1", "nic2"]
    assert routes[("node0", "node4")] == ["nic0", "g0-leaf0-spine1", "global-g0-g1-0",
                                          "g1-leaf0-spine0", "nic4"]


def test_link_latencies_add_up_to_the_facts():
    m = _model("bm-optimized3-36")
    links, _ = _links(smpi_platform.platform_xml(m, 2))
    nic = float(links["nic0"].get("latency").rstrip("s"))
    numa = smpi_platform.seconds(m.value("node.numa_latency"), "x")
    # two nodes on one leaf: NIC links plus the private links of the two NUMA hosts
    assert 2 * nic + numa == pytest.approx(smpi_platform.seconds(m.value("network.latency"), "x"))


# --- where the ranks go -----------------------------------------------------------------


def test_block_and_cyclic_over_simulated_numa_domains():
    m = _model("bm-optimized3-36")  # 2 NUMA domains of 18 cores per node
    block = smpi_platform.rank_hosts(m, 2, 36, "block")
    assert block[:18] == ["node0-numa0"] * 18 and block[18:36] == ["node0-numa1"] * 18
    assert block[36] == "node1-numa0"
    cyclic = smpi_platform.rank_hosts(m, 1, 4, "cyclic")
    assert cyclic == ["node0-numa0", "node0-numa1", "node0-numa0", "node0-numa1"]
    # the machine's own CPU map (the study's block: an even split over the sockets)
    study = smpi_platform.rank_hosts(m, 1, 4, "block", cpus=(0, 1, 18, 19))
    assert study == ["node0-numa0", "node0-numa0", "node0-numa1", "node0-numa1"]
    with pytest.raises(FlavourError, match="37 ranks per node do not fit"):
        smpi_platform.rank_hosts(m, 1, 37, "block")


def test_the_launch_names_its_files_and_the_machines_map(tmp_path):
    facts = _facts("bm-optimized3-36")
    launch, files, sim = smpi.FLAVOUR.simulate(
        "/x/smpirun", Request(4, 2, "block"), {"OMP_NUM_THREADS": "1"},
        {"allreduce": "rdb"}, facts, cpus=(0, 1, 18, 19))
    assert launch.argv[:4] == ["/x/smpirun", "-np", "8", "-map"]
    assert "--cfg=smpi/allreduce:rdb" in launch.argv
    assert "--cfg=smpi/simulate-computation:no" in launch.argv
    assert sim.hosts == ("node0-numa0", "node0-numa0", "node0-numa1", "node0-numa1",
                         "node1-numa0", "node1-numa0", "node1-numa1", "node1-numa1")
    names = {f.name: f for f in files}
    assert names["hosts.txt"].text.splitlines() == list(sim.hosts)
    assert "bm-optimized3-36 (node type nps1)" in sim.as_record({})["platform"]


# --- SMPI's own words -------------------------------------------------------------------


@pytest.mark.parametrize("name, ranks, first", [
    ("imb-allreduce-72-cyclic-lr.err", 72, "node0-numa0"),
    ("map-simgrid-3.22-coll-allgather.txt", 16, "Tremblay"),
    ("map-simgrid-4.1-simple-execute.txt", 2, "griffon-2.nancy.grid5000.fr"),
])
def test_the_rank_map_is_read_as_simgrid_versions_print_it(name, ranks, first):
    bindings, _ = read_map((FIXTURES / name).read_text())
    assert [b.rank for b in bindings] == list(range(ranks))
    assert bindings[0].host == first


def _expected(hosts_file: str, mapping: str) -> Expected:
    hosts = tuple((FIXTURES / hosts_file).read_text().split())
    return Expected(mapping, 36, 2, reports=("smpi",), node_order="block", hosts=hosts)


def test_placement_is_verified_from_the_rank_map_and_a_wrong_host_contradicts():
    err = (FIXTURES / "imb-allreduce-72-cyclic-lr.err").read_text()
    found = verify(_expected("imb-allreduce-72-cyclic-lr.hosts.txt", "cyclic"), err, None)
    assert found["verdict"] == VERIFIED and "cyclic over 4 simulated NUMA" in found["summary"]
    wrong = verify(_expected("imb-allreduce-72-block-rdb.hosts.txt", "block"), err, None)
    assert wrong["verdict"] == CONTRADICTS
    assert "rank 1 on simulated host node0-numa1; the host file puts it on node0-numa0" in wrong["summary"]
    cut = "\n".join(line for line in err.splitlines() if "[rank 71]" not in line)
    short = verify(_expected("imb-allreduce-72-cyclic-lr.hosts.txt", "cyclic"), cut, None)
    assert short["verdict"] == NOT_VERIFIABLE and "71 of 72 ranks" in short["summary"]


def test_the_algorithm_switch_and_every_fallback_are_read():
    err = (FIXTURES / "imb-allreduce-72-cyclic-lr.err").read_text()
    used = smpi.FLAVOUR.components_used({}, err, ["allreduce"])
    assert used["collectives"] == {"allreduce": ["lr"]}
    assert used["fallbacks"] == {"allreduce": err.count("MPI_allreduce_lr: communication size")}
    sim = smpi.Simulation("SimGrid SMPI", "p", "m", (), (("smpi/allreduce", "lr"),))
    notes = sim.unconfirmed(err)
    assert len(notes) == 1 and "SMPI's MPI_allreduce_lr handed 317 calls" in notes[0]
    plain = (FIXTURES / "imb-allreduce-72-block-rdb.err").read_text()
    assert smpi.Simulation("S", "p", "m", (), (("smpi/allreduce", "rdb"),)).unconfirmed(plain) == []
    silent = plain.replace("Switch to algorithm rdb", "switched")
    said = smpi.Simulation("S", "p", "m", (), (("smpi/allreduce", "rdb"),)).unconfirmed(silent)
    assert said and "no 'Switch to algorithm' line for smpi/allreduce:rdb" in said[0]


@pytest.mark.parametrize("version", ["3.32", "4.1"])
def test_the_preflight_reads_simgrids_own_lists(version):
    keys = smpi._listed_keys((FIXTURES / f"keys-{version}.err").read_text())
    assert {"smpi/allreduce", "smpi/coll-selector", "smpi/send-is-detached-thresh"} <= keys
    valid = smpi._listed_algorithms((FIXTURES / f"algorithms-allreduce-{version}.err").read_text())
    assert {"rdb", "lr", "rab_rdb", "ompi", "redbcast"} <= set(valid)
    assert valid[-1] == "automatic"  # 4.1 goes on ". Please use --help-coll for details."
    texts = {"keys": (FIXTURES / f"keys-{version}.err").read_text(),
             "algorithms": (FIXTURES / f"algorithms-allreduce-{version}.err").read_text()}

    def run(argv):
        return texts["keys" if any("lists-the-keys" in a for a in argv) else "algorithms"]

    problems = smpi.FLAVOUR.check_settings(
        "smpirun", "IMB-MPI1", (("smpi/allreduce", "nosuch"), ("smpi/allreduce", "rdb"),
                                ("smpi/send-is-detached-threshh", "1")), run)
    assert [(k, v) for k, v, _ in problems] == [("smpi/allreduce", "nosuch"),
                                                ("smpi/send-is-detached-threshh", "1")]
    assert "did you mean smpi/send-is-detached-thresh?" in problems[1][2]


def test_an_old_name_simgrid_renamed_is_taken_by_the_preflight():
    """SimGrid 4.1 lists smpi/lat-factor and smpi/bw-factor (every launch passes them) only by
    their new names, network/latency-factor and network/bandwidth-factor, and takes the old
    ones with "Option ... has been renamed to ..."; 3.32 lists the old names themselves."""
    keys = (FIXTURES / "keys-4.1.err").read_text()
    renamed = (FIXTURES / "renamed-lat-factor-4.1.err").read_text()
    assert "smpi/lat-factor" not in smpi._listed_keys(keys)
    assert "smpi/lat-factor" in smpi._listed_keys((FIXTURES / "keys-3.32.err").read_text())
    asked = []

    def run(argv):
        asked.append(argv)
        return renamed if "--cfg=smpi/lat-factor:0:1" in argv else keys

    problems = smpi.FLAVOUR.check_settings(
        "smpirun", "IMB-MPI1", (("smpi/simulate-computation", "no"),
                                ("smpi/lat-factor", "0:1"), ("smpi/lat-factorr", "0:1")), run)
    assert [(k, v) for k, v, _ in problems] == [("smpi/lat-factorr", "0:1")]
    assert sum("--cfg=smpi/simulate-computation:no" in argv for argv in asked) == 0  # listed


# --- what the knobs become --------------------------------------------------------------


def test_open_mpi_and_intel_mpi_ids_become_the_same_smpi_algorithm():
    from commstack.flavours.smpi_settings import translate

    got = dict(translate({"OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}, {}, 72).cfg)
    assert got == {"smpi/allreduce": "lr", "smpi/coll-selector": "ompi"}
    # Open MPI's pairwise alltoall is SMPI's ring, not its pair (which needs a power of two)
    assert dict(translate({"OMPI_MCA_coll_tuned_alltoall_algorithm": "2"}, {}, 72).cfg)[
        "smpi/alltoall"] == "ring"
    # 0: Open MPI's own decision, the selector's (an algorithm's companions may then take
    # another collective without a conflict)
    assert dict(translate({"OMPI_MCA_coll_tuned_allreduce_algorithm": "0"}, {}, 72).cfg) == {
        "smpi/coll-selector": "ompi"}
    both = dict(translate({"OMPI_MCA_coll_tuned_allreduce_algorithm": "1",
                           "OMPI_MCA_coll_tuned_bcast_algorithm": "0"}, {}, 8).cfg)
    assert both["smpi/bcast"] == "flattree"
    # an algorithm that needs its companions gets them
    basic = dict(translate({"OMPI_MCA_coll_tuned_allreduce_algorithm": "1"}, {}, 8).cfg)
    assert basic["smpi/reduce"] == "ompi_basic_linear" and basic["smpi/bcast"] == "flattree"
    impi = dict(translate({"I_MPI_ADJUST_ALLREDUCE": "1"}, {}, 8).cfg)
    assert impi == {"smpi/allreduce": "rdb", "smpi/coll-selector": "impi"}
    own = translate({}, {"allreduce": "rab_rdb", "send-is-detached-thresh": "1024"}).cfg
    assert own == (("smpi/allreduce", "rab_rdb"), ("smpi/send-is-detached-thresh", "1024"))


@pytest.mark.parametrize("env, options, ranks, message", [
    ({"UCX_TLS": "rc"}, {}, 8, "UCX_TLS: SimGrid SMPI has no model of UCX"),
    ({"UCC_TL_UCP_TUNE": "allreduce:@knomial"}, {}, 8, "no model of UCC"),
    ({"HCOLL_MAIN_IB": "mlx5_0:1"}, {}, 8, "no model of HCOLL"),
    ({"OMPI_MCA_coll_hcoll_enable": "1"}, {}, 8, "mca.coll_hcoll_enable: SimGrid SMPI simulates only"),
    ({"I_MPI_PIN_DOMAIN": "core"}, {}, 8, "I_MPI_PIN_DOMAIN: SimGrid SMPI simulates only"),
    ({"OMPI_MCA_coll_tuned_allreduce_algorithm": "3:0-1023;4:1024-"}, {}, 8,
     "a per-size value cannot be simulated"),
    ({"OMPI_MCA_coll_tuned_bcast_algorithm": "2"}, {}, 8,
     r"bcast_algorithm=2 \(chain\): SimGrid SMPI implements no counterpart"),
    ({"OMPI_MCA_coll_tuned_allreduce_algorithm": "99"}, {}, 8, "not an algorithm of allreduce"),
    ({"OMPI_MCA_coll_tuned_alltoall_algorithm": "5"}, {}, 72,
     r"the same algorithm only at 2 processes, and this launch has 72"),
    ({"OMPI_MCA_coll_tuned_allreduce_algorithm": "4",
      "OMPI_MCA_coll_tuned_use_dynamic_rules": "0"}, {}, 8, "Open MPI ignores a forced algorithm"),
    ({"OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}, {"allreduce": "rdb"}, 8,
     "ask for two values of smpi/allreduce"),
    ({"OMPI_MCA_coll_tuned_allreduce_algorithm": "4", "I_MPI_ADJUST_ALLTOALL": "1"}, {}, 8,
     "both Open MPI and Intel MPI"),
])
def test_what_cannot_be_simulated_is_refused_with_its_reason(env, options, ranks, message):
    from commstack.flavours.smpi_settings import translate

    with pytest.raises(FlavourError, match=message):
        translate(env, options, ranks)


@pytest.mark.parametrize("version", ["3.32", "4.1"])
def test_every_row_of_the_table_names_an_algorithm_simgrid_has(version):
    """Each SMPI name in the table is in SimGrid's own list for its collective (the lists SMPI
    3.32 and 4.1 print, kept in the fixtures), and every Open MPI id of the five tuned
    collectives has a row."""
    from commstack.flavours.smpi_settings import table

    lists = {}
    for line in (FIXTURES / f"valid-algorithms-{version}.txt").read_text().splitlines():
        op, _, names = line.partition(": ")
        lists[op] = set(names.split(", "))
    assert sorted(lists) == sorted(smpi.COLLECTIVES)
    rows = table()
    for (family, op, ident), row in rows.items():
        if row.smpi is not None:
            assert row.smpi in lists[op], (family, op, ident, row.smpi)
        assert (row.match == "none") == (row.smpi is None)
    for op, ids in (("allreduce", 7), ("alltoall", 6), ("allgather", 8), ("bcast", 10),
                    ("reduce", 8)):
        assert all(("ompi", op, i) in rows for i in range(ids)), op


# --- end to end: `commstack run` on a simulated machine -------------------------------------

SIMULATED_MATRIX = """\
campaign: sim-e2e
benchmark: {benchmark}
repeats: {repeats}
timeout: 600
stacks:
  sim: {{flavour: smpi, spack: {{env: local, view: smpi}}{extra}}}
parameters: {parameters}
product: {product}
"""


def _simulated_run(tmp_path, benchmark, parameters, product, repeats=1, extra=""):
    from tests.sweeps import commstack

    matrix = tmp_path / "matrices" / "bm-optimized3-36" / "sim.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)
    matrix.write_text(SIMULATED_MATRIX.format(benchmark=benchmark, parameters=parameters,
                                              product=product, repeats=repeats, extra=extra))
    env = dict(os.environ, COMMSTACK_ENVIRONMENTS=str(REPO / "environments"))
    done = commstack("run", str(matrix), "--out", str(tmp_path / "results"), env=env,
                     timeout=1800)
    return done, tmp_path / "results" / "bm-optimized3-36" / "sim-e2e"


@pytest.mark.spack
@pytest.mark.slow
def test_imb_runs_at_the_machines_scale_placed_forced_and_repeatable(tmp_path):
    """72 simulated ranks on two simulated BM.Optimized3.36 nodes: every record ok, its
    placement verified from SMPI's own rank map, the forced algorithm confirmed by SMPI's own
    switch line, and a second repeat bit-identical to the first (no noise)."""
    from tests.spack_support import smpi_view_bin
    from tests.sweeps import records

    smpi_view_bin()
    done, root = _simulated_run(
        tmp_path, "imb-mpi1", '{benchmarks: Allreduce, msglog: "0:10", zero_size: 0, iter: 5, '
        "npmin: 72, nodes: 2, ranks_per_node: 36}",
        "{mapping: [block, cyclic], mca.coll_tuned_allreduce_algorithm: [0, 3]}", repeats=2)
    assert done.returncode == 0, done.stderr[-3000:]
    found = records(root)
    assert len(found) == 8 and all(r["status"] == "ok" for r in found)
    for r in found:
        assert r["placement"]["verdict"] == VERIFIED, r["placement"]["summary"]
        assert f"{r['params']['mapping']} over " in r["placement"]["summary"]
        assert r["simulation"]["platform"] == "bm-optimized3-36 (node type nps1)"
        assert r["simulation"]["settings"]["smpi/coll-selector"] == "ompi"
        if r["params"]["mca.coll_tuned_allreduce_algorithm"] == 3:
            assert r["components_used"]["collectives"]["allreduce"] == ["rdb"]
    by_point = {}
    for r in found:
        by_point.setdefault(r["point_id"], []).append(r["parsed"])
    assert all(first == second for first, second in by_point.values())
    # block and cyclic put ranks on different simulated NUMA hosts, and the times differ
    block = next(r for r in found if r["params"]["mapping"] == "block")
    cyclic = next(r for r in found if r["params"]["mapping"] == "cyclic"
                  and r["params"]["mca.coll_tuned_allreduce_algorithm"]
                  == block["params"]["mca.coll_tuned_allreduce_algorithm"])
    assert [x["host"] for x in block["placement"]["ranks"]][:2] == ["node0-numa0", "node0-numa0"]
    assert [x["host"] for x in cyclic["placement"]["ranks"]][:2] == ["node0-numa0", "node0-numa1"]
    # the session's provenance holds SMPI's version, not this host's UCX (SMPI uses none)
    assert list(root.glob("sessions/*/*.smpirun-version.txt"))
    assert not list(root.glob("sessions/*/*.ucx_info.txt"))


@pytest.mark.spack
def test_a_ucx_knob_on_a_simulated_stack_is_refused_before_launch(tmp_path):
    from tests.spack_support import smpi_view_bin

    smpi_view_bin()
    done, root = _simulated_run(
        tmp_path, "imb-mpi1", "{benchmarks: Allreduce, msglog: '0:4', nodes: 2, ranks_per_node: 36}",
        '{UCX_TLS: ["rc", "dc"]}')
    assert done.returncode == 2
    assert "UCX_TLS: SimGrid SMPI has no model of UCX, so this knob cannot be simulated" in done.stderr
    assert not root.exists()  # nothing created, nothing launched


@pytest.mark.spack
@pytest.mark.slow
def test_osu_and_reprompi_run_simulated_through_commstack_run(tmp_path):
    from tests.spack_support import smpi_view_bin
    from tests.sweeps import records

    bindir = smpi_view_bin(("smpirun", "mpibenchmark"))
    osu = bindir.parent / "libexec" / "osu-micro-benchmarks" / "mpi"
    if not (osu / "collective" / "osu_allreduce").is_file():
        pytest.skip(f"skipped: no OSU build in the view smpi ({osu})")
    extra = f', bin: ["{osu}/pt2pt", "{osu}/collective"]'
    # osu_latency takes two ranks: one on each simulated node
    done, root = _simulated_run(tmp_path / "osu2", "osu", "{message_size: '4:4096', iterations: "
                                "10, warmup: 2, nodes: 2}",
                                "{executable: [osu_latency, osu_allreduce], ranks_per_node: [1]}",
                                extra=extra)
    assert done.returncode == 0, done.stderr[-3000:]
    found = records(root)
    assert {r["params"]["executable"] for r in found} == {"osu_latency", "osu_allreduce"}
    assert all(r["status"] == "ok" and r["parsed"] and r["simulation"] for r in found)
    done, root = _simulated_run(tmp_path / "reprompi", "reprompi",
                                "{calls: 'MPI_Allreduce,MPI_Bcast', msizes: '8,1024', nrep: 10, "
                                "nodes: 2, ranks_per_node: 4}", "{proc_sync: [MPI_Barrier]}")
    assert done.returncode == 0, done.stderr[-3000:]
    found = records(root)
    assert found and all(r["status"] == "ok" and r["parsed"] for r in found)
