"""The GASNet-EX testlarge/testsmall parser on real outputs (tests/fixtures/gasnet, smp and udp
conduits of GASNet-EX 2025.8.0 built by packages/gasnet-tests)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from commstack.benchmarks.base import ParseError
from commstack.benchmarks.gasnet import parse_gasnet
from tests.sweeps import commstack

FIXTURES = Path(__file__).parent / "fixtures" / "gasnet"
ROW = re.compile(r"^([AB]):\s+(\d+) -\s+(\d+) byte :\s+(\d+) iters, (?:throughput\s+([\d.]+) "
                 r"([KM])B/sec|latency\s+\d+ us total,\s+([\d.]+) us ave\.) \((\S+) ", re.M)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.out")
                                        if not p.name.startswith("fail-")))
def test_every_result_line_becomes_a_row(name: str) -> None:
    text = fixture(name)
    out = parse_gasnet(text)
    expected = ROW.findall(text)
    assert len(out.rows) == len(expected) > 0 and out.notes == []
    for row, (section, node, size, iters, bw, unit, lat, op) in zip(out.rows, expected):
        assert (row["section"], row["node"], row["bytes"], row["repetitions"], row["benchmark"]) \
            == (section, int(node), int(size), int(iters), op)
        if bw:
            assert row["mode"] == "aggregate"
            printed = row["mib_per_s" if unit == "M" else "kib_per_s"]
            assert printed == float(bw)
            # IMB's MB/s are 10^6 B/s; GASNet's MB/s 2^20 B/s, KB/s 2^10 B/s
            assert row["mbytes_per_s"] == pytest.approx(float(bw) * (2 ** 20 if unit == "M"
                                                                      else 2 ** 10) / 1e6)
        else:
            assert row["mode"] == "non-aggregate" and row["t_us"] == float(lat)


def test_banner_gives_program_processes_and_conduit() -> None:
    large = parse_gasnet(fixture("udp-testlarge-kb-np2.out"))
    assert (large.meta["program"], large.meta["nprocs"], large.meta["conduit"]) == ("testlarge", 2, "udp")
    assert large.build_config.startswith("RELEASE=2025.8.0,") and "CONDUIT=UDP" in large.build_config
    four = parse_gasnet(fixture("smp-testlarge-np4.out"))
    assert four.meta["nprocs"] == 4 and {r["node"] for r in four.rows} == {0, 2}  # two initiators
    small = parse_gasnet(fixture("smp-testsmall-np2.out"))
    assert small.meta["program"] == "testsmall" and {r["benchmark"] for r in small.rows} == {
        "PutBlocking", "GetBlocking"}


def test_a_skipped_test_is_a_failure() -> None:
    # An odd process count: testlarge says so, skips, and exits 0.
    with pytest.raises(ParseError, match="Test skipped"):
        parse_gasnet(fixture("fail-smp-testlarge-odd-np3.out"))


def test_truncated_output_is_a_failure() -> None:
    text = fixture("smp-testlarge-np2.out")
    cut = text[:text.index("done.")]
    with pytest.raises(ParseError, match="no final 'done.' line.*GetNBI 4194304 bytes"):
        parse_gasnet(cut)
    with pytest.raises(ParseError, match="no result lines"):
        parse_gasnet(text[:text.index("B:")])


def test_other_output_is_not_taken_for_gasnet() -> None:
    imb = next((Path(__file__).parent / "fixtures" / "imb").rglob("*.out")).read_text()
    with pytest.raises(ParseError, match="banner"):
        parse_gasnet(imb)


def test_parse_command_prints_rows_as_json() -> None:
    out = commstack("parse", str(FIXTURES / "udp-testsmall-np2.out"), "--benchmark", "gasnet",
                    "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows == parse_gasnet(fixture("udp-testsmall-np2.out")).rows
