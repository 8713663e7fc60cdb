"""Reports: the report.json contract (built here) and its renderings (markdown, html, junit)."""

from offline_eval.report.build import aggregate_scores, build_report

__all__ = ["aggregate_scores", "build_report"]
