"""The Python API: ``evaluate(samples, ...) -> Report``, the same run as ``offline-eval evaluate``.

>>> from offline_eval import evaluate
>>> report = evaluate("examples/sample.jsonl", judge="fast")      # doctest: +SKIP
>>> report.passed, report.aggregate["faithfulness"]["mean"]        # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline_eval.config import ConfigError, EvalConfig, apply_settings, setting_names
from offline_eval.report import view
from offline_eval.report.json_report import render_json
from offline_eval.report.writers import FORMATS, write_reports


class Report:
    """A finished evaluation: the report.json contract as ``.data``, with conveniences."""

    def __init__(self, data: dict[str, Any], timing: dict[str, Any] | None = None):
        self.data = data
        self.timing = timing or {}

    @property
    def passed(self) -> bool:
        return bool(view.passed(self.data))

    @property
    def aggregate(self) -> dict[str, dict[str, Any]]:
        return dict(view.aggregate_of(self.data))

    @property
    def samples(self) -> list[dict[str, Any]]:
        return list(view.samples_of(self.data))

    @property
    def failed_gates(self) -> list[dict[str, Any]]:
        return list(view.failed_and_skipped_checks(self.data)[0])

    def to_json(self) -> str:
        """report.json's exact text (strict JSON, sorted keys): byte-identical for the same run."""
        return render_json(self.data)

    def write(self, out_dir: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
        """Write report.json / report.md / report.html / junit.xml atomically into ``out_dir``."""
        return write_reports(self.data, Path(out_dir), formats)

    def __repr__(self) -> str:
        means = {m: (round(a["mean"], 3) if a.get("mean") is not None else None) for m, a in self.aggregate.items()}
        return f"Report(passed={self.passed}, samples={len(self.samples)}, means={means})"


def make_config(**options: Any) -> EvalConfig:
    """An EvalConfig from keyword options, checked exactly as the CLI checks flags and config files.

    Unknown names are a TypeError (a typo must not pass silently); a bad value is a ConfigError. As on
    the command line, ``thresholds`` are merged over the default thresholds.
    """
    known = setting_names()
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return apply_settings(EvalConfig(), options, "evaluate()")


def evaluate(
    data: Any,
    *,
    skip_invalid: bool = False,
    judge_instance: Any = None,
    embedders: Any = None,
    **options: Any,
) -> Report:
    """Evaluate a dataset file or a list of records / Samples; options are the settings (EvalConfig's
    fields and the metrics' parameters, such as ``max_claims``).

    ``judge_instance`` lets a caller reuse a loaded judge across evaluations (tests, notebooks), or
    pass ``offline_eval.testing.FakeJudge``; ``embedders`` likewise (``testing.hashing_embedders()``).
    Settings are checked first (``ConfigError``), then the data (``offline_eval.data.DatasetError``),
    both before any model loads; ``ModelError`` for missing models.
    """
    from offline_eval.runner import run

    config = make_config(**options)
    result = run(data, config, skip_invalid=skip_invalid, judge=judge_instance, embedders=embedders)
    return Report(result.report, result.timing)


__all__ = ["ConfigError", "Report", "evaluate", "make_config"]
