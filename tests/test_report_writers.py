"""The report writers: report.md, report.html, junit.xml and write_reports, on a hand-made report.json."""

from __future__ import annotations

import copy
import json
import math
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from offline_eval.report.html import render_html
from offline_eval.report.junit import render_junit
from offline_eval.report.markdown import md_text, render_markdown
from offline_eval.report.writers import EXPLANATIONS, FORMATS, write_reports

FIXTURE = Path(__file__).parent / "fixtures" / "report_sample.json"
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture()
def report() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _metrics(report: dict) -> list[str]:
    return sorted({m for s in report["samples"] for m in s["scores"]})


def _sample(report: dict, sample_id: str) -> dict:
    return next(s for s in report["samples"] if s["sample_id"] == sample_id)


def _reversed_keys(value):
    """The same data with every dict's keys in reverse order (renderers must not depend on it)."""
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------------
# The fixture itself: it must exercise what the brief asks for.
# --------------------------------------------------------------------------------------------------


def test_fixture_covers_the_interesting_cases(report):
    samples = report["samples"]
    assert 5 <= len(samples) <= 8
    assert {s["language"] for s in samples} == {"en", "zh"}
    assert len(report["by_category"]) == 2
    reasons = {m: r for s in samples for m, r in s["not_computable"].items()}
    assert "context_recall" in reasons and "faithfulness" in reasons
    assert "judge" in reasons["faithfulness"]
    assert any(SCRIPT in s["answer"] and "|" in s["answer"] and '"' in s["answer"] for s in samples)
    assert report["gate"]["passed"] is False and len(report["gate"]["failed"]) == 1
    assert report["skipped_records"]


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def _table_rows(md: str, header_start: str) -> list[str]:
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def _cells(row: str) -> int:
    """Cells in a GFM table row: split on pipes not escaped by a backslash."""
    return len(re.split(r"(?<!\\)\|", row)) - 2


def test_markdown_header_summary_and_failed_gate(report):
    md = render_markdown(report)
    assert md.startswith("## ❌ offline-eval: gate failed")
    rows = _table_rows(md, "| metric | mean | 95% CI | n computable | not computable | threshold | status |")
    assert len(rows) == 2 + len(_metrics(report))
    faith = next(r for r in rows if r.startswith("| faithfulness |"))
    agg = report["aggregate"]["faithfulness"]
    assert f"| {agg['mean']:.3f} |" in faith
    assert f"[{agg['ci_low']:.3f}, {agg['ci_high']:.3f}]" in faith
    assert f"| {agg['n']} | {agg['n_not_computable']} |" in faith
    assert "❌ failed" in faith
    ratio = next(r for r in rows if r.startswith("| context_relevant_ratio |"))
    assert ratio.endswith("| — | — |")  # no threshold, no gate check
    failed_metric = report["gate"]["failed"][0]
    assert "### Failed gates" in md
    assert EXPLANATIONS[failed_metric] in md
    for metric in ("answer_relevancy", "context_recall", "context_precision"):
        assert EXPLANATIONS[metric] not in md


def test_markdown_categories_worst_samples_and_evidence(report):
    md = render_markdown(report)
    assert "### By category" in md
    for category in report["by_category"]:
        assert f"| {category} |" in md
    assert "#### faithfulness" in md
    # the lowest faithfulness sample comes first, with its unsupported claims as evidence
    worst = min(
        (s for s in report["samples"] if s["scores"]["faithfulness"] is not None),
        key=lambda s: s["scores"]["faithfulness"],
    )
    section = md.split("#### faithfulness", 1)[1].split("####", 1)[0]
    first_row = _table_rows(section.strip(), "| sample |")[2]
    assert first_row.startswith(f"| {worst['sample_id']} |")
    for claim in worst["details"]["faithfulness"]["claims"]:
        if claim["verdict"] == "unsupported":
            assert md_text(claim["text"]) in first_row
    # uncovered reference claims and generated questions are evidence too
    assert "uncovered claim: After 30 days the purchase is final." in md
    assert "generated question (similarity 0.410): What could cause a charge?" in md
    # at most 5 worst samples per metric
    for metric in _metrics(report):
        block = md.split(f"#### {metric}\n", 1)[1].split("\n\n", 2)[1]
        assert len(block.splitlines()) <= 2 + 5
    assert "### Not computable" in md and "no reference answer" in md
    assert "### Skipped records (1)" in md and "examples/support.jsonl:5" in md


def test_markdown_escapes_cells(report):
    sample = _sample(report, "billing-002")
    sample["question"] = 'Refund | "now"?\n<script>alert(1)</script> `code` [x](y)'
    md = render_markdown(report)
    assert SCRIPT not in md
    assert 'Refund \\| "now"?<br>&lt;script&gt;alert(1)&lt;/script&gt;' in md
    # every table row still has the header's number of cells
    for line in md.splitlines():
        if line.startswith("| sample | category | score |"):
            width = _cells(line)
        elif line.startswith("| billing-002 |"):
            assert _cells(line) == width, line
    # the claim with a pipe in it did not split its cell either
    assert "Refunds need no justification \\| " in md


def test_md_text_escaping():
    assert md_text("a|b") == "a\\|b"
    assert md_text("line1\r\nline2\nline3") == "line1<br>line2<br>line3"
    assert md_text("x\\|y") == "x&#92;\\|y"  # a user backslash cannot escape our pipe escape
    assert md_text("<b>&") == "&lt;b&gt;&amp;"
    assert md_text(None) == ""
    assert md_text("abcdef", 4) == "abc…"


def test_markdown_null_values_and_no_categories(report):
    for sample in report["samples"]:
        sample["scores"]["context_recall"] = None
        sample["not_computable"]["context_recall"] = "no reference answer"
    report["aggregate"]["context_recall"].update(mean=None, ci_low=None, ci_high=None, n=0, n_not_computable=6)
    for check in report["gate"]["checks"]:
        if check["metric"] == "context_recall":
            check.update(value=None, status="skipped", reason="no computable context_recall scores")
    report["by_category"] = {}
    report["skipped_records"] = []
    md = render_markdown(report)
    row = next(line for line in md.splitlines() if line.startswith("| context_recall |"))
    assert row == "| context_recall | — | — | 0 | 6 | 0.700 | ⚠️ skipped |"
    assert "no computable context_recall scores" in md
    assert "### By category" not in md
    assert "#### context_recall" not in md  # no computable sample: no worst list
    assert "Skipped records" not in md


def test_markdown_gate_passed():
    md = render_markdown({"gate": {"passed": True, "checks": []}, "samples": [], "aggregate": {}})
    assert md.startswith("## ✅ offline-eval: gate passed")
    assert "Failed gates" not in md


# --------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------


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
    assert scripts == [{}]  # exactly one inline script, no src
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
    assert page.count("<script") == 1
    # attribute values cannot be broken out of either
    _sample(report, "billing-001")["question"] = '"><img src=x onerror=alert(1)>'
    page = render_html(report)
    assert "<img" not in page
    assert all(tag != "img" for tag, _ in _parse(page).tags)


def test_html_contents(report):
    page = render_html(report)
    parser = _parse(page)
    text = "".join(parser.text)
    metrics = _metrics(report)
    svgs = [attrs for tag, attrs in parser.tags if tag == "svg"]
    histograms = [a for a in svgs if a.get("aria-label", "").endswith("score histogram")]
    bars = [a for a in svgs if a.get("aria-label", "").endswith("mean by category")]
    assert sorted(a["aria-label"].split()[0] for a in histograms) == metrics
    assert sorted(a["aria-label"].split()[0] for a in bars) == metrics
    assert "✘ Gate failed" in text
    assert EXPLANATIONS["faithfulness"] in text
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
    assert len(re.findall(r"<svg", page)) == len(_metrics(report))


# --------------------------------------------------------------------------------------------------
# JUnit
# --------------------------------------------------------------------------------------------------


def _expected_suite(report: dict, metric: str) -> tuple[int, int, int]:
    """Per-sample cases never fail (the gate suite does): not computable or below threshold is skipped."""
    threshold = report["gate"]["thresholds"].get(metric)
    scores = [s["scores"].get(metric) for s in report["samples"]]
    skipped = sum(1 for x in scores if x is None or (threshold is not None and x < threshold))
    return len(scores), 0, skipped


def _counts(element: ET.Element) -> tuple[int, int, int]:
    return int(element.get("tests")), int(element.get("failures")), int(element.get("skipped"))


def test_junit_structure_and_counts(report):
    xml = render_junit(report)
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(xml.encode("utf-8"))
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    metrics = _metrics(report)
    assert set(suites) == {f"offline_eval.{m}" for m in metrics} | {"offline_eval.gate"}
    totals = [0, 0, 0]
    for metric in metrics:
        suite = suites[f"offline_eval.{metric}"]
        expected = _expected_suite(report, metric)
        assert _counts(suite) == expected, metric
        # the counts agree with the testcases themselves
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == [s["sample_id"] for s in report["samples"]]
        assert {c.get("classname") for c in cases} == {f"offline_eval.{metric}"}
        assert sum(c.find("failure") is not None for c in cases) == expected[1]
        assert sum(c.find("skipped") is not None for c in cases) == expected[2]
        totals = [a + b for a, b in zip(totals, expected, strict=True)]
    checks = report["gate"]["checks"]
    gate_expected = (
        len(checks),
        sum(c["status"] == "failed" for c in checks),
        sum(c["status"] == "skipped" for c in checks),
    )
    assert _counts(suites["offline_eval.gate"]) == gate_expected
    totals = [a + b for a, b in zip(totals, gate_expected, strict=True)]
    assert list(_counts(root)) == totals
    assert root.get("errors") == "0"


def test_junit_below_threshold_samples_carry_score_and_evidence_without_failing(report):
    root = ET.fromstring(render_junit(report).encode("utf-8"))
    case = root.find("testsuite[@name='offline_eval.faithfulness']/testcase[@name='billing-002']")
    assert case.find("failure") is None
    skipped = case.find("skipped")
    score = _sample(report, "billing-002")["scores"]["faithfulness"]
    assert skipped.get("message").startswith("below threshold (informational): ")
    assert f"{score:.3f}" in skipped.get("message") and "0.800" in skipped.get("message")
    assert "the gate judges the mean" in skipped.get("message")
    out = case.find("system-out").text
    for claim in _sample(report, "billing-002")["details"]["faithfulness"]["claims"]:
        assert (claim["text"] in out) == (claim["verdict"] == "unsupported")
    assert SCRIPT in out  # escaped in the XML, intact once parsed
    # not computable: skipped with the reason
    skipped = root.find("testsuite[@name='offline_eval.context_recall']/testcase[@name='shipping-002']/skipped")
    assert skipped.get("message") == "no reference answer"
    # no threshold: passes with the score in system-out
    ratio = root.find("testsuite[@name='offline_eval.context_relevant_ratio']/testcase[@name='billing-003']")
    assert ratio.find("failure") is None and ratio.find("skipped") is None
    assert "0.333" in ratio.find("system-out").text
    # the gate check that failed explains itself
    gate = root.find("testsuite[@name='offline_eval.gate']/testcase[@name='faithfulness']/failure")
    assert EXPLANATIONS["faithfulness"] in gate.text


def test_junit_skipped_gate_check_and_odd_text(report):
    report["gate"]["checks"].append(
        {
            "metric": "context_recall",
            "category": "billing",
            "value": None,
            "threshold": 0.7,
            "status": "skipped",
            "reason": "no computable sample",
        }
    )
    sample = _sample(report, "shipping-002")
    sample["not_computable"]["context_recall"] = 'bad "reason" <&>\nline two \x01'
    root = ET.fromstring(render_junit(report).encode("utf-8"))
    gate = root.find("testsuite[@name='offline_eval.gate']")
    case = gate.find("testcase[@name='billing/context_recall']")
    assert case.find("skipped").get("message") == "no computable sample"
    assert int(gate.get("skipped")) == 1
    # a per-category check from the fixture's category_thresholds: passed, value in system-out
    passed = gate.find("testcase[@name='shipping/context_recall']")
    assert passed.find("failure") is None and passed.find("skipped") is None
    assert "0.833" in passed.find("system-out").text
    skipped = root.find("testsuite[@name='offline_eval.context_recall']/testcase[@name='shipping-002']/skipped")
    assert skipped.get("message") == 'bad "reason" <&>\nline two \ufffd'


def test_junit_passed_gate_has_no_failure_even_with_samples_below_threshold(report):
    report["gate"] = {"passed": True, "gate_on": "mean", "thresholds": {"faithfulness": 0.8}, "failed": [],
                      "category_thresholds": {},
                      "checks": [{"metric": "faithfulness", "category": None, "threshold": 0.8, "value": 0.81,
                                  "status": "passed", "reason": ""}]}
    assert any((s["scores"].get("faithfulness") or 1) < 0.8 for s in report["samples"])
    root = ET.fromstring(render_junit(report).encode("utf-8"))
    assert root.get("failures") == "0"
    assert root.find(".//failure") is None


def test_a_check_that_had_nothing_to_compare_is_explained_not_compared(report):
    reason = "no computable sample (all 6 samples not computable: judge failure: prompt too long (×6))"
    report["gate"]["checks"] = [{"metric": "faithfulness", "category": None, "threshold": 0.8, "value": None,
                                 "status": "failed", "reason": reason}]
    gate = ET.fromstring(render_junit(report).encode("utf-8")).find(
        "testsuite[@name='offline_eval.gate']/testcase[@name='faithfulness']/failure")
    assert gate.get("message") == f"faithfulness: {reason}"
    for text in (render_markdown(report), render_html(report)):
        assert "no computable sample (all 6 samples not computable" in text
        assert "— &lt; threshold" not in text and "— < threshold" not in text


def test_a_score_set_by_rule_shows_its_reason(report):
    sample = report["samples"][0]
    sample["scores"]["faithfulness"] = 0.0
    sample["not_computable"].pop("faithfulness", None)
    sample["details"]["faithfulness"] = {"claims": [{"text": "A claim.", "verdict": "unsupported"}], "n_supported": 0,
                                         "n_claims": 1, "reason": "no contexts retrieved"}
    assert '<p class="nc">no contexts retrieved</p>' in render_html(report)
    assert "reason: no contexts retrieved" in render_markdown(report)


# --------------------------------------------------------------------------------------------------
# write_reports and determinism
# --------------------------------------------------------------------------------------------------


def test_write_reports_all_formats(report, tmp_path):
    out = tmp_path / "out"
    paths = write_reports(report, out, FORMATS)
    assert FORMATS == ("json", "md", "html", "junit")
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html", "junit.xml"]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)  # no temp files left
    text = (out / "report.json").read_text(encoding="utf-8")
    assert json.loads(text) == report
    assert text == json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False) + "\n"
    assert text == FIXTURE.read_text(encoding="utf-8")  # the fixture is in the canonical form
    assert "国际订单" in text  # ensure_ascii=False
    assert (out / "report.md").read_text(encoding="utf-8") == render_markdown(report)
    assert (out / "report.html").read_text(encoding="utf-8") == render_html(report)
    assert (out / "junit.xml").read_text(encoding="utf-8") == render_junit(report)


def test_write_reports_subset_and_overwrite(report, tmp_path):
    (tmp_path / "report.md").write_text("old", encoding="utf-8")
    assert write_reports(report, tmp_path, ["md"]) == [tmp_path / "report.md"]
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == render_markdown(report)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_write_reports_rejects_nan_and_unknown_format(report, tmp_path):
    bad = copy.deepcopy(report)
    bad["aggregate"]["faithfulness"]["mean"] = math.nan
    with pytest.raises(ValueError):
        write_reports(bad, tmp_path / "nan", FORMATS)
    assert not (tmp_path / "nan" / "report.json").exists()
    with pytest.raises(ValueError):
        write_reports(report, tmp_path / "fmt", ["json", "pdf"])
    assert not (tmp_path / "fmt").exists()


@pytest.mark.parametrize("render", [render_markdown, render_html, render_junit])
def test_renderers_are_deterministic(report, render):
    first = render(report)
    assert render(copy.deepcopy(report)) == first
    assert render(_reversed_keys(report)) == first
    assert render(report) == first
