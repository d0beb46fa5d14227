"""Must show: `commstack dashboard` of the quick sweep (real Intel MPI runs, one with a failing
benchmark name beside it) and of the Betzy reference imports, opened in a real headless browser
(Debian's Chromium through Selenium's WebDriver): the page loads offline with no console error,
each plot renders its traces, a filter changes what is shown, failed and unclean runs are marked.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.sweeps import HALF_FAILING_MATRIX, commstack

pytestmark = pytest.mark.mpi
pytest.importorskip("plotly", reason="skipped: plotly not installed (pip install 'commstack[dashboard]')")
pytest.importorskip("duckdb", reason="skipped: DuckDB not installed (pip install 'commstack[query]')")
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="skipped: selenium not installed (pip install 'commstack[dashboard]')")

FAILING = HALF_FAILING_MATRIX


def _browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("skipped: no Chromium (apt install chromium chromium-driver; "
                    "scripts/system-packages.txt group dashboard)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1000",
                "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


@pytest.fixture(scope="module")
def site(impi_root, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("dashboard")
    matrices = tmp / "matrices" / "local"
    matrices.mkdir(parents=True)
    shutil.copy(REPO / "matrices" / "local" / "quick.yaml", matrices / "quick.yaml")
    (matrices / "failing.yaml").write_text(FAILING)
    results = tmp / "results"
    run = commstack("run", str(matrices / "quick.yaml"), "--out", str(results), timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    run = commstack("run", str(matrices / "failing.yaml"), "--out", str(results))
    assert run.returncode == 3, run.stderr[-3000:]
    shutil.copytree(REPO / "results" / "betzy", results / "betzy",
                    ignore=shutil.ignore_patterns("index", "report"))
    quick = results / "local" / "quick"
    _rerun(quick, results / "local" / "quick-rerun", days=1, factor=1.0)
    _rerun(quick, results / "local" / "quick-slow", days=2, factor=1.3)
    out = commstack("dashboard", str(results), "--out", str(tmp / "site"))
    assert out.returncode == 0, out.stderr
    assert "2 comparison(s) with an earlier campaign" in out.stderr
    return tmp / "site"


def _rerun(source: Path, target: Path, days: int, factor: float) -> None:
    """A copy of ``source`` run ``days`` later (its sessions renamed), every time x ``factor``:
    a rerun of the same matrix for the compare results."""
    from commstack.store.files import write_new_json
    from commstack.store.record import Record

    shutil.copytree(source, target, ignore=shutil.ignore_patterns("record.json", "report",
                                                                  "index", "*.csv"))
    for path in source.glob("points/*/rep*.try*/record.json"):
        rec = Record.load(path).to_dict()
        for row in rec.get("parsed") or []:
            row.update({k: row[k] * factor for k in ("t_min_us", "t_max_us", "t_avg_us", "t_us")
                        if isinstance(row.get(k), float)})
        write_new_json(target / path.relative_to(source), rec)
    for session in (target / "sessions").iterdir():
        stamp, rest = session.name.split("-", 1)
        when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ") + timedelta(days=days)
        session.rename(session.with_name(f"{when:%Y%m%dT%H%M%SZ}-{rest}"))


@pytest.fixture(scope="module")
def browser(site):
    driver = _browser()
    driver.get((site / "index.html").as_uri())
    yield driver
    driver.quit()


def _plotted(driver, plot: str) -> list:
    return driver.execute_script(
        f"return document.getElementById('{plot}').data.map(t => t.name)")


def test_the_page_is_self_contained(site):
    text = (site / "index.html").read_text()
    assert "<script src" not in text and "https://" not in text.split("<script>")[0]
    data = json.loads(text.split('<script id="data" type="application/json">')[1]
                      .split("</script>")[0].replace("<\\/", "</"))
    assert {c["machine"] for c in data["campaigns"]} == {"local", "betzy"}
    assert data["failed_total"] == 2


def test_loads_without_console_errors_and_every_plot_renders(browser):
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    for plot in ("plot-sizes", "plot-history"):
        traces = browser.execute_script(
            f"return document.querySelectorAll('#{plot} .scatterlayer .trace').length")
        assert traces > 0, f"{plot} drew nothing"
        points = browser.execute_script(
            f"return document.querySelectorAll('#{plot} .scatterlayer .point').length")
        assert points > 0


def test_a_filter_changes_what_is_shown(browser, tmp_path):
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "f-machine")).select_by_value("local")
    local = _plotted(browser, "plot-sizes")
    assert local and all(name.startswith("local | ") for name in local)
    Select(browser.find_element("id", "f-machine")).select_by_value("betzy")
    betzy = _plotted(browser, "plot-sizes")
    assert betzy and all(name.startswith("betzy | ") for name in betzy)
    rows = browser.execute_script("return document.querySelectorAll('#campaigns tr').length")
    assert rows == 2  # header + the one Betzy campaign
    assert "betzy" in browser.find_element("id", "shown").text or betzy
    browser.save_screenshot(str(tmp_path / "page.png"))
    assert (tmp_path / "page.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_failed_and_unclean_runs_are_marked(browser):
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "f-machine")).select_by_value("local")
    failed = browser.find_element("id", "failed").text
    assert failed.count("parse-error") == 2
    bad = browser.execute_script(
        "return [...document.querySelectorAll('#campaigns td.bad')].map(td => td.textContent)")
    assert "2" in bad  # the failing campaign's failed count, highlighted
    # 4 ranks on this machine's 2 CPUs are oversubscribed: hollow markers
    symbols = browser.execute_script(
        "return document.getElementById('plot-sizes').data.flatMap(t => t.marker.symbol)")
    cpus = len(__import__("os").sched_getaffinity(0))
    if cpus < 4:
        assert "circle-open" in symbols
    assert "circle" in symbols or cpus < 2


def test_each_rerun_is_compared_with_the_campaign_before_it(site, browser):
    text = (site / "index.html").read_text()
    data = json.loads(text.split('<script id="data" type="application/json">')[1]
                      .split("</script>")[0].replace("<\\/", "</"))
    rows = {r["campaign"]: r for r in data["comparisons"]}
    assert set(rows) == {"local/quick-rerun", "local/quick-slow"}
    same, slow = rows["local/quick-rerun"], rows["local/quick-slow"]
    assert (same["baseline"], same["verdict"], same["regressions"]) == ("local/quick", "PASS", 0)
    assert same["slowdown"] == 1.0 and same["figures"] > 0
    # Every time x 1.3: every paired pass slower, the whole campaign a broad slowdown.
    assert (slow["baseline"], slow["verdict"]) == ("local/quick-rerun", "FAIL")
    assert slow["broad_slowdown"] and abs(slow["slowdown"] - 1.3) < 0.01
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "f-machine")).select_by_value("local")
    table = browser.find_element("id", "comparisons").text
    assert "local/quick-slow" in table and "FAIL" in table and "PASS" in table
    bad = browser.execute_script(
        "return [...document.querySelectorAll('#comparisons td.bad')].map(td => td.textContent)")
    assert "FAIL" in bad
    Select(browser.find_element("id", "f-machine")).select_by_value("betzy")
    assert browser.execute_script(
        "return document.querySelectorAll('#comparisons tr').length") == 1  # the header alone
