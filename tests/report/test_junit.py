"""junit.xml: per-sample cases inform (skipped below threshold, with evidence), the gate suite judges."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from offline_eval.gate import explanation
from offline_eval.report.junit import render_junit
from tests.report.common import SCRIPT, metrics_of, sample_of


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
    metrics = metrics_of(report)
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
    score = sample_of(report, "billing-002")["scores"]["faithfulness"]
    assert skipped.get("message").startswith("below threshold (informational): ")
    assert f"{score:.3f}" in skipped.get("message") and "0.800" in skipped.get("message")
    assert "the gate judges the mean" in skipped.get("message")
    out = case.find("system-out").text
    for claim in sample_of(report, "billing-002")["details"]["faithfulness"]["claims"]:
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
    assert explanation("faithfulness") in gate.text


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
    sample = sample_of(report, "shipping-002")
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

