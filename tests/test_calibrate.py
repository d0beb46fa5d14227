"""`commstack machine calibrate`: SimGrid's calibration procedure (pycewise's segmented
regression) from a campaign's measured ping-pongs to a machine's simulation facts."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from commstack.flavours import smpi_platform
from commstack.machine import calibrate, load_machine_file
from tests.conftest import REPO
from tests.sweeps import commstack

pytest.importorskip("pycewise", reason="skipped: pycewise not installed (pip install 'commstack[calibrate]')")


def _model(a1, b1, a2, b2, edge, sizes):
    """Times of a two-protocol link: latency a and time per byte b below and from ``edge``."""
    return [(s, (a1 + b1 * s) if s < edge else (a2 + b2 * s)) for s in sizes]


def test_the_fit_finds_the_protocol_switch_and_smpi_factors_reproduce_it():
    sizes = [int(2 ** (k / 2)) for k in range(0, 45)]  # 1 B .. 4 MiB, two per octave
    samples = _model(0.4e-6, 1 / 5e9, 3e-6, 1 / 10e9, 16384, sizes) * 3
    cal = calibrate.fit(samples, "two protocols")
    assert cal.latency_s == pytest.approx(0.4e-6, rel=0.05)
    assert cal.bandwidth_Bps == pytest.approx(10e9, rel=0.05)
    # SMPI's time of a message: latency x lat-factor + size / (bandwidth x bw-factor), each
    # factor the one of the largest threshold its size exceeds, counting the payload and SMPI's
    # 16-byte envelope (SimGrid 3.32's network_smpi.cpp, smpi_request.cpp)
    lat = sorted((int(k), float(v)) for k, v in (p.split(":") for p in cal.lat_factor.split(";")))
    bw = sorted((int(k), float(v)) for k, v in (p.split(":") for p in cal.bw_factor.split(";")))
    for size, seconds in _model(0.4e-6, 1 / 5e9, 3e-6, 1 / 10e9, 16384, sizes):
        lf = [f for threshold, f in lat if size + 16 > threshold][-1]
        bf = [f for threshold, f in bw if size + 16 > threshold][-1]
        smpi = cal.latency_s * lf + size / (cal.bandwidth_Bps * bf)
        assert smpi == pytest.approx(seconds, rel=0.10), size


def test_the_printed_facts_are_a_simulation_commstack_runs():
    sizes = [int(2 ** (k / 2)) for k in range(0, 45)]
    cal = calibrate.fit(_model(0.3e-6, 1 / 4e9, 2e-6, 1 / 8e9, 8192, sizes), "x")
    facts = copy.deepcopy(load_machine_file(REPO / "site-configs" / "bm-optimized3-36"
                                            / "machine.yaml").facts)
    block = yaml.safe_load("simulation:\n" + calibrate.facts(cal, "unstated", "node"))["simulation"]
    facts["simulation"]["node"].update(block["node"])
    facts["simulation"]["factors"] = block["factors"]
    model = smpi_platform.model(facts)
    assert model.lat_factor == cal.lat_factor and model.bw_factor == cal.bw_factor
    assert smpi_platform.seconds(model.value("node.latency"), "x") == pytest.approx(0.3e-6, rel=0.05)


@pytest.mark.mpi
def test_calibrate_reads_a_real_campaign_and_names_what_is_missing(tmp_path, impi_root):
    matrix = tmp_path / "matrices" / "local" / "pp.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(
        "benchmark: imb-mpi1\nrepeats: 2\ntimeout: 120\n"
        "stacks: {impi: {flavour: intelmpi, prefix: \"${I_MPI_ROOT}\"}}\n"
        "parameters: {stack: impi, benchmarks: PingPong, msglog: '0:20', iter: 50, "
        "ranks_per_node: 2}\n")
    done = commstack("run", str(matrix), "--out", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr[-2000:]
    root = tmp_path / "results" / "local" / "pp"
    out = commstack("machine", "calibrate", str(root))
    assert out.returncode == 0, out.stderr
    printed = yaml.safe_load("\n".join(line for line in out.stdout.splitlines()
                                       if not line.startswith("#")))
    node = printed["simulation"]["node"]
    assert smpi_platform.seconds(node["latency"]["value"], "x") > 0
    assert smpi_platform.bandwidth(node["bandwidth"]["value"], "x") > 0
    assert "# pp: 44 PingPong rows of stack impi, 0-1048576 bytes" in out.stdout  # 22 sizes x 2
    few = commstack("run", str(matrix), "--out", str(tmp_path / "few"), "--campaign", "few")
    assert few.returncode == 0
    none = commstack("machine", "calibrate", str(tmp_path / "few" / "local" / "few"),
                     "--stack", "other")
    assert none.returncode == 2 and "no measured PingPong rows of stack 'other'" in none.stderr


def test_a_campaign_without_ping_pongs_is_named(tmp_path):
    with pytest.raises(calibrate.CalibrationError, match="nothing: no measured PingPong rows"):
        calibrate.samples_of(Path(tmp_path / "nothing"))
