"""The Python API: ``evaluate(samples, ...) -> Report``, the same run as ``offline-eval evaluate``.

>>> from offline_eval import evaluate
>>> report = evaluate("examples/sample.jsonl", judge="fast")      # doctest: +SKIP
>>> report.passed, report.aggregate["faithfulness"]["mean"]        # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from offline_eval.config import EvalConfig, apply_settings, check_against_data
from offline_eval.data import LoadResult, load_samples, samples_from_records
from offline_eval.report.writers import FORMATS, render_json, write_reports
from offline_eval.sample import Sample


class Report:
    """A finished evaluation: the report.json contract as ``.data``, with conveniences."""

    def __init__(self, data: dict[str, Any], timing: dict[str, Any] | None = None):
        self.data = data
        self.timing = timing or {}

    @property
    def passed(self) -> bool:
        return bool(self.data["gate"]["passed"])

    @property
    def aggregate(self) -> dict[str, dict[str, Any]]:
        return self.data["aggregate"]

    @property
    def samples(self) -> list[dict[str, Any]]:
        return self.data["samples"]

    @property
    def failed_gates(self) -> list[dict[str, Any]]:
        return [c for c in self.data["gate"]["checks"] if c["status"] == "failed"]

    def to_json(self) -> str:
        """report.json's exact text (strict JSON, sorted keys): byte-identical for the same run."""
        return render_json(self.data)

    def write(self, out_dir: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
        """Write report.json / report.md / report.html / junit.xml atomically into ``out_dir``."""
        return write_reports(self.data, Path(out_dir), formats)

    def __repr__(self) -> str:
        means = {m: (round(a["mean"], 3) if a["mean"] is not None else None) for m, a in self.aggregate.items()}
        return f"Report(passed={self.passed}, samples={len(self.samples)}, means={means})"


def make_config(**options: Any) -> EvalConfig:
    """An EvalConfig from keyword options, checked exactly as the CLI checks flags and config files.

    Unknown names are a TypeError (a typo must not pass silently); a bad value is a ConfigError. As on
    the command line, ``thresholds`` are merged over the default thresholds.
    """
    known = {f.name for f in fields(EvalConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return apply_settings(EvalConfig(), options, "evaluate()")


def load(data: str | Path | Iterable[Mapping[str, Any] | Sample], *, skip_invalid: bool = False) -> LoadResult:
    if isinstance(data, (str, Path)):
        return load_samples(data, skip_invalid=skip_invalid)
    return samples_from_records(list(data), skip_invalid=skip_invalid)


def evaluate(
    data: str | Path | Iterable[Mapping[str, Any] | Sample],
    *,
    skip_invalid: bool = False,
    judge_instance: Any = None,
    **options: Any,
) -> Report:
    """Evaluate a dataset file or a list of records / Samples; options are EvalConfig's fields.

    ``judge_instance`` lets a caller reuse a loaded judge across evaluations (tests, notebooks).
    Settings are checked first (``ConfigError``), then the data (``offline_eval.data.DatasetError``),
    both before any model loads; ``ModelError`` for missing models.
    """
    from offline_eval.runner import EmbedderSet, evaluate_samples, file_info, load_judge

    config = make_config(**options)
    loaded = load(data, skip_invalid=skip_invalid)
    check_against_data(config, loaded.samples, "evaluate()")
    judge = judge_instance or load_judge(config)
    info = {"n_records": loaded.n_records, "n_evaluated": len(loaded.samples), "n_skipped": len(loaded.skipped)}
    if isinstance(data, (str, Path)):
        info = file_info(Path(data), **info)
    result = evaluate_samples(
        loaded.samples, config, judge=judge, embedders=EmbedderSet(config.embedder), data_info=info,
        skipped_records=[{"location": s.location, "problems": list(s.problems)} for s in loaded.skipped],
    )
    return Report(result.report, result.timing)
