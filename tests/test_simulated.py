"""Must show (issue 36, "Honesty"): simulated is never measured. Every simulated record, its
rows in records.csv and the Parquet index, the report (banner, host line, every column, plot
line and study setting), the history, the dashboard, `compare`, the baselines and a tune's files
say "simulated" and name the platform; `compare` refuses to set a simulated campaign against a
measured one unless asked (`--simulated-vs-measured`), and then says which side is which; a
baseline is never of the other kind.

Simulated records are written by `commstack run`, the sweep's own code, with SimGrid SMPI:
the real `smpirun` and an SMPI build of IMB, from environments/local's view smpi
(scripts/setup_spack.sh) or `COMMSTACK_SMPI_IMB_BIN` (the folder of an SMPI IMB-MPI1, with
`smpirun` on PATH); where neither is here the tests that run it say "skipped: no SimGrid SMPI".
The measured side is Intel MPI from PyPI, on this machine. Each marking is asserted where it
stands, so a test fails when the marking is removed. tests/fixtures/imb/smpi-3.32 keeps real
simulated outputs for the parser.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO
from tests.sweeps import commstack, records, records_csv

FIXTURES = REPO / "tests" / "fixtures" / "imb" / "smpi-3.32"
PLATFORM = "bm-optimized3-36 (node type nps1)"
MARK = "(simulated)"
# One matrix, two stacks: the simulated one on two simulated nodes, the measured one here. A run
# of only its simulated points (--nodes 2) or only its measured ones (--nodes 1) is a campaign
# of one kind with the same matrix text (what baselines are chosen by).
MIXED = """\
benchmark: imb-mpi1
repeats: 1
timeout: 300
stacks:
  sim: {{flavour: smpi, launcher: "{launcher}", bin: "{bin}"}}
  impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
parameters: {{benchmarks: "PingPong Allreduce", msglog: "0:6", iter: 50}}
zip:
  - stack: [sim, impi]
    nodes: [2, 1]
    ranks_per_node: [1, 2]
"""

PLAN = """\
campaign: sim-tune
base:
  benchmark: imb-mpi1
  repeats: 6
  timeout: 300
  stacks:
    sim: {{flavour: smpi, launcher: "{launcher}", bin: "{bin}"}}
  parameters: {{stack: sim, msglog: "8:12", iter: 10, npmin: 4, nodes: 2, ranks_per_node: 2,
               mapping: block}}
cases:
  benchmarks: [Allreduce]
defaults:
  smpi.allreduce: redbcast
steps:
  - name: algorithms
    product: {{smpi.allreduce: [redbcast, rdb, smp_binomial]}}
decision: {{threshold: 0.05}}
"""


# --- how simulated records are made -------------------------------------------------------------


def real_smpi():
    """(smpirun, folder of an SMPI build of IMB-MPI1): environments/local's view smpi, else
    $COMMSTACK_SMPI_IMB_BIN with smpirun on PATH; or skip with the reason."""
    view = REPO / "environments" / "local" / "views" / "smpi" / "bin"
    if (view / "smpirun").exists() and (view / "IMB-MPI1").exists():
        return str(view / "smpirun"), view
    smpirun, imb = shutil.which("smpirun"), os.environ.get("COMMSTACK_SMPI_IMB_BIN")
    if not smpirun or not imb or not (Path(imb) / "IMB-MPI1").exists():
        pytest.skip("skipped: no SimGrid SMPI with an SMPI build of IMB (bash scripts/"
                    "setup_spack.sh builds environments/local's view smpi; or smpirun on PATH "
                    "and COMMSTACK_SMPI_IMB_BIN=<folder of its IMB-MPI1>)")
    return smpirun, Path(imb)


@functools.lru_cache(maxsize=None)
def smpi_version() -> str:
    """The version the real smpirun says it is ("SimGrid version 4.1"), as records name it."""
    done = subprocess.run([real_smpi()[0], "-version"], capture_output=True, text=True,
                          timeout=60)
    return re.search(r"SimGrid version (\S+)", done.stdout + done.stderr)[1].rstrip(".")


@pytest.fixture(scope="module")
def smpi():
    """(launcher, bin folder) of the simulated stack: the real smpirun and SMPI IMB."""
    return real_smpi()


def _env():
    return dict(os.environ, COMMSTACK_SITE_CONFIGS=str(REPO / "site-configs"))


def _run(matrix: Path, results: Path, campaign: str, *extra: str) -> Path:
    done = commstack("run", str(matrix), "--out", str(results), "--campaign", campaign, *extra,
                     env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    time.sleep(1.1)  # campaigns are dated by their session's UTC second
    return results / "bm-optimized3-36" / campaign


@pytest.fixture(scope="module")
def simulated(smpi, tmp_path_factory) -> Path:
    """A campaign of simulated runs only (the simulated points of the mixed matrix)."""
    tmp = tmp_path_factory.mktemp("simulated")
    matrix = tmp / "matrices" / "bm-optimized3-36" / "mix.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MIXED.format(launcher=smpi[0], bin=smpi[1]))
    return _run(matrix, tmp / "results", "sim-a", "--nodes", "2")


@pytest.fixture(scope="module")
def store(smpi, impi_root, tmp_path_factory) -> Path:
    """results/ with campaigns of one matrix, in this order: simulated (sim-a), measured
    (meas-b), both kinds (both), simulated (sim-c), measured (meas-d)."""
    tmp = tmp_path_factory.mktemp("store")
    matrix = tmp / "matrices" / "bm-optimized3-36" / "mix.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text(MIXED.format(launcher=smpi[0], bin=smpi[1]))
    results = tmp / "results"
    here = ("--local", "--no-machine-check")  # the measured stack runs on this host
    _run(matrix, results, "sim-a", "--nodes", "2")
    _run(matrix, results, "meas-b", "--nodes", "1", *here)
    _run(matrix, results, "both", *here)
    _run(matrix, results, "sim-c", "--nodes", "2")
    _run(matrix, results, "meas-d", "--nodes", "1", *here)
    return results


def _campaign(store: Path, name: str) -> Path:
    return store / "bm-optimized3-36" / name


# --- the fixtures ------------------------------------------------------------------------------


def test_the_fixture_manifest_lists_every_run_and_each_parses():
    from commstack.benchmarks.imb import parse_imb as parse

    with open(FIXTURES / "MANIFEST.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["file"] for r in rows} == {p.name for p in FIXTURES.glob("*.out")}
    for row in rows:
        assert (FIXTURES / row["file"].replace(".out", ".err")).exists()
        assert row["mpi"] == "smpi" and "simulated, not measured" in row["note"]
        output = parse((FIXTURES / row["file"]).read_text())
        assert output.meta["version"] == row["imb_version"] and output.rows
    text = "".join(p.read_text() for p in FIXTURES.iterdir())
    # no folder of the machine the runs were made on (its temporary, work and home folders)
    assert not [d for d in ("tmp", "work", "root", "home") if f"/{d}/" in text]


# --- records, records.csv, the index, query ---------------------------------------------------


def test_each_simulated_record_names_the_simulator_and_platform(simulated):
    found = records(simulated)  # checked against the record's JSON Schema
    assert found and all(r["status"] == "ok" for r in found)
    for r in found:
        sim = r["simulation"]
        assert (sim["simulator"], sim["version"], sim["platform"]) == (
            "SimGrid SMPI", smpi_version(), PLATFORM)
        assert sim["model"].startswith(PLATFORM) and "placeholders (VERIFY)" in sim["model"]


def test_records_csv_and_the_index_carry_the_platform(simulated):
    pytest.importorskip("pyarrow", reason="skipped: pyarrow not installed (pip install 'commstack[index]')")
    from commstack.store import tidy_index

    rows = list(csv.DictReader(io.StringIO(records_csv(simulated))))
    assert rows and {r["simulated"] for r in rows} == {PLATFORM}
    index = tidy_index.read_rows([simulated])
    assert index and {r["simulated"] for r in index} == {PLATFORM}


def test_query_filters_on_simulated_and_keeps_kinds_apart(store):
    pytest.importorskip("duckdb", reason="skipped: DuckDB not installed (pip install 'commstack[query]')")
    both = _campaign(store, "both")
    out = commstack("query", str(both), "--csv", "--sql",
                    "SELECT stack, simulated, count(*) AS n FROM rows GROUP BY ALL ORDER BY 1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "stack,simulated,n"
    assert lines[1].startswith("impi,,") and lines[2].startswith(f"sim,{PLATFORM},")
    measured = commstack("query", str(both), "--csv", "--sql",
                         "SELECT DISTINCT stack FROM rows WHERE simulated IS NULL")
    assert measured.stdout.splitlines()[1:] == ["impi"]
    best = commstack("query", str(both), "--best-per-size", "--benchmark", "imb-mpi1",
                     "--test", "PingPong", "--csv")
    assert best.returncode == 0, best.stderr
    table = list(csv.DictReader(best.stdout.splitlines()))
    # each kind is its own comparison: every size has one row per kind, the only setting there
    assert {r["simulated"] for r in table} == {"", PLATFORM}
    for r in table:
        assert r["verdict"] == "only setting " + ("simulated" if r["simulated"] else "measured")
        assert r["setting"].endswith(MARK) == bool(r["simulated"])


def records_of(root: Path):
    from commstack.store.campaign import Campaign

    return list(Campaign(root).records())


# --- the report -------------------------------------------------------------------------------


def _report(root: Path) -> str:
    done = commstack("report", str(root))
    assert done.returncode == 0, done.stderr[-3000:]
    return (root / "report" / "report.md").read_text()


def _columns(report: str) -> list:
    """The column labels of every table in the report (the first column, the rows', aside)."""
    return [cell.strip() for line in report.splitlines() if line.startswith("| bytes |")
            for cell in line.strip("|").split("|")[1:]]


def test_a_simulated_report_says_so_first_and_in_every_column(simulated):
    report = _report(simulated)
    lines = report.splitlines()
    assert lines[2].startswith("> **Simulated, not measured.**")
    banner = "\n".join(line for line in lines if line.startswith(">"))
    for said in (f"SimGrid SMPI {smpi_version()}", PLATFORM, "- model: " + PLATFORM,
                 "placeholders (VERIFY", "network.topology.nodes_per_leaf 16"):
        assert said in banner
    # The host line does not read as if the numbers were measured on this host.
    assert not any(line.startswith("- host: ") for line in lines)
    host = next(line for line in lines if "CPUs available" in line)
    assert host.startswith("- simulation host (where the simulator ran; no number below was "
                           "measured on it)") and PLATFORM in host
    stack = next(line for line in lines if line.startswith("- stack `sim`"))
    assert f"simulated by SimGrid SMPI {smpi_version()} on {PLATFORM}" in stack
    columns = _columns(report)
    assert columns and all(c.endswith(MARK) for c in columns)
    with open(simulated / "summary.csv", newline="") as handle:
        summary = list(csv.DictReader(handle))
    assert summary and {r["simulated"] for r in summary} == {PLATFORM}


def test_the_plots_legend_says_simulated_and_draws_it_dotted(simulated, tmp_path):
    pytest.importorskip("matplotlib")
    from commstack.report import plots
    from commstack.report.document import _summary
    from commstack.report.load import load
    from commstack.report.tables import sections

    loaded = load(simulated, lambda r: False)
    platforms = {r.point_id: r.simulation["platform"] for r in loaded.records if r.simulation}
    found = sections(_summary(loaded.samples, platforms=platforms))
    assert found
    for section in found:
        plots.plot_section(section, tmp_path / f"{section.slug}.png")
        ax = plots._THREAD.kept.ax
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend and all(text.endswith(MARK) for text in legend)
        assert {line.get_linestyle() for line in ax.get_lines()} == {":"}
        assert "simulated, not measured" in ax.get_title()


def test_a_report_of_both_kinds_says_which_stack_is_which(store):
    report = _report(_campaign(store, "both"))
    lines = report.splitlines()
    assert lines[2].startswith("> **Partly simulated, not all measured.** The stack `sim` is "
                               f"simulated (SimGrid SMPI {smpi_version()} on the platform {PLATFORM})")
    assert "The stack `impi` was measured." in lines[2]
    host = next(line for line in lines if "CPUs available" in line)
    assert "the measured stacks ran here" in host and PLATFORM in host
    columns = _columns(report)
    assert {c.endswith(MARK) for c in columns} == {True, False}
    for c in columns:
        assert c.endswith(MARK) == ("stack=sim" in c)
    with open(_campaign(store, "both") / "summary.csv", newline="") as handle:
        summary = list(csv.DictReader(handle))
    assert {(r["stack"], r["simulated"]) for r in summary} == {("impi", ""), ("sim", PLATFORM)}


def test_the_results_index_names_each_campaign_s_kind(store):
    done = commstack("report", "--index", str(store))
    assert done.returncode == 0, done.stderr
    rows = {line.split(" | ")[1]: line.split(" | ")[5] for line in
            (store / "README.md").read_text().splitlines() if line.startswith("| bm-")}
    assert rows["sim-a"].startswith(f"simulated on {PLATFORM}; 1 session(s)")
    assert rows["both"].startswith(f"simulated on {PLATFORM} and measured; ")
    assert rows["meas-b"].startswith("1 session(s)")


def test_a_measured_report_says_nothing_of_simulation(store):
    report = _report(_campaign(store, "meas-b"))
    assert "simulated" not in report.lower() and "- host: " in report


def test_a_slow_stack_is_never_a_simulated_one_against_a_measured_one(store):
    from commstack.report import slow_stack
    from commstack.report.load import load

    samples = load(_campaign(store, "both"), lambda r: False).samples
    # The two stacks' points as if they differed by the stack alone (their job shapes aside).
    for pid, (params, benchmark, ranks) in list(samples.points.items()):
        samples.points[pid] = ({k: v for k, v in params.items()
                                if k not in ("nodes", "ranks_per_node")}, benchmark, ranks)
    assert set(slow_stack.factors(samples)) == {"sim", "impi"}  # set against each other
    assert slow_stack.factors(samples, {"sim": PLATFORM}) == {}  # never: another kind


def test_layout_columns_and_cells_of_simulated_numbers_are_marked():
    from commstack import stats
    from commstack.report.layout import Cell, Label, Table, _marked

    tab = Table(rows=[Label("a"), Label("b")], columns=[Label("h1f1"), Label("h2f1")])
    sim, real = stats.describe([1.0, 1.1]), stats.describe([2.0, 2.1])
    whole, mixed = _marked(tab, [[Cell(sim, (), PLATFORM), Cell(sim, (), PLATFORM)],
                                 [Cell(sim, (), PLATFORM), Cell(real)]])
    assert whole == [f"h1f1 {MARK}", "h2f1"]  # every number of h1f1 simulated
    assert not mixed[0][0].endswith(MARK) and mixed[0][1].endswith(MARK)
    assert not mixed[1][1].endswith(MARK)


def test_study_settings_of_simulated_runs_are_marked():
    from commstack.figures import Figure
    from commstack.report import guidelines
    from commstack.report.studies import gasnet, oracle

    simulation = {"simulator": "SimGrid SMPI", "version": "3.32", "platform": PLATFORM,
                  "model": PLATFORM}
    figs = [Figure({"stack": "sim"}, {"benchmark": "Unidir_put", "bytes": 8}, "t_us", True,
                   simulation=simulation),
            Figure({"stack": "impi"}, {"benchmark": "Unidir_put", "bytes": 8}, "t_us", True)]
    labels = gasnet._config_labels(figs)
    assert labels[id(figs[0])] == f"stack=sim {MARK}" and labels[id(figs[1])] == "stack=impi"
    series = gasnet.Series(labels[id(figs[0])], "Put", {}, 1)
    assert series.label == f"MPI Put (stack=sim) {MARK}" and series.simulated
    setting = guidelines.Setting("imb", "sim", 4, "{}")
    guidelines.mark_simulated([setting], [SimpleNamespace(stack="sim", simulation=simulation)])
    assert setting.label.endswith(MARK)
    curve = oracle.Curve("p", {}, {}, simulated=PLATFORM)
    assert curve.named("rdb") == f"rdb {MARK}" and oracle.Curve("q", {}, {}).named("rdb") == "rdb"


def test_the_sync_method_section_names_a_simulated_stack():
    """ReproMPI's synchronisation section, of real runs' outputs given a simulation."""
    from commstack.report import sync_method
    from tests.test_guidelines import FIXTURE as REPROMPI
    from tests.test_guidelines import _record

    texts = {name: (REPROMPI.parent / f"{name}-v-bcast-np2.out").read_text()
             for name in ("barrier", "window")}
    records = []
    for name, sync in (("barrier", "MPI_Barrier"), ("window", "window")):
        rec = _record(texts[name], "ompi")
        rec.point_id, rec.params = name, {"stack": "ompi", "proc_sync": sync, "verbose": True}
        rec.simulation = {"simulator": "SimGrid SMPI", "platform": PLATFORM, "model": PLATFORM}
        records.append(rec)
    lines = sync_method.section(records, lambda r: texts[r.point_id])
    assert any(line.startswith(f"- ompi {MARK}, window vs MPI_Barrier:") for line in lines)
    assert any(line.startswith(f"| ompi {MARK} | window | MPI_Bcast") for line in lines)


# --- compare ----------------------------------------------------------------------------------


def test_compare_refuses_simulated_against_measured_unless_asked(store, tmp_path):
    a, b = _campaign(store, "sim-a"), _campaign(store, "meas-b")
    args = ("compare", str(a), str(b), "--ignore", "nodes", "--ignore", "ranks_per_node")
    refused = commstack(*args)
    assert refused.returncode == 2
    assert f"A ({a}) is simulated (SimGrid SMPI {smpi_version()}, platform {PLATFORM})" in refused.stderr
    assert f"B ({b}) is measured" in refused.stderr and "--simulated-vs-measured" in refused.stderr
    out = tmp_path / "cmp.md"
    asked = commstack(*args, "--simulated-vs-measured", "--out", str(out))
    assert asked.returncode in (0, 1), asked.stderr
    first = asked.stdout.splitlines()[0]
    assert first == (f"**Simulated against measured: A ({a}) is simulated (SimGrid SMPI {smpi_version()}, "
                     f"platform {PLATFORM}); B ({b}) is measured. A difference between them is "
                     "the simulation's error as much as any change: no verdict below is a "
                     "regression or an improvement of a machine.**")
    assert out.read_text() == asked.stdout
    rows = [line.split("|") for line in asked.stdout.splitlines() if "| t_" in line]
    verdicts = [cells[-2].strip() for cells in rows]
    assert verdicts and all(v.endswith("(B measured vs A simulated)") for v in verdicts)
    assert not any(v.startswith(("regression", "improvement")) for v in verdicts)
    assert f"| A (simulated on {PLATFORM}) | B (measured) |" in asked.stdout


def test_compare_of_two_simulations_says_so_and_two_measurements_as_before(store):
    same = commstack("compare", str(_campaign(store, "sim-a")), str(_campaign(store, "sim-c")))
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith(f"**Both sides are simulated (SimGrid SMPI {smpi_version()}, platform "
                                  f"{PLATFORM}): A (")
    assert "| benchmark=PingPong, bytes=0 (simulated) |" in same.stdout
    measured = commstack("compare", str(_campaign(store, "meas-b")), str(_campaign(store, "meas-d")))
    assert measured.returncode in (0, 1), measured.stderr
    assert measured.stdout.startswith("# ") and "simulated" not in measured.stdout


def test_reference_values_of_a_simulation_are_no_reference_for_a_measurement(store, tmp_path):
    refs = tmp_path / "refs.yaml"
    made = commstack("compare", str(_campaign(store, "sim-a")), "--write-reference", str(refs))
    assert made.returncode == 0, made.stderr
    text = refs.read_text()
    assert "# SIMULATED, NOT MEASURED" in text and f"simulated: {PLATFORM}" in text
    measured = _campaign(store, "meas-b")
    refused = commstack("compare", str(measured), "--reference", str(refs))
    assert refused.returncode == 2 and "--simulated-vs-measured" in refused.stderr
    asked = commstack("compare", str(measured), "--reference", str(refs), "--simulated-vs-measured")
    assert asked.stdout.startswith("**Simulated against measured: A (") and asked.returncode in (0, 1)


# --- baselines ------------------------------------------------------------------------------


def test_a_baseline_is_never_of_the_other_kind(store):
    meas_d, sim_c = _campaign(store, "meas-d"), _campaign(store, "sim-c")
    out = commstack("compare", str(meas_d), "--baseline-last", "3")
    assert out.returncode == 0, out.stderr
    head = out.stdout.split("\n# ", 1)[0]
    assert head.startswith(f"Baseline: {_campaign(store, 'meas-b')} (")
    for other in ("sim-a", "both", "sim-c"):
        assert f"Not a baseline of meas-d: {_campaign(store, other)} (" in head
    assert f"is simulated (SimGrid SMPI {smpi_version()}" in head and "is partly simulated" in head
    sim = commstack("compare", str(sim_c), "--baseline-last", "3")
    assert sim.returncode == 0, sim.stderr
    assert sim.stdout.startswith("**Both sides are simulated")
    assert f"Baseline: {_campaign(store, 'sim-a')} (" in sim.stdout
    assert f"Not a baseline of sim-c: {_campaign(store, 'meas-b')} (" in sim.stdout
    named = commstack("compare", str(meas_d), "--baseline", str(sim_c))
    assert named.returncode == 2 and "never the baseline of one of another kind" in named.stderr
    alone = commstack("compare", str(_campaign(store, "meas-b")), "--baseline-last", "1")
    assert alone.returncode == 2 and "1 of another kind" in alone.stderr


def test_each_campaign_is_compared_with_the_one_of_its_kind_before_it(store):
    from commstack.compare_previous import comparisons

    rows = {r["campaign"]: r for r in comparisons([store])}
    assert rows["bm-optimized3-36/meas-d"]["baseline"] == "bm-optimized3-36/meas-b"
    assert rows["bm-optimized3-36/meas-d"]["simulated"] is None
    assert rows["bm-optimized3-36/sim-c"]["baseline"] == "bm-optimized3-36/sim-a"
    assert rows["bm-optimized3-36/sim-c"]["simulated"] == f"simulated on {PLATFORM}"
    assert set(rows) == {"bm-optimized3-36/meas-d", "bm-optimized3-36/sim-c"}


# --- history and dashboard ----------------------------------------------------------------------


def test_history_never_joins_simulated_and_measured_values(store, tmp_path, monkeypatch):
    pytest.importorskip("duckdb", reason="skipped: DuckDB not installed (pip install 'commstack[query]')")
    out = commstack("history", str(store), "--where", "test=PingPong", "--where", "bytes=16",
                    "--csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(out.stdout.splitlines()))
    for r in rows:
        simulated = r["campaign"] in ("sim-a", "sim-c") or "stack=sim" in r["point"]
        assert r["point"].endswith(MARK) == simulated
        assert r["origin"] == (f"simulated on {PLATFORM}" if simulated else "measured")
    assert {r["campaign"] for r in rows if r["point"].endswith(MARK)} == {"sim-a", "both", "sim-c"}
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    from commstack import history
    from commstack.store.results import open_store

    drawn = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: drawn.append(fig))
    con = open_store([store])
    try:
        series = history.history(con, {"test": "PingPong", "bytes": "16"})
    finally:
        con.close()
    history.plot(series, tmp_path / "history.png")
    (fig,) = drawn
    for ax, s in zip(fig.axes, [s for s in series if any(e.date for e in s.entries)]):
        title = ax.get_title()
        assert (f"simulated on {PLATFORM}, not measured" in title) == bool(s.simulated)
        (bars,) = ax.containers  # the errorbar: its data line, caps and bars
        assert bars.lines[0].get_linestyle() == (":" if s.simulated else "-")
        assert bars.get_label() == s.label(history.varying(series))


def test_the_dashboard_draws_simulated_curves_dotted_and_names_their_platform(store, tmp_path):
    pytest.importorskip("duckdb", reason="skipped: DuckDB not installed (pip install 'commstack[query]')")
    pytest.importorskip("plotly", reason="skipped: plotly not installed (pip install 'commstack[dashboard]')")
    out = commstack("dashboard", str(store), "--out", str(tmp_path / "site"))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "site" / "index.html").read_text()
    data = json.loads(text.split('<script id="data" type="application/json">')[1]
                      .split("</script>")[0].replace("<\\/", "</"))
    for curve in data["curves"]:
        assert (curve["simulated"] == PLATFORM) == (curve["stack"] == "sim")
        assert (f"(simulated on {PLATFORM})" in curve["label"]) == (curve["stack"] == "sim")
    kinds = {c["campaign"]: c["simulated"] for c in data["campaigns"]}
    assert kinds == {"sim-a": f"simulated on {PLATFORM}", "meas-b": None,
                     "both": f"simulated on {PLATFORM} and measured",
                     "sim-c": f"simulated on {PLATFORM}", "meas-d": None}
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    webdriver = pytest.importorskip("selenium.webdriver", reason="skipped: selenium not installed")
    if not chromium or not driver:
        pytest.skip("skipped: no Chromium (scripts/system-packages.txt group dashboard)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    browser = webdriver.Chrome(service=Service(driver), options=options)
    try:
        browser.get((tmp_path / "site" / "index.html").as_uri())
        for plot in ("plot-sizes", "plot-history"):
            traces = browser.execute_script(
                f"return document.getElementById('{plot}').data.map(t => [t.name, t.line.dash, "
                "t.marker.symbol])")
            assert traces
            for name, dash, symbols in traces:
                simulated = " | sim | " in name
                assert name.startswith(f"simulated on {PLATFORM} | ") == simulated, name
                assert dash == ("dot" if simulated else "solid"), name
                assert all(s.startswith("square" if simulated else "circle") for s in symbols)
    finally:
        browser.quit()


# --- a tune ----------------------------------------------------------------------------------


def test_a_simulated_tune_says_so_in_every_file_it_exports(smpi, tmp_path):
    plan = tmp_path / "plans" / "bm-optimized3-36" / "sim-tune.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(PLAN.format(launcher=smpi[0], bin=smpi[1]))
    done = commstack("tune", str(plan), "--out", str(tmp_path / "results"), env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    root = tmp_path / "results" / "bm-optimized3-36" / "sim-tune"
    case = root / "allreduce"
    assert f"SIMULATED on {PLATFORM}: tuned" in done.stdout
    tuned = case / "tuned"
    for name in ("ucx.env", "mca-params.conf"):
        first = (tuned / name).read_text().splitlines()[0]
        assert first.startswith("# SIMULATED, NOT MEASURED: chosen from runs simulated (") \
            and PLATFORM in first, name
    decision = json.loads((tuned / "decision.json").read_text())
    assert list(decision)[0] == "simulated"
    assert decision["simulated"]["platforms"] == [PLATFORM]
    assert decision["settings"] == {"smpi.allreduce": "rdb"}  # the fastest, by the tuner's rule
    assert decision["outcome"].startswith(f"SIMULATED on {PLATFORM}: ")
    step = json.loads((case / "algorithms" / "decision.json").read_text())
    assert PLATFORM in step["simulated"]
    decisions = (root / "decisions.md").read_text().splitlines()
    assert decisions[0].startswith("**Simulated, not measured:** 1 of 1 case(s) were tuned on "
                                   f"runs simulated on {PLATFORM}")
    assert "| simulated |" in decisions[2] and f"simulated on {PLATFORM}" in decisions[4]
    with open(root / "decisions.csv", newline="") as handle:
        assert [r["simulated"] for r in csv.DictReader(handle)] == [f"simulated on {PLATFORM}"]
    report = _report(case / "algorithms")
    assert f"## Tuning step 1: algorithms (OCI tuning-study style), simulated on {PLATFORM}" in report
    candidates = [line for line in report.splitlines() if line.startswith("| smpi.allreduce=")]
    assert candidates and all(MARK in line for line in candidates)


def test_an_exported_rules_file_of_a_simulated_tune_says_so(tmp_path, monkeypatch):
    from commstack import simulated as sim
    from commstack.benchmarks import registry
    from commstack.tune import export, ompi_rules_export
    from commstack.tune.staged import CaseResult

    rules = b"1\n2\n1\n1 0 3 0 0\n"
    monkeypatch.setattr(ompi_rules_export, "measured_file",
                        lambda verify, settings: (rules, "points/x/rep1.try1/rules.conf"))
    settings = {"mca.coll_tuned_allreduce_algorithm": "3:0-1023;4:1024-"}
    kind = sim.Kind((PLATFORM,), False, ("SimGrid SMPI 3.32",))
    result = CaseResult({"benchmarks": "Allreduce"}, settings, [], tmp_path, 0, dict(settings),
                        {"mca.coll_tuned_allreduce_algorithm": "0"},
                        {"faster": [1024], "slower": [], "same": [],
                         "data": {"default": {1024: [2.0] * 6}, "tuned": {1024: [1.0] * 6}}},
                        settings, kind)
    pytest.importorskip("matplotlib")
    export.write_case_files(result, registry.get("imb-mpi1"))
    text = (tmp_path / "tuned" / ompi_rules_export.FILE_NAME).read_bytes()
    assert text.startswith(b"# SIMULATED, NOT MEASURED: chosen from runs simulated (SimGrid SMPI "
                           b"3.32, platform " + PLATFORM.encode() + b"),")
    assert text.endswith(rules)


def test_a_measured_tune_exports_as_before(tmp_path):
    from commstack.benchmarks import registry
    from commstack.tune import export

    bench = registry.get("imb-mpi1")
    text = export.env_file({"UCX_TLS": "rc"}, bench, {"nodes": 2})
    assert text.startswith("# Tuned by commstack for nodes=2.") and "SIMULATED" not in text


# --- the words themselves -----------------------------------------------------------------------


def test_kinds_and_sentences():
    from commstack import simulated as sim

    simulation = {"simulator": "SimGrid SMPI", "version": "3.32", "platform": PLATFORM}
    simulated, measured = sim.kind_of([simulation]), sim.kind_of([None])
    mixed = sim.kind_of([simulation, None])
    assert simulated.describe() == f"simulated (SimGrid SMPI 3.32, platform {PLATFORM})"
    assert measured.describe() == "measured" and mixed.mixed
    assert not sim.same_kind(simulated, measured) and not sim.same_kind(simulated, mixed)
    assert sim.same_kind(simulated, sim.kind_of([simulation, simulation]))
    assert sim.comparison_sentence(measured, measured, "a", "b") is None
    assert sim.marked(sim.marked("x", True), True) == f"x {MARK}"
    assert sim.unmarked(f"x {MARK}") == "x"


def test_a_simulated_tune_whose_verify_could_not_run_exports_the_rules_file_it_chose(
        simulated, tmp_path):
    """SMPI cannot run a per-size value, so a simulated tune's verify is not run; its rules file
    is then written from the steps' choice, for the rank count the steps ran, and says so."""
    from commstack.benchmarks import registry
    from commstack.store.campaign import Campaign
    from commstack.store.campaign_kind import kind_of_campaigns
    from commstack.tune import export, ompi_rules_export
    from commstack.tune.staged import CaseResult

    pytest.importorskip("matplotlib")
    case = tmp_path / "case"
    shutil.copytree(simulated, case / "algorithms")  # real simulated runs as the step's
    matrix = next(simulated.glob("sessions/*/matrix.yaml")).read_text()
    (case / "algorithms" / "matrix.yaml").write_text(matrix)
    ranks = {r.ranks for r in Campaign(simulated).records() if r.ok}
    settings = {"mca.coll_tuned_allreduce_algorithm": "3:0-1023;4:1024-"}
    why = "SMPI forces one algorithm per collective for every message size"
    result = CaseResult({"benchmarks": "Allreduce"}, settings, [], case, 0, dict(settings),
                        {"mca.coll_tuned_allreduce_algorithm": "0"},
                        {"faster": [], "slower": [], "same": [], "not_run": why, "data": {}},
                        settings, kind_of_campaigns([case / "algorithms"]))
    summary = export.write_case_files(result, registry.get("imb-mpi1"))
    text = (case / "tuned" / ompi_rules_export.FILE_NAME).read_text()
    assert text.startswith("# SIMULATED, NOT MEASURED: chosen from runs simulated (")
    assert f"# For {min(ranks)} ranks, from:" in text
    assert re.search(r"^0 3 ", text, re.M) and re.search(r"^1024 4 ", text, re.M)
    assert summary["files"][ompi_rules_export.FILE_NAME].startswith(
        "written from the steps' choice: the verify did not run (" + why)
