"""GASNet-EX microbenchmarks (packages/gasnet-tests over builtin gasnet) built offline by Spack
for the smp and udp conduits, and run briefly with 2 processes on this node.

testsmall/testlarge are the GASNet-EX side of Hargrove & Bonachea's RMA study (2022),
whose appendix runs `testlarge -m -in 10000 4194304 B` and `testsmall -m -in 1000000 4096 A`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spack_support  # noqa: E402

pytestmark = pytest.mark.spack

ENV = spack_support.SPACK_ENVS_DIR / "gasnet-smp-udp"
GASNET_2025_8_0 = "bd5919099477d1d2f59c247d006e9d1ac017c9190c974f5e069667418e5bf48d"

LATENCY = re.compile(r"^A:\s+0 -\s+(\d+) byte :\s+(\d+) iters, latency\s+\d+ us total,\s+"
                     r"([\d.]+) us ave\. \((Put|Get)Blocking latency\)$", re.MULTILINE)
BANDWIDTH = re.compile(r"^B:\s+0 -\s+(\d+) byte :\s+(\d+) iters, throughput\s+([\d.]+) MB/sec "
                       r"\((PutNBI\+DEFER|GetNBI) throughput\)$", re.MULTILINE)


@pytest.fixture(scope="module")
def view_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = spack_support.spack_skip_reason()
    if reason:
        pytest.skip(reason)
    archive = (spack_support.find_mirror() / "_source-cache" / "archive" / GASNET_2025_8_0[:2]
               / f"{GASNET_2025_8_0}.tar.gz")
    if not archive.exists():
        pytest.skip("skipped: GASNet 2025.8.0 not in the mirror (commstack mirror --package gasnet "
                    "--clones DIR --out MIRROR, with a clone of github.com/StanfordLegion/gasnet)")
    return spack_support.install_view_bin(ENV, tmp_path_factory.mktemp("spack-gasnet"),
                                          "testlarge-smp")


def run(cmd, env_extra, timeout=120) -> str:
    proc = subprocess.run(cmd, env={**os.environ, **env_extra}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}"
    assert proc.stdout.rstrip().endswith("done."), proc.stdout[-2000:]
    return proc.stdout


def launch(view_bin: Path, conduit: str, program: str, *args: str) -> str:
    exe = str(view_bin / f"{program}-{conduit}")
    if conduit == "smp":  # processes are forked by the program itself
        return run([exe, *args], {"GASNET_PSHM_NODES": "2"})
    # udp: amudprun spawns locally; one process per "supernode" so traffic really goes over UDP
    return run([str(view_bin / "amudprun"), "-np", "2", exe, *args],
               {"GASNET_SPAWNFN": "L", "GASNET_SUPERNODE_MAXSIZE": "1"})


def test_installed_per_conduit_with_launchers(view_bin: Path) -> None:
    for conduit in ("smp", "udp"):
        for program in ("testsmall", "testlarge", "testam"):
            assert (view_bin / f"{program}-{conduit}").is_file(), (program, conduit)
    assert (view_bin / "amudprun").is_file()  # from gasnet, a run dependency


@pytest.mark.parametrize("conduit", ["smp", "udp"])
def test_testsmall_latency(view_bin: Path, conduit: str) -> None:
    out = launch(view_bin, conduit, "testsmall", "-m", "-in", "200", "4096", "A")
    rows = LATENCY.findall(out)
    sizes = sorted({int(r[0]) for r in rows})
    assert sizes[-1] == 4096 and {r[3] for r in rows} == {"Put", "Get"}, out[-2000:]
    # smp-conduit moves small payloads faster than the microsecond totals resolve
    assert all(float(r[2]) >= 0 for r in rows) and all(float(r[2]) > 0 for r in rows
                                                       if int(r[0]) == 4096)


@pytest.mark.parametrize("conduit", ["smp", "udp"])
def test_testlarge_bandwidth(view_bin: Path, conduit: str) -> None:
    out = launch(view_bin, conduit, "testlarge", "-m", "-in", "20", "1048576", "B")
    rows = BANDWIDTH.findall(out)
    assert max(int(r[0]) for r in rows) == 1048576, out[-2000:]
    assert {r[3] for r in rows} == {"PutNBI+DEFER", "GetNBI"}
    assert all(float(r[2]) >= 0 for r in rows) and all(float(r[2]) > 0 for r in rows
                                                       if int(r[0]) == 1048576)
