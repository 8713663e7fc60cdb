"""report.html: self-contained, well formed, escaped, with charts and every sample's findings."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from offline_eval.gate import explanation
from offline_eval.report.html import render_html
from tests.report.common import SCRIPT, metrics_of, sample_of


class _Tags(HTMLParser):
    """Collects start tags and attributes, and checks elements nest properly."""

    VOID = {"meta", "input", "br", "wbr", "img", "link", "hr", "col", "source"}
    SVG_LEAF = {"rect", "line", "path", "circle"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


def test_html_is_self_contained(report):
    page = render_html(report)
    parser = _parse(page)
    network = re.compile(r"^\s*(https?:|ftp:|//|[a-z][a-z0-9+.-]*://)", re.I)
    for tag, attrs in parser.tags:
        for name in ("src", "href", "action", "data", "poster", "srcset", "xlink:href"):
            value = attrs.get(name)
            assert value is None or not network.match(value), (tag, name, value)
        assert (
            tag not in {"link", "iframe", "img", "object", "embed"}
            or tag == "img"
            and attrs.get("src", "").startswith("data:")
        )
    assert "http://" not in page and "https://" not in page
    assert "@import" not in page and "url(" not in page
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    # one inline script, no src, and the review data it reads (a data block, never executed)
    assert scripts == [{"type": "application/json", "id": "review-data"}, {}]
    assert "default-src 'none'" in page  # CSP: nothing can be fetched on open


def test_html_is_well_formed_and_utf8(report):
    page = render_html(report)
    assert page.startswith("<!DOCTYPE html>")
    assert page.index('<meta charset="utf-8">') < 200
    parser = _parse(page)
    assert parser.errors == []
    assert parser.stack == []
    assert "国际订单的运费是多少？" in page  # Chinese kept as characters, not mangled


def test_html_escapes_user_text(report):
    page = render_html(report)
    assert SCRIPT not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&quot;REFUND90&quot;" in page
    assert page.count("<script") == 2  # the review data and the one script
    # attribute values cannot be broken out of either
    sample_of(report, "billing-001")["question"] = '"><img src=x onerror=alert(1)>'
    page = render_html(report)
    assert "<img" not in page
    assert all(tag != "img" for tag, _ in _parse(page).tags)


def test_html_contents(report):
    page = render_html(report)
    parser = _parse(page)
    text = "".join(parser.text)
    metrics = metrics_of(report)
    svgs = [attrs for tag, attrs in parser.tags if tag == "svg"]
    histograms = [a for a in svgs if a.get("aria-label", "").endswith("score histogram")]
    bars = [a for a in svgs if a.get("aria-label", "").endswith("mean by category")]
    assert sorted(a["aria-label"].split()[0] for a in histograms) == metrics
    assert sorted(a["aria-label"].split()[0] for a in bars) == metrics
    assert "✘ Gate failed" in text
    assert explanation("faithfulness") in text
    # searchable sample table: one expandable row per sample, with its evidence inside
    details = [attrs for tag, attrs in parser.tags if tag == "details"]
    assert len(details) == len(report["samples"])
    assert any(tag == "input" and attrs.get("id") == "q" for tag, attrs in parser.tags)
    assert "judge failure: output did not match the claims schema after 3 attempts" in text
    assert "Refunds are available for 90 days after purchase." in text  # a claim
    assert "unsupported" in text and "not covered" in text
    assert "How long do I have to request a refund?" in text  # a generated question
    assert "Gift cards can be redeemed at checkout" in text  # a chunk preview
    assert "Skipped records (1)" in text


def test_html_histogram_counts(report):
    page = render_html(report)
    scores = [s["scores"]["faithfulness"] for s in report["samples"] if s["scores"]["faithfulness"] is not None]
    svg = re.search(r'<svg[^>]*aria-label="faithfulness score histogram".*?</svg>', page, re.S).group(0)
    counts = [int(n) for n in re.findall(r"<title>\d\.\d–\d\.\d: (\d+) samples?</title>", svg)]
    assert len(counts) == 10 and sum(counts) == len(scores)
    assert counts[9] == sum(1 for s in scores if s >= 0.9)


def test_html_without_categories(report):
    report["by_category"] = {}
    page = render_html(report)
    assert "mean by category" not in page
    assert len(re.findall(r"<svg", page)) == len(metrics_of(report))
