"""report.html's review mode in a real browser: headless Chromium (Debian's package) driven by
Playwright for Python. Open the report from the file, order it most worth checking first, mark three
verdicts (keys and a click), reload (the marks persist), export labels.jsonl (a real download), and
feed the file to ``offline-eval agreement``. Also: the page's Content-Security-Policy blocks a network
load, and markup in the data is shown as text, never run or loaded.

Without Chromium or Playwright the test skips on a developer's machine and fails under CI=true.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from offline_eval import stats
from offline_eval.cli import cli
from offline_eval.report import view
from tests.review_common import INJECTED_ID, INJECTED_SCRIPT, build

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

CHROMIUM = os.environ.get("OFFLINE_EVAL_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def _need_browser():
    problems = []
    if not os.access(CHROMIUM, os.X_OK):
        problems.append(f"no Chromium at {CHROMIUM} (apt-get install chromium; scripts/setup.sh does it as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problems.append("Playwright for Python is not installed (the [test] extra)")
        sync_playwright = None
    if problems:
        message = "; ".join(problems)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the browser test must run in CI: {message}")
        pytest.skip(message)
    return sync_playwright


@pytest.fixture
def leak_server():
    """An HTTP server on loopback that counts every request: report.html must never reach it."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server name)
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


def test_review_in_chromium_round_trips_through_agreement(tmp_path, leak_server):
    sync_playwright = _need_browser()
    base_url, hits = leak_server
    out = tmp_path / "out"
    report = build(out, leak_url=f"{base_url}/leak.png")
    items = view.review_items(report)
    index = {(i["sample_id"], i["item"]): n for n, i in enumerate(items)}
    page_url = (out / "report.html").resolve().as_uri()

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS, accept_downloads=True)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            requests: list[str] = []
            errors: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_url)
            assert page.locator("#rcount").inner_text() == f"0 of {len(items)} items reviewed · judge wrong on 0"

            # Most worth checking first: parking's verdicts (P(yes) 0.55 and 0.45) are the least certain.
            page.select_option("#order", "doubt")
            first = page.locator("details.sample").first.get_attribute("data-order")
            assert first == "1"  # parking, the second sample of the report
            page.keyboard.press("j")  # parking's faithfulness score
            page.keyboard.press("j")  # its first claim: supported (P 0.55)
            page.keyboard.press("n")  # the judge is wrong; moves on to the second claim
            page.keyboard.press("y")  # unsupported (P 0.45): right
            page.click("#toggle")  # expand all, then a click on the refunds sample's first claim
            page.click(f'[data-item="{index[("refunds", "faithfulness/finding/1")]}"] button.right')
            assert page.locator("#rcount").inner_text() == f"3 of {len(items)} items reviewed · judge wrong on 1"

            page.reload()
            assert page.locator("#rcount").inner_text() == f"3 of {len(items)} items reviewed · judge wrong on 1"
            wrong = page.locator(f'[data-item="{index[("parking", "faithfulness/finding/1")]}"]')
            assert "m-wrong" in (wrong.get_attribute("class") or "")

            page.fill("#reviewer", "ana")
            with page.expect_download() as download:
                page.click("#export")
            labels = tmp_path / "labels.jsonl"
            download.value.save_as(str(labels))
            assert download.value.suggested_filename == "labels.jsonl"

            # User text is text: the script in an answer and in a sample id is shown, never run.
            page.click("#toggle")  # expand all: innerText is what a person sees
            text = page.evaluate("document.body.innerText")
            assert INJECTED_SCRIPT in text and INJECTED_ID in text
            assert page.evaluate("typeof window.__pwned + typeof window.__pwned_id") == "undefinedundefined"
            assert page.evaluate("document.scripts.length + document.images.length") == 2  # data + ours
            assert errors == []

            # The CSP blocks a network load the page would make: the violation fires, the server sees nothing.
            violation = page.evaluate(
                """url => new Promise(resolve => {
                     document.addEventListener("securitypolicyviolation",
                                               e => resolve(e.violatedDirective + " " + e.blockedURI));
                     const img = new Image(); img.src = url; document.body.appendChild(img);
                   })""",
                f"{base_url}/csp-probe.png",
            )
            assert violation.startswith("img-src") and "csp-probe" in violation
            fetched = page.evaluate("url => fetch(url).then(() => 'loaded', e => 'blocked: ' + e.name)",
                                    f"{base_url}/fetch-probe")
            assert fetched.startswith("blocked")
        finally:
            context.close()
    assert hits == []
    assert all(u.startswith(("file:", "blob:", "data:")) for u in requests if "probe" not in u), requests

    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines()]
    assert [(r["sample_id"], r["item"], r["label"], r["verdict"], r["reviewer"]) for r in rows] == [
        ("parking", "faithfulness/finding/1", "wrong", "supported", "ana"),
        ("parking", "faithfulness/finding/2", "right", "unsupported", "ana"),
        ("refunds", "faithfulness/finding/1", "right", "supported", "ana"),
    ]
    assert all(r["time"].endswith("Z") for r in rows)

    result = CliRunner().invoke(cli, ["agreement", str(out / "report.json"), "--labels", str(labels), "--ppi",
                                      "--json", str(tmp_path / "agreement.json")])
    assert result.exit_code == 0, result.output
    assert "| faithfulness | verdict | 3 | 1 | 0.333 | [0.061, 0.792] |" in result.output
    data = json.loads((tmp_path / "agreement.json").read_text(encoding="utf-8"))
    rate = data["error_rates"][0]
    assert (rate["metric"], rate["kind"], rate["n_reviewed"], rate["n_wrong"]) == ("faithfulness", "verdict", 3, 1)
    assert rate["error_rate"]["value"] == pytest.approx(1 / 3)
    assert (rate["error_rate"]["ci_low"], rate["error_rate"]["ci_high"]) == pytest.approx(stats.proportion_ci(1, 3)[1:])
    # PPI: parking is fully reviewed (both claims truly unsupported: true score 0 against the judge's 0.5).
    ppi = data["ppi"][0]
    scores = {s["sample_id"]: s["scores"]["faithfulness"] for s in report["samples"]}
    others = [v for k, v in scores.items() if k != "parking"]
    assert (ppi["n_labelled"], ppi["n_unlabelled"]) == (1, 3)
    assert ppi["value"] == pytest.approx(stats.ppi_mean_ci([scores["parking"]], [0.0], others)[0])
    assert ppi["judge_mean"] == pytest.approx(report["aggregate"]["faithfulness"]["mean"])
