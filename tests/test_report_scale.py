"""Must show: reports stay readable and cheap as campaigns grow. A plot of many settings draws at
most a dozen lines (the best few and the defaults) and a heat map of all of them; plots whose
numbers did not change are not drawn again, and a plot is the same whatever was drawn before it
(a worker keeps its figure from one plot to the next); study sections read rows only where the campaign is
the study's; table numbers have consistent significant digits; the summary computed column-wise
equals the one computed record by record; `status` reads each record once and agrees with the
store; a missing optional dependency ends `report` in one sentence with the install command.

Campaigns come from bench/report_scale.py: a real IMB-MPI1 output (tests/fixtures/imb) parsed
and scaled per point, records written through the store."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import matplotlib.image
import pandas as pd
import pytest

from commstack.aggregate import aggregate, summary_frame
from commstack.cli.status import scan_campaign
from commstack.matrix.model import Point
from commstack.report.document import _summary, write_report
from commstack.report.drawing import HASHES
from commstack.report.load import load
from commstack.report.numbers import Resolution, cell, significant
from commstack.report.plots import MAX_LINES, choose, plot_section
from commstack.report.studies import STUDIES
from commstack.report.tables import Condition, sections
from commstack.store.campaign import Campaign
from commstack.store.files import write_new
from commstack.store.record import Record, RecordError
from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("report_scale", REPO / "bench/report_scale.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

# 2 stacks x 3 UCX_TLS x 3 thresholds = 18 settings per (benchmark, np): more than a plot shows.
MANY = {"stack": ["ompi", "ompi-ucx"], "UCX_TLS": ["all", "self,sm", "self,sm,rc"],
        "UCX_RNDV_THRESH": ["auto", "1024", "8192"], "ranks_per_node": [4],
        "benchmarks": ["Allreduce"]}
FEW = {"stack": ["ompi"], "UCX_TLS": ["all", "self,sm"], "UCX_RNDV_THRESH": ["auto", "1024"],
       "ranks_per_node": [2, 4], "benchmarks": ["Allreduce", "Alltoall"]}


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    root = bench.write_campaign(tmp_path_factory.mktemp("scale") / "bench" / "many", MANY, 1)
    write_report(root)
    return root


@pytest.fixture(scope="module")
def few(tmp_path_factory):
    root = bench.write_campaign(tmp_path_factory.mktemp("scale") / "bench" / "few", FEW, 1)
    write_report(root)
    return root


def _sections(root: Path):
    return sections(_summary(load(root, lambda r: False).samples))


def test_many_settings_plot_the_best_few_and_the_defaults_over_a_heat_map_of_all(many):
    (section,) = _sections(many)
    assert len(section.mean.columns) == 18
    choice = choose(section)
    assert len(choice.shown) <= MAX_LINES < len(choice.ranked) == 18
    defaults = {f"UCX_RNDV_THRESH=auto, UCX_TLS=all, stack={s}" for s in MANY["stack"]}
    assert set(choice.defaults) == defaults and defaults <= set(choice.shown)
    # The best by the median over the sizes of the ratio to the best setting at each size
    # (a median, not a geometric mean of ratios) is shown.
    ratio = choice.ratio
    score = {c: float(ratio[c].dropna().median()) for c in ratio.columns}
    assert score[choice.ranked[0]] == min(score.values()) and choice.ranked[0] in choice.shown
    assert all(score[a] <= score[b] for a, b in zip(choice.ranked, choice.ranked[1:]))
    assert (ratio.min(axis=1) == 1.0).all()  # per size, the best is 1
    text = (many / "report/report.md").read_text()
    assert f"The plot draws {MAX_LINES} or fewer of the 18 settings" in text
    png = many / "report" / f"{section.slug}.png"
    height, width = matplotlib.image.imread(png).shape[:2]
    assert width == 1000 and height > 700  # lines above, the heat map below


def test_few_settings_keep_one_line_each_and_no_heat_map(few):
    for section in _sections(few):
        choice = choose(section)
        assert choice.ratio is None and choice.shown == list(section.mean.columns)
        height, width = matplotlib.image.imread(few / "report" / f"{section.slug}.png").shape[:2]
        assert (width, height) == (770, 495)
    assert "The plot draws" not in (few / "report/report.md").read_text()


def test_plots_whose_numbers_did_not_change_are_not_drawn_again(tmp_path):
    root = bench.write_campaign(tmp_path / "bench" / "redraw", FEW, 1)
    write_report(root)
    pngs = {p.name: p.stat().st_mtime_ns for p in (root / "report").glob("*.png")}
    assert len(pngs) == 4 and (root / "report" / HASHES).is_file()
    write_report(root)
    assert {p.name: p.stat().st_mtime_ns for p in (root / "report").glob("*.png")} == pngs
    # A new setting of Alltoall at np=2 (the matrix grew) changes that plot only.
    campaign = Campaign(root)
    record = next(r for r in campaign.records()
                  if r.params["benchmarks"] == "Alltoall" and r.ranks == 2)
    params = dict(record.params, UCX_RNDV_THRESH="8192")
    axes = dict(FEW, UCX_RNDV_THRESH=[*FEW["UCX_RNDV_THRESH"], "8192"])
    point_id = Point("imb-mpi1", tuple(sorted(params.items()))).id
    session = next((root / "sessions").iterdir()).name
    for repeat in (1, 2, 3):
        bench.write_record(campaign, params, point_id, repeat, axes, Record.load(bench.RECORD),
                           bench.template_rows(), random.Random(repeat), session)
    write_report(root)
    after = {p.name: p.stat().st_mtime_ns for p in (root / "report").glob("*.png")}
    changed = {name for name in pngs if after[name] != pngs[name]}
    assert changed == {"alltoall_np2.png"}


def test_a_plot_is_the_same_whatever_the_worker_drew_before_it(many, few, tmp_path):
    heat, lines = _sections(many)[0], _sections(few)[0]
    # 60 and 70 settings: the same layout; the heat map names 60 rows, numbers 70.
    copies = {f"{c}, copy={k}": heat.mean[c] * (1 + k / 50) for k in range(4) for c in heat.mean}
    named, numbered = (dataclasses.replace(heat, mean=mean, low=mean * math.nan,
                                           high=mean * math.nan)
                       for mean in (pd.DataFrame(copies).iloc[:, :n] for n in (60, 70)))

    def dashed(section):  # with bands
        return dataclasses.replace(section, low=section.mean * 0.9, high=section.mean * 1.1,
                                   repeats=10, condition=Condition(oversubscribed=True))

    def narrow(section):  # less than a decade: labelled minor ticks
        mean = section.mean.clip(upper=section.mean.min().min() * 4)
        return dataclasses.replace(section, mean=mean, low=mean, high=mean)

    plots = [heat, dashed(heat), narrow(heat), heat, lines, dashed(lines), narrow(lines), lines,
             named, dashed(numbered), named]
    for k, section in enumerate(plots):  # one after the other, as a worker draws them
        plot_section(section, tmp_path / f"{k}.png")
    for k, section in enumerate(plots):  # each in a thread of its own: on a new figure
        thread = threading.Thread(target=plot_section, args=(section, tmp_path / f"{k}_new.png"))
        thread.start()
        thread.join()
        assert (tmp_path / f"{k}.png").read_bytes() == (tmp_path / f"{k}_new.png").read_bytes(), k


def test_study_sections_and_their_rows_only_for_the_studys_campaigns(many):
    text = (many / "report/report.md").read_text()
    assert "OCI tuning-study" not in text and "GASNet-EX paper" not in text
    assert not (many / "report/oracle_images.csv").exists()
    loaded = load(many, lambda r: any(s.needs_rows(r, {}) for s in STUDIES))
    assert loaded.records and all(r.parsed == [] for r in loaded.records)
    assert len(loaded.samples.values) == 18 * 3 * len(bench.SIZES)
    tune = {"tune": {"step": "tls", "incumbent": {"UCX_TLS": "all"}}}
    assert any(s.needs_rows(loaded.records[0], tune) for s in STUDIES)  # a tuning step's


def test_numbers_have_four_significant_digits_never_finer_than_printed():
    computed = Resolution.of(1e-12, [0.043333, 3.2067])
    assert (computed.format(0.043333), computed.format(3.2067)) == ("0.04333", "3.207")
    assert computed.format(123456.7) == "123457" and computed.format(9.99996) == "10.00"
    imb = Resolution.of(0.01, [0.04, 3207.45])
    assert [imb.format(v) for v in (0.0433, 3.2067, 42.424, 3207.45, 0.0)] == \
        ["0.04", "3.21", "42.42", "3207", "0.00"]
    assert cell(0.42333, 0.40, 0.45, 7, imb, 7, ["⚠ov"]) == "0.42 [0.40–0.45] (7) ⚠ov"
    assert cell(0.42333, None, None, 3, imb) == "0.42 (3)"  # no interval below 6 repeats
    assert significant(-0.5) == "-0.5000"


def test_table_cells_of_a_large_campaign_have_consistent_digits(many):
    text = (many / "report/report.md").read_text()
    numbers = re.findall(r"\| (\d+\.?\d*)(?: \[(\d+\.?\d*)–(\d+\.?\d*)\])? \(\d+\)", text)
    assert numbers
    for group in numbers:
        for number in filter(None, group):
            whole, _, decimals = number.partition(".")
            digits = len((whole + decimals).lstrip("0"))
            assert len(decimals) <= 2  # IMB printed 0.01
            assert digits <= 4 or not decimals, number


@pytest.mark.parametrize("root", [REPO / "tests/fixtures/campaigns/local/schema1-local",
                                  REPO / "results/betzy/reference"])
def test_the_column_wise_summary_equals_the_record_by_record_one(root):
    records = list(Campaign(root).records())
    expected = aggregate(records)
    s = load(root, lambda r: True).samples
    got = summary_frame(s.point_ids, s.key_names, s.keys, s.metrics, s.values,
                        s.oversubscribed, s.points).to_dict("records")
    assert len(got) == len(expected) > 0

    def key(row):
        return json_key({k: v for k, v in row.items() if not _missing(v)})

    by_key = {key(row): row for row in got}
    for row in expected:
        other = by_key[key(row)]
        for name, value in row.items():
            if name in ("ci_low", "ci_high") and value is None:  # no interval: NaN in a frame
                assert math.isnan(other[name]), name
            elif isinstance(value, float):
                assert math.isclose(value, other[name], rel_tol=1e-12), name
            else:
                assert str(value) == str(other[name]), name


def json_key(row: dict) -> tuple:
    names = ("point_id", "benchmark", "np", "bytes", "mode", "group", "node", "core")
    return tuple(str(row.get(n)) for n in names)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def test_status_reads_each_record_once_and_agrees_with_the_store(tmp_path):
    root = bench.write_campaign(tmp_path / "bench" / "status", FEW, 1)
    campaign = Campaign(root)
    records = list(campaign.records())
    # Schema 3 (compact, as `run` writes now) beside schema 2, a failure, a repeat not yet run.
    compact = records[0]
    path = campaign.attempts(compact.point_id, compact.repeat)[0].record_path
    path.unlink()
    write_new(path, compact.dumps())
    failed = records[1]
    _, attempt = campaign.claim(failed.point_id, 4)
    crash = dataclasses.replace(failed, repeat=4, status="crash", parsed=[])
    write_new(attempt.record_path, crash.dumps())
    attempt.release()
    _, attempt = campaign.claim(records[2].point_id, 5)
    attempt.release()  # an attempt without a record (killed before it wrote one)
    scan = scan_campaign(campaign)
    pairs = {(r.point_id, r.repeat) for r in records} | {(failed.point_id, 4),
                                                         (records[2].point_id, 5)}
    for point_id, repeat in pairs:
        assert scan.state(point_id, repeat) == campaign.state(point_id, repeat)
    assert scan.state(failed.point_id, 4) == "failed"


def test_report_without_the_report_extra_ends_in_one_sentence(few):
    code = ("import sys; sys.modules['pandas'] = None; from commstack.cli import main; "
            f"sys.exit(main(['report', {str(few)!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO / "src")), cwd=REPO)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "commstack report needs the Python package 'pandas'" in lines[0]
    assert "pip install 'commstack[report]'" in lines[0]


@pytest.mark.parametrize("root", [REPO / "tests/fixtures/campaigns/local/schema1-local",
                                  REPO / "results/betzy/reference"])
def test_samples_read_from_a_stored_table_equal_those_of_its_rows(root, tmp_path):
    """Schema 3 keeps rows as a table; the report reads its samples column by column. The same
    records written in schema 3 give the samples (and, where kept, the rows) of the originals."""
    copy = tmp_path / root.name
    shutil.copytree(root, copy)
    paths = sorted(copy.glob("points/*/rep*.try*/record.json"))
    assert paths
    for path in paths:
        path.write_bytes(Record.load(path).dumps())
    assert any('"blocks"' in p.read_text() for p in paths)
    for keep in (True, False):
        before, after = load(root, lambda r, k=keep: k), load(copy, lambda r, k=keep: k)
        for name in ("point_ids", "key_names", "keys", "metrics", "values", "oversubscribed",
                     "points"):
            assert getattr(after.samples, name) == getattr(before.samples, name), name
        assert [r.parsed for r in after.records] == [r.parsed for r in before.records]


@pytest.mark.parametrize("ok", [True, False])
def test_a_broken_stored_table_is_named(tmp_path, ok):
    root = tmp_path / "broken"
    shutil.copytree(REPO / "tests/fixtures/campaigns/local/schema1-local", root)
    path = next(p for p in sorted(root.glob("points/*/rep*.try*/record.json"))
                if Record.load(p).parsed and Record.load(p).ok == ok)
    data = json.loads(Record.load(path).dumps())
    data["parsed"]["blocks"][0]["rows"][0].append(1.0)  # one value more than its columns
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=f"{re.escape(str(path))}: parsed: not a.* table of"):
        load(root, lambda r: False)
