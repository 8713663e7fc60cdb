"""junit.xml: the report as JUnit test results, for CI systems that display them.

One testsuite per metric (``offline_eval.<metric>``) with one testcase per sample (name = sample_id).
These cases inform, they do not judge: the gate judges the mean (or its interval's lower bound), so
a sample below the threshold must not turn a passed gate red in CI views. Such a sample is
<skipped message="below threshold (informational): ...">, with the evidence in <system-out>; a score
that could not be computed is <skipped message=reason>; any other score passes and carries its value
in <system-out>. Only ``offline_eval.gate``, one testcase per gate check, has <failure>s: the CI view
is red exactly when the exit code says the gate failed. No timestamps or durations: the same report
gives the same bytes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from offline_eval.report.formats import register
from offline_eval.report.text import fmt_num, text_of
from offline_eval.report.view import (
    aggregate_for,
    below_threshold,
    check_label,
    evidence,
    failed_by_value,
    failed_explanation,
    gate_checks,
    gate_value_label,
    has_ppi,
    metric_names,
    not_computable_reason,
    ppi_for,
    samples_of,
    score_of,
    summary_of,
    threshold_for,
)

# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(value: Any) -> str:
    return _NOT_XML.sub("\ufffd", text_of(value))


def _suite(parent: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(parent, "testsuite", {"name": name})


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": _x(classname), "name": _x(name)})


def _sample_text(sample: Mapping[str, Any]) -> list[str]:
    lines = [f"question: {text_of(sample.get('question'))}", f"answer: {text_of(sample.get('answer'))}"]
    if sample.get("reference_answer") is not None:
        lines.append(f"reference answer: {text_of(sample.get('reference_answer'))}")
    return lines


def _metric_case(suite: ET.Element, report: Mapping[str, Any], sample: Mapping[str, Any], metric: str) -> None:
    case = _case(suite, f"offline_eval.{metric}", text_of(sample.get("sample_id")))
    score = score_of(sample, metric)
    threshold = threshold_for(report, metric)
    if score is None:
        ET.SubElement(case, "skipped", {"message": _x(not_computable_reason(sample, metric))})
        return
    if below_threshold(score, threshold):
        message = (f"below threshold (informational): {metric} {fmt_num(score)} < {fmt_num(threshold)}; "
                   f"the gate judges the {gate_value_label(report)}")
        ET.SubElement(case, "skipped", {"message": _x(message)})
        summary = summary_of(sample, metric)
        lines = ([summary] if summary else []) + [f"{label}: {text}" for label, text in evidence(sample, metric)]
        lines = lines or ["(no evidence recorded)"]
        ET.SubElement(case, "system-out").text = _x("\n".join(lines + [""] + _sample_text(sample)))
        return
    out = ET.SubElement(case, "system-out")
    out.text = _x(
        f"{metric} = {fmt_num(score)}" + (f" (threshold {fmt_num(threshold)})" if threshold is not None else "")
    )


def _gate_case(suite: ET.Element, report: Mapping[str, Any], check: Mapping[str, Any]) -> None:
    case = _case(suite, "offline_eval.gate", check_label(check))
    status = check.get("status")
    value = f"{gate_value_label(report)} {fmt_num(check.get('value'))}"
    if status == "failed":
        message = f"{value} < threshold {fmt_num(check.get('threshold'))}" if failed_by_value(check) \
            else failed_explanation(check)
        failure = ET.SubElement(
            case, "failure", {"message": _x(f"{check_label(check)}: {message}"), "type": "GateFailed"}
        )
        failure.text = _x(failed_explanation(check))
    elif status == "skipped":
        ET.SubElement(case, "skipped", {"message": _x(check.get("reason") or "not computable")})
    else:
        out = ET.SubElement(case, "system-out")
        out.text = _x(f"{value} >= threshold {fmt_num(check.get('threshold'))}")


def _count(suite: ET.Element) -> tuple[int, int, int]:
    cases = suite.findall("testcase")
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return len(cases), failures, skipped


@register("junit", "junit.xml")
def render_junit(report: Mapping[str, Any]) -> str:
    """junit.xml's text for ``report`` (a report.json dict). Deterministic: no clock, no durations."""
    root = ET.Element("testsuites", {"name": "offline-eval"})
    samples = samples_of(report)
    for metric in metric_names(report):
        suite = _suite(root, f"offline_eval.{metric}")
        if has_ppi(report):  # the judge's mean and the PPI-corrected one, side by side
            properties = ET.SubElement(suite, "properties")
            corrected = ppi_for(report, metric)
            for name, value in (("mean", aggregate_for(report, metric).get("mean")),
                                ("ppi_mean", corrected.get("value")), ("ppi_ci_low", corrected.get("ci_low")),
                                ("ppi_ci_high", corrected.get("ci_high")),
                                ("ppi_reviewed_samples", corrected.get("n_labelled"))):
                if value is not None:
                    shown = str(value) if isinstance(value, int) and not isinstance(value, bool) else fmt_num(value)
                    ET.SubElement(properties, "property", {"name": name, "value": shown})
        for sample in samples:
            _metric_case(suite, report, sample, metric)
    gate = _suite(root, "offline_eval.gate")
    for check in gate_checks(report):
        _gate_case(gate, report, check)
    totals = [0, 0, 0]
    for suite in root.findall("testsuite"):
        for i, n in enumerate(_count(suite)):
            totals[i] += n
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", "0")
    root.set("skipped", str(totals[2]))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
