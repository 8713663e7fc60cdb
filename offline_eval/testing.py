"""pytest helpers: turn a report into an assertion whose failure message lists what failed.

    from offline_eval import evaluate
    from offline_eval.testing import assert_quality

    def test_rag_quality():
        report = evaluate("tests/rag_samples.jsonl", thresholds={"faithfulness": 0.9})
        assert_quality(report)
"""

from __future__ import annotations

from typing import Any

from offline_eval.gate import describe_failure


class QualityGateError(AssertionError):
    """The quality gate failed; the message lists each failed check with its explanation."""


def _describe(check: dict[str, Any]) -> str:
    where = f" [{check['category']}]" if check.get("category") else ""
    return f"  {check['metric']}{where}: {describe_failure(check)}"


def assert_quality(report: Any, *, worst: int = 3) -> None:
    """Raise QualityGateError when the report's gate failed, naming the failed metrics and the worst samples.

    ``report`` is an ``offline_eval.Report`` or the report.json dict.
    """
    data = getattr(report, "data", report)
    gate = data["gate"]
    if gate["passed"]:
        return
    lines = ["RAG quality gate failed:"]
    for check in gate["checks"]:
        if check["status"] != "failed":
            continue
        lines.append(_describe(check))
        scored = [s for s in data["samples"] if s["scores"].get(check["metric"]) is not None
                  and (check.get("category") is None or s.get("category") == check["category"])]
        for sample in sorted(scored, key=lambda s: s["scores"][check["metric"]])[:worst]:
            lines.append(f"      {sample['sample_id']}: {sample['scores'][check['metric']]:.3f}")
    raise QualityGateError("\n".join(lines))
