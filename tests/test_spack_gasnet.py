"""GASNet-EX microbenchmarks (packages/gasnet-tests over builtin gasnet) built offline by Spack
for the smp and udp conduits, and run briefly with 2 processes on this node.

testsmall/testlarge are the GASNet-EX side of Hargrove & Bonachea's RMA study (2022),
whose appendix runs `testlarge -m -in 10000 4194304 B` and `testsmall -m -in 1000000 4096 A`.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spack_support  # noqa: E402

pytestmark = pytest.mark.spack


LATENCY = re.compile(r"^A:\s+0 -\s+(\d+) byte :\s+(\d+) iters, latency\s+\d+ us total,\s+"
                     r"([\d.]+) us ave\. \((Put|Get)Blocking latency\)$", re.MULTILINE)
BANDWIDTH = re.compile(r"^B:\s+0 -\s+(\d+) byte :\s+(\d+) iters, throughput\s+([\d.]+) MB/sec "
                       r"\((PutNBI\+DEFER|GetNBI) throughput\)$", re.MULTILINE)


@pytest.fixture(scope="module")
def view_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = spack_support.gasnet_skip_reason()
    if reason:
        pytest.skip(reason)
    return spack_support.install_gasnet(tmp_path_factory.mktemp("spack-gasnet"))


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


GASNET_SWEEP = """
benchmark: gasnet-{program}
repeats: 2
timeout: 120
stacks:
  gex-smp: {{flavour: gasnet, conduit: smp, bin: "{bin}"}}
  gex-udp: {{flavour: gasnet, conduit: udp, bin: "{bin}", env: {{GASNET_SUPERNODE_MAXSIZE: 1}}}}
parameters: {{mb_units: true, in_segment: true, iters: {iters}, maxsz: {maxsz}, sections: {sections},
             ranks_per_node: 2}}
product:
  stack: [gex-smp, gex-udp]
"""
RMA_SWEEP = """
benchmark: imb-rma
repeats: 2
timeout: 120
stacks:
  impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
parameters: {stack: impi, benchmarks: Unidir_put Unidir_get, msglog: "2:16", iter: 100,
             ranks_per_node: 2, I_MPI_FABRICS: shm}
"""


def test_sweeps_and_paper_style_report(view_bin: Path, impi_root: Path, tmp_path: Path) -> None:
    """GASNet-EX testlarge and testsmall swept over the smp and udp conduits, IMB-RMA with Intel
    MPI beside them, and one report in the GASNet-EX paper's style over the three campaigns."""
    from tests.sweeps import commstack, records

    matrices = tmp_path / "matrices" / "local"
    matrices.mkdir(parents=True)
    (matrices / "bw.yaml").write_text(GASNET_SWEEP.format(
        program="testlarge", bin=view_bin, iters=50, maxsz=262144, sections="B"))
    (matrices / "lat.yaml").write_text(GASNET_SWEEP.format(
        program="testsmall", bin=view_bin, iters=500, maxsz=64, sections="A"))
    (matrices / "rma.yaml").write_text(RMA_SWEEP)
    plan = commstack("plan", str(matrices / "bw.yaml"), cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert f"{view_bin}/amudprun -np 2 -spawn L {view_bin}/testlarge-udp -m -in 50 262144 B" \
        in plan.stdout
    assert f"{view_bin}/gasnetrun_smp -n 2 {view_bin}/testlarge-smp -m -in 50 262144 B" \
        in plan.stdout
    roots = {}
    for name in ("bw", "lat", "rma"):
        out = commstack("run", str(matrices / f"{name}.yaml"), "--out", "results", cwd=tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        roots[name] = tmp_path / "results" / "local" / name
        recs = records(roots[name])
        assert len(recs) == (4 if name != "rma" else 2) and {r["status"] for r in recs} == {"ok"}
    for rec in records(roots["bw"]) + records(roots["lat"]):
        conduit = rec["params"]["stack"].split("-")[1]
        assert f"CONDUIT={conduit.upper()}(" in rec["build_config"]

    report = commstack("report", str(roots["bw"]), "--with", str(roots["lat"]), "--with",
                       str(roots["rma"]), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (roots["bw"] / "report" / "report.md").read_text()
    assert "## RMA performance (GASNet-EX paper style)" in text
    for config, op in (("stack=gex-smp", "GASNet-EX Put"), ("stack=gex-udp", "GASNet-EX Get"),
                       ("stack=impi, I_MPI_FABRICS=shm", "MPI Put")):
        # max, at, the runs' median there with its count (2 runs: no interval), 90 % from
        assert re.search(rf"^\| {re.escape(config)} \| {op} \| [\d.]+ \| \d+ \| [\d.]+ \(2\) "
                         r"\| \d+ \|$", text, re.M), (config, op)
    assert "ratio (of the minima): configuration / GASNet-EX: stack=gex-smp." in text
    # 8-byte Put latency over UDP: the minimum over both runs, as the paper aggregates
    udp_put = [row["t_us"] for r in records(roots["lat"]) if r["params"]["stack"] == "gex-udp"
               for row in r["parsed"] if row["benchmark"] == "PutBlocking" and row["bytes"] == 8]
    assert len(udp_put) == 2
    assert f"| GASNet-EX: stack=gex-udp | {min(udp_put):.2f} μs | " \
        f"{statistics.median(udp_put):.2f} (2) |" in text
    assert (roots["bw"] / "report" / "gasnet_flood_bandwidth.png").read_bytes()[:4] == b"\x89PNG"
