"""Real browser: Debian's headless Chromium opens the tenant index and a failing run's page.

Reports come from real validations (Spark + Great Expectations), served by a http.server bound to
127.0.0.1 on a free port in a thread of this process. Playwright drives /usr/bin/chromium: it never
downloads a browser. Requests leaving 127.0.0.1 (GX Data Docs pull CSS/JS from CDNs) are aborted.
"""
from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from spark_jobs import quality
from spark_jobs.quality import report

pytestmark = [pytest.mark.integration, pytest.mark.browser]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
GOOD_RUN, BAD_RUN = "20261121T100000Z-0000aaaa", "20261121T110000Z-0000bbbb"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chromium():
    if not Path(CHROMIUM).exists():  # `make test` runs `make browser` first; a bare pytest installs it here
        subprocess.run(["make", "-s", "browser"], cwd=REPO, check=True)
    return CHROMIUM


@pytest.fixture(scope="module")
def reports_root(tmp_path_factory):
    """Two silver runs of tenant 'acme': a clean one, then one blocked by quarantined bad sensor ids."""
    import datetime as dt

    from spark_jobs.runs.session import build_session
    from tests.spark_jobs.quality.conftest import CONTRACT, SILVER_DDL, silver_rows

    state = tmp_path_factory.mktemp("state")
    mp = pytest.MonkeyPatch()
    mp.setenv("TENANTLAKE_STATE_DIR", str(state))
    spark = build_session("tenantlake-browser-test", driver_memory="1g", small_inputs=True)
    contract = {**CONTRACT, "expectations": {"silver": [{"name": "event_ts_freshness", "severity": "warn"}]}}
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    rows = [(r[0], r[1], now, r[3], r[4]) for r in silver_rows(30)]
    df = spark.createDataFrame(rows, SILVER_DDL)
    bad = [(f'{{"event_id": "q{i}", "sensor_id": "SENSOR-X{i}"}}', ["sensor_id_regex"], "landing/iot/b.json", BAD_RUN)
           for i in range(4)]
    for run_id, quarantined in ((GOOD_RUN, []), (BAD_RUN, bad)):
        quarantine_df = spark.createDataFrame(quarantined, "_raw string, _failed_rules array<string>, "
                                                           "_source_file string, _run_id string")
        context = {"run_id": run_id, "lake_uri": str(state / "lake"), "dataset": "iot", "tenant": "acme",
                   "quarantine_df": quarantine_df}
        validation = quality.validate_layer(spark, layer="silver", contract=contract, df=df, context=context)
        quality.publish_report(spark, layer="silver", contract=contract, validation=validation,
                               manifest={"rows_in": 30 + len(quarantined), "rows_out": 30,
                                         "quarantined": len(quarantined), "published": not validation.blocking},
                               context=context)
    root = report.mirror_root("acme")
    yield root
    mp.undo()
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def server(reports_root):
    handler = functools.partial(_QuietHandler, directory=str(reports_root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def page(chromium, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
                      else route.abort())
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def test_index_and_failing_run_page_show_the_failure_and_links_work(server, page, tmp_path):
    page.goto(f"{server}/index.html")
    assert page.title() == "Data quality: acme"
    section = page.locator("#silver-iot")
    assert section.locator("h2 .status").inner_text() == "FAIL"  # latest run's status
    assert section.locator("svg.trend rect.bar").count() == 2
    bad_row = page.locator(f'tr[data-run="{BAD_RUN}"]')
    assert bad_row.locator(".status").inner_text() == "FAIL"
    assert "sensor_id_regex" in bad_row.inner_text()
    assert page.locator(f'tr[data-run="{GOOD_RUN}"] .status').inner_text() == "PASS"
    page.screenshot(path=str(tmp_path / "index.png"), full_page=True)

    page.click(f'tr[data-run="{BAD_RUN}"] a')
    page.wait_for_load_state()
    assert page.url.endswith(f"/silver/iot/{BAD_RUN}/summary.html")
    assert page.locator("h1 .status").inner_text() == "FAIL"
    assert page.locator("#published").inner_text() == "no"
    assert "Not published." in page.locator("#reason").inner_text()
    assert "sensor_id_regex (4 unexpected of 34)" in page.locator("#reason").inner_text()
    failing = page.locator('tr[data-expectation="sensor_id_regex"]')
    assert failing.locator(".result").inner_text() == "FAIL"
    assert "failed" in (failing.get_attribute("class") or "")
    page.screenshot(path=str(tmp_path / "failing_run.png"), full_page=True)

    failing.locator('a[href="#q-sensor_id_regex"]').click()
    quarantine_row = page.locator("#q-sensor_id_regex")
    assert quarantine_row.is_visible() and "SENSOR-X" in quarantine_row.inner_text()

    page.click("#link-data-docs")
    page.wait_for_load_state()
    assert "/data_docs/validations/" in page.url
    assert "sensor_id" in page.content()
    page.screenshot(path=str(tmp_path / "data_docs.png"))

    page.go_back()
    page.click("#link-previous")
    page.wait_for_load_state()
    assert page.url.endswith(f"/silver/iot/{GOOD_RUN}/summary.html")
    assert page.locator("h1 .status").inner_text() == "PASS"
    page.click("#link-index")
    page.wait_for_load_state()
    assert page.url.endswith("/index.html")
    for name in ("index.png", "failing_run.png", "data_docs.png"):
        assert (tmp_path / name).stat().st_size > 10_000
