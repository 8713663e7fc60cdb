"""report.md: the table, the gate, categories, worst samples with their evidence, escaping."""

from __future__ import annotations

import re

from offline_eval.gate import explanation
from offline_eval.report.markdown import render_markdown
from offline_eval.report.text import md_text
from tests.report.common import SCRIPT, metrics_of, sample_of


# The fixture itself: it must exercise what the brief asks for.


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
    assert len(rows) == 2 + len(metrics_of(report))
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
    assert explanation(failed_metric) in md
    for metric in ("answer_relevancy", "context_recall", "context_precision"):
        assert explanation(metric) not in md


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
    assert "reference claim (not covered): After 30 days the purchase is final." in md
    assert "generated question (similarity 0.410): What could cause a charge?" in md
    # at most 5 worst samples per metric
    for metric in metrics_of(report):
        block = md.split(f"#### {metric}\n", 1)[1].split("\n\n", 2)[1]
        assert len(block.splitlines()) <= 2 + 5
    assert "### Not computable" in md and "no reference answer" in md
    assert "### Skipped records (1)" in md and "examples/support.jsonl:5" in md


def test_markdown_escapes_cells(report):
    sample = sample_of(report, "billing-002")
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
