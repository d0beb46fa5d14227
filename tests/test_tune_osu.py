"""Must show: OSU campaigns work with `commstack compare` and `commstack tune` as IMB's do. Two
OSU campaigns of Intel MPI (its OSU built by Spack) compared point by point with the ratios'
spread; a small staged tuning of osu_allreduce latency (Intel MPI's allreduce algorithms) that
either picks a setting beyond noise or keeps the default, and says which."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from textwrap import dedent

import pytest

from tests import spack_support
from tests.sweeps import commstack, ok_counts

pytestmark = [pytest.mark.spack, pytest.mark.mpi]

OSU_INTELMPI_ENV = spack_support.SPACK_ENVS_DIR / "osu-intelmpi"

CAMPAIGN = dedent("""
    benchmark: osu
    repeats: 3
    timeout: 120
    stacks:
      impi:
        flavour: intelmpi
        prefix: "${I_MPI_ROOT}"
        bin: "${COMMSTACK_OSU_INTELMPI}/pt2pt"
    parameters: {stack: impi, ranks_per_node: 2, message_size: "1:4096", iterations: 200,
                 warmup: 20}
    product:
      executable: [osu_latency, osu_bw]
    """)

PLAN = dedent("""
    campaign: osu-tune
    base:
      benchmark: osu
      repeats: 5
      timeout: 120
      stacks:
        impi:
          flavour: intelmpi
          prefix: "${I_MPI_ROOT}"
          bin: "${COMMSTACK_OSU_INTELMPI}/collective"
      parameters: {stack: impi, nodes: 1, ranks_per_node: 2, message_size: "4:16384",
                   iterations: 200, warmup: 20}
    cases:
      executable: [osu_allreduce]
    defaults:
      I_MPI_ADJUST_ALLREDUCE: 0
      mapping: block
    steps:
      - name: algorithms
        product: {I_MPI_ADJUST_ALLREDUCE: [0, 1, 2, 3]}
      - name: mapping
        product: {mapping: [block, cyclic]}
    decision: {threshold: 0.05}
    """)


@pytest.fixture(scope="module")
def osu_env(impi_root, tmp_path_factory):
    reason = spack_support.osu_skip_reason()
    if reason:
        pytest.skip(reason)
    if (OSU_INTELMPI_ENV / "wheel-layout" / "mpi" / "2021.18").resolve() != impi_root.resolve():
        pytest.skip("skipped: tests/spack/osu-intelmpi expects Intel MPI in the checkout's .venv")
    mpi = spack_support.install_osu(OSU_INTELMPI_ENV, tmp_path_factory.mktemp("spack-osu"))
    return {**os.environ, "COMMSTACK_OSU_INTELMPI": str(mpi)}


def _campaign(tmp: Path, name: str, env: dict) -> Path:
    matrix = tmp / "matrices" / "local" / f"{name}.yaml"
    matrix.parent.mkdir(parents=True, exist_ok=True)
    matrix.write_text(CAMPAIGN)
    run = commstack("run", str(matrix), "--out", str(tmp / "results"), env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    root = tmp / "results" / "local" / name
    assert len(ok_counts(root)) == 2 * 3
    return root


def test_compare_two_osu_campaigns(osu_env, tmp_path):
    a, b = _campaign(tmp_path, "osu-a", osu_env), _campaign(tmp_path, "osu-b", osu_env)
    out_md = tmp_path / "diff.md"
    # a generous threshold: the same build twice on a busy 2-core box differs only by noise
    cmp = commstack("compare", str(a), str(b), "--threshold", "10", "--out", str(out_md),
                    env=osu_env)
    assert cmp.returncode == 0, cmp.stdout[-3000:] + cmp.stderr[-3000:]
    text = out_md.read_text()
    for exe in ("osu_latency", "osu_bw"):
        assert exe in text, text[:3000]
    assert "t_us" in text and "mbytes_per_s" in text
    assert "regressions: 0" in text
    rows = [line for line in text.splitlines() if line.startswith("|") and "osu_" in line]
    assert len(rows) == 2 * 13 and all(row.rstrip(" |").endswith("same") for row in rows)
    # a tiny threshold: OSU's two decimals differ between the campaigns somewhere, but a point
    # is called only where its corrected rank test says so; a regression fails the comparison
    tight = commstack("compare", str(a), str(b), "--threshold", "0.0001", env=osu_env)
    assert tight.returncode in (0, 1), tight.stderr[-3000:]
    verdicts = re.findall(r"\| (regression|improvement|same|untested) \|$", tight.stdout, re.M)
    assert len(verdicts) == 2 * 13, tight.stdout[-3000:]
    regressions = int(re.search(r"regressions: (\d+)", tight.stdout).group(1))
    assert regressions == verdicts.count("regression")
    if regressions:
        assert tight.returncode == 1

def test_tune_osu_allreduce(osu_env, tmp_path):
    plan = tmp_path / "plans" / "local" / "osu-tune.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(PLAN)
    run = commstack("tune", str(plan), "--out", str(tmp_path / "results"), "--local",
                    env=osu_env, timeout=1800)
    # 3: tuned slower than default at some size; the tuner must then say so.
    assert run.returncode in (0, 3), run.stdout[-3000:] + run.stderr[-3000:]
    assert (run.returncode == 3) == ("slower than default at" in run.stdout)
    root = tmp_path / "results" / "local" / "osu-tune"
    (case,) = [p for p in root.iterdir() if (p / "tuned" / "decision.json").is_file()]
    summary = json.loads((case / "tuned" / "decision.json").read_text())
    settings = summary["settings"]
    _assert_algorithm_setting(str(settings["I_MPI_ADJUST_ALLREDUCE"]),
                              json.loads((case / "algorithms" / "decision.json").read_text()))
    assert settings["mapping"] in ("block", "cyclic")
    verify = summary["verify"]
    assert verify, summary
    for step in ("algorithms", "mapping"):
        decision = json.loads((case / step / "decision.json").read_text())
        wins = [s["wins"] for s in decision["scores"]]
        assert len(wins) == decision["candidates"] == {"algorithms": 4, "mapping": 2}[step]
        # a new setting only when the corrected tests found it faster at some size;
        # otherwise the incumbent stays (no significant difference is no win)
        if decision["changed"]:
            assert max(wins) > 0 and decision["winner"] != decision["incumbent"]
        else:
            assert decision["winner"] == decision["incumbent"]
    decisions = (root / "decisions.md").read_text()
    assert "osu_allreduce" in decisions and "I_MPI_ADJUST_ALLREDUCE" in decisions


def _assert_algorithm_setting(value: str, step: dict) -> None:
    """One preset for every size, or, where the step's bands name more than one, Intel MPI's
    per-size form (``<preset>:<l>-<m>;...``) covering every size from 0 to 2^31-1 without a gap,
    each band's measured sizes served by that band's preset."""
    presets = {"0", "1", "2", "3"}
    if ":" not in value:
        assert value in presets, value
        return
    pieces = [re.fullmatch(r"(\d+):(\d+)-(\d+)", piece) for piece in value.split(";")]
    assert all(pieces), value
    ranges = [(m.group(1), int(m.group(2)), int(m.group(3))) for m in pieces]
    assert {preset for preset, _, _ in ranges} <= presets and len(ranges) >= 2, value
    assert ranges[0][1] == 0 and ranges[-1][2] == 2147483647, value
    assert all(a[2] + 1 == b[1] for a, b in zip(ranges, ranges[1:])), value
    bands = step["bands"]
    assert len(bands) == len(ranges), (value, bands)
    for (preset, low, high), band in zip(ranges, bands):
        best = band["best"].get("I_MPI_ADJUST_ALLREDUCE")
        assert preset == str(best if best not in (None, "") else 0), (value, band)
        assert low <= int(band["from_bytes"]) and int(band["to_bytes"]) <= high, (value, band)
