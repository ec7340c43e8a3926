"""Real browser: the usage page ``make usage`` writes, and its place in the data-quality index, in Debian's
headless Chromium (the fixtures of test_dq_report.py: Playwright drives /usr/bin/chromium, nothing leaves
127.0.0.1).

The report comes from the real ``usage`` command over a folder lake holding real run manifests
(``RunManifest``), a maintenance report, an erasure receipt and data files in each layer."""
from __future__ import annotations

import datetime as dt
import functools
import http.server
import json
import threading

import pytest

from spark_jobs import cli
from spark_jobs.quality import report
from spark_jobs.runs.manifest import RunManifest
from tests.browser.test_dq_report import _QuietHandler, chromium, page  # noqa: F401 - fixtures

pytestmark = [pytest.mark.integration, pytest.mark.browser]

MONTH = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")
DAY = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d")


@pytest.fixture(scope="module")
def usage_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("usage")
    lake = root / "lake"
    for layer, seconds in (("bronze", 12.5), ("silver", 30.0), ("gold", 8.0)):
        for i, status in enumerate(("succeeded", "failed" if layer == "gold" else "succeeded")):
            run_id = f"{DAY}T0{i}0000Z-0000000{i}"
            manifest = RunManifest(run_id=run_id, dataset="iot", layer=layer, lake_uri=str(lake), started_at="x",
                                   code_version="v", status=status, duration_seconds=seconds, rows_in=100, rows_out=90)
            folder = lake / "reports" / layer / "iot" / run_id
            folder.mkdir(parents=True)
            (folder / "manifest.json").write_text(manifest.to_json())
    for key, size in (("landing/iot/a.json", 4000), ("bronze/iot/_batch_id=0/p.parquet", 9000),
                      ("silver/iot/data/s.parquet", 20000), ("gold/iot_hourly/data/g.parquet", 3000)):
        (lake / key).parent.mkdir(parents=True, exist_ok=True)
        (lake / key).write_bytes(b"x" * size)
    state = root / "state"
    mp = pytest.MonkeyPatch()
    mp.setenv("TENANTLAKE_STATE_DIR", str(state))
    assert cli.main(["usage", "--tenant", "acme", "--lake-uri", str(lake), "--month", MONTH]) == 0
    yield report.mirror_root("acme")
    mp.undo()


@pytest.fixture(scope="module")
def server(usage_site):
    handler = functools.partial(_QuietHandler, directory=str(usage_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_usage_page_shows_layers_a_chart_per_layer_and_the_estimate_and_links_to_the_index(server, page, tmp_path,
                                                                                          usage_site):
    usage = json.loads((usage_site / "usage" / MONTH / "usage.json").read_text())
    page.goto(f"{server}/usage/{MONTH}/usage.html")
    assert page.title() == f"Usage: acme {MONTH}"
    for layer in ("landing", "bronze", "silver", "gold"):
        assert page.locator(f'#layers tr[data-layer="{layer}"]').count() == 1
    gold = page.locator('#layers tr[data-layer="gold"] td')
    assert [gold.nth(i).inner_text() for i in (4, 5)] == ["2", "1"]  # runs, failed
    for layer in ("bronze", "silver", "gold"):
        chart = page.locator(f'svg.usage-chart[data-layer="{layer}"]')
        assert chart.count() == 1 and chart.locator("rect.bar").count() == 1  # both runs fell on today
        assert chart.locator("polyline.stored").count() == 1
    assert page.locator("#storage-source").inner_text() == "listing"
    assert page.locator("#total").inner_text() == f"{usage['cost']['total_usd']:.4f} USD"
    assert "An estimate, not a bill" in page.locator("#estimate").inner_text()
    assert page.locator("#cost tr").count() == 1 + len(usage["cost"]["lines"])
    # local runs: no EMR in the table nor in the total; what they would cost on EMR stands apart
    assert gold.nth(7).inner_text() == "-"
    assert not [line for line in usage["cost"]["lines"] if line["item"].startswith("EMR")]
    assert "not in the total" in page.locator("#hypothetical").inner_text()
    assert page.locator("#hypothetical-usd").inner_text() == f"{usage['cost']['hypothetical']['usd']:.4f} USD"
    assert page.locator("#hypothetical-cost tr").count() == 1 + len(usage["cost"]["hypothetical"]["lines"])
    page.screenshot(path=str(tmp_path / "usage.png"), full_page=True)

    page.click("#link-index")
    page.wait_for_load_state()
    assert page.url.endswith("/index.html")
    row = page.locator(f'#usage tr[data-usage="{MONTH}"]')
    assert row.count() == 1 and f"{usage['cost']['total_usd']}" in row.inner_text()
    row.locator("a").click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/usage/{MONTH}/usage.html")
    assert (tmp_path / "usage.png").stat().st_size > 10_000
