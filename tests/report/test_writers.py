"""The formats together: write_reports (atomic, all or nothing), determinism, rules every format shows."""

from __future__ import annotations

import copy
import json
import math
import xml.etree.ElementTree as ET

import pytest

from offline_eval.report.html import render_html
from offline_eval.report.junit import render_junit
from offline_eval.report.markdown import render_markdown
from offline_eval.report.writers import FORMATS, write_reports
from tests.report.common import FIXTURE


def _reversed_keys(value):
    """The same data with every dict's keys in reverse order (renderers must not depend on it)."""
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


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
