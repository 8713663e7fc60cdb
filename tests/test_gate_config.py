"""Unit tests for the quality gate (offline_eval.gate) and the configuration (offline_eval.config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from offline_eval.config import (
    ConfigError,
    EvalConfig,
    apply_settings,
    find_config_file,
    read_config_file,
    validate,
)
from offline_eval.gate import apply_gate, explanation
from offline_eval.metrics import default_metrics, default_thresholds, metric_names

DEFAULT_THRESHOLDS = default_thresholds()


def _agg(mean, ci_low=None, ci_high=None, n=10):
    return {"mean": mean, "ci_low": ci_low, "ci_high": ci_high, "n": n, "n_not_computable": 0}


def _by_status(result):
    return {(c["category"], c["metric"]): c["status"] for c in result["checks"]}


# ================================================================================== gate


def test_gate_all_passed():
    aggregate = {"faithfulness": _agg(0.9, 0.85, 0.95), "context_recall": _agg(0.71, 0.6, 0.8)}
    result = apply_gate(aggregate, {}, {"faithfulness": 0.8, "context_recall": 0.7})
    assert result["passed"] is True
    assert result["failed"] == []
    assert result["gate_on"] == "mean"
    assert _by_status(result) == {(None, "context_recall"): "passed", (None, "faithfulness"): "passed"}
    for check in result["checks"]:
        assert check["reason"] == ""


def test_gate_failed_names_metric_and_explains():
    aggregate = {"faithfulness": _agg(0.5), "answer_relevancy": _agg(0.9)}
    result = apply_gate(aggregate, {}, {"faithfulness": 0.8, "answer_relevancy": 0.75})
    assert result["passed"] is False
    assert result["failed"] == ["faithfulness"]
    check = next(c for c in result["checks"] if c["metric"] == "faithfulness")
    assert check["status"] == "failed"
    assert check["value"] == 0.5 and check["threshold"] == 0.8
    assert check["reason"] == explanation("faithfulness")
    assert "hallucination" in check["reason"]


def test_gate_value_equal_to_threshold_passes():
    result = apply_gate({"faithfulness": _agg(0.8)}, {}, {"faithfulness": 0.8})
    assert result["passed"] is True
    assert result["checks"][0]["status"] == "passed"


def test_gate_metric_with_no_computable_sample_fails_with_its_reason():
    aggregate = {"faithfulness": _agg(None, n=0), "context_recall": _agg(0.9)}
    samples = [{"category": None, "not_computable": {"faithfulness": "judge failure: prompt does not fit"}},
               {"category": None, "not_computable": {"faithfulness": "judge failure: prompt does not fit"}},
               {"category": None, "not_computable": {"faithfulness": "empty answer"}}]
    result = apply_gate(aggregate, {}, {"faithfulness": 0.8, "context_recall": 0.7}, samples=samples)
    assert result["passed"] is False
    assert result["failed"] == ["faithfulness"]
    check = next(c for c in result["checks"] if c["metric"] == "faithfulness")
    assert (check["status"], check["value"]) == ("failed", None)
    assert check["reason"] == ("no computable sample (all 3 samples not computable: "
                               "judge failure: prompt does not fit (×2); empty answer (×1)); fix the cause, "
                               "leave the metric out, or allow it with --allow-empty-metric")


def test_gate_on_nothing_at_all_fails():
    result = apply_gate({"faithfulness": _agg(None, n=0)}, {}, {"faithfulness": 0.8})
    assert result["passed"] is False
    assert result["checks"][0]["reason"].startswith("no computable sample (no sample);")


def test_gate_allow_empty_skips_an_empty_metric_and_says_so():
    result = apply_gate({"faithfulness": _agg(None, n=0)}, {}, {"faithfulness": 0.8}, allow_empty=True)
    assert result["passed"] is True
    (check,) = result["checks"]
    assert check["status"] == "skipped"
    assert "no computable sample" in check["reason"] and "allow_empty" in check["reason"]


def test_gate_relevant_ratio_empty_reason_comes_from_context_precision():
    samples = [{"category": None, "not_computable": {"context_precision": "no contexts"}}]
    result = apply_gate({"context_relevant_ratio": _agg(None, n=0)}, {}, {"context_relevant_ratio": 0.5},
                        samples=samples)
    assert "no contexts (×1)" in result["checks"][0]["reason"]


def test_gate_compares_at_the_reported_precision():
    from offline_eval.console import summary
    from offline_eval.report.build import build_report

    rows = [{"sample_id": str(i), "category": None, "scores": {"faithfulness": v}, "not_computable": {}}
            for i, v in enumerate([0.7, 0.8, 0.9])]
    report = build_report(run={}, samples=rows, score_names=["faithfulness"], thresholds={"faithfulness": 0.8},
                          category_thresholds={}, gate_on="mean", n_resamples=50, seed=0)
    assert report["aggregate"]["faithfulness"]["mean"] < 0.8  # 0.7999999999999999: float addition
    assert report["gate"]["passed"] is True
    text = summary(report)
    assert "FAILED" not in text and "gate PASSED" in text
    # Below at the reported precision still fails, and the line shows why.
    failed = apply_gate({"faithfulness": _agg(0.7994)}, {}, {"faithfulness": 0.8})
    assert failed["passed"] is False
    assert "0.799 < 0.80" in summary({"aggregate": {}, "gate": failed})


def test_failed_line_shows_a_threshold_as_written():
    from offline_eval.console import summary

    failed = apply_gate({"faithfulness": _agg(0.82)}, {}, {"faithfulness": 0.825})
    assert "0.820 < 0.825" in summary({"aggregate": {}, "gate": failed})


def test_gate_on_lower_with_one_sample_fails_and_says_why():
    aggregate = {"faithfulness": _agg(0.95, ci_low=0.95, ci_high=0.95, n=1)}
    result = apply_gate(aggregate, {}, {"faithfulness": 0.8}, gate_on="lower")
    assert result["passed"] is False
    (check,) = result["checks"]
    assert check["value"] is None
    assert "at least 2 computable samples, got 1" in check["reason"]
    # The mean gate has no interval to need: one sample is judged on its value.
    assert apply_gate(aggregate, {}, {"faithfulness": 0.8}, gate_on="mean")["passed"] is True


def test_gate_metric_not_run_is_not_checked():
    # Thresholds for metrics the run did not produce are left out (they cannot fail the gate).
    result = apply_gate({"faithfulness": _agg(0.9)}, {}, dict(DEFAULT_THRESHOLDS))
    assert [c["metric"] for c in result["checks"]] == ["faithfulness"]
    assert result["thresholds"] == {"faithfulness": DEFAULT_THRESHOLDS["faithfulness"]}
    assert result["passed"] is True


def test_gate_on_lower_uses_ci_low():
    # Mean above the threshold, the interval's lower bound below it.
    aggregate = {"faithfulness": _agg(0.85, ci_low=0.75, ci_high=0.95)}
    by_mean = apply_gate(aggregate, {}, {"faithfulness": 0.8}, gate_on="mean")
    by_lower = apply_gate(aggregate, {}, {"faithfulness": 0.8}, gate_on="lower")
    assert by_mean["passed"] is True
    assert by_lower["passed"] is False
    assert by_lower["failed"] == ["faithfulness"]
    assert by_lower["gate_on"] == "lower"
    assert by_lower["checks"][0]["value"] == 0.75


def test_gate_on_lower_passes_when_ci_low_clears_threshold():
    aggregate = {"faithfulness": _agg(0.9, ci_low=0.81, ci_high=0.97)}
    result = apply_gate(aggregate, {}, {"faithfulness": 0.8}, gate_on="lower")
    assert result["passed"] is True
    assert result["checks"][0]["value"] == 0.81


def test_gate_category_thresholds():
    aggregate = {"faithfulness": _agg(0.9), "context_recall": _agg(0.9)}
    by_category = {
        "billing": {"faithfulness": _agg(0.6), "context_recall": _agg(0.95)},
        "api": {"faithfulness": _agg(0.97), "context_recall": _agg(0.95)},
    }
    result = apply_gate(
        aggregate,
        by_category,
        {"faithfulness": 0.8},
        {"billing": {"faithfulness": 0.9, "context_recall": 0.9}, "api": {"faithfulness": 0.95}},
    )
    assert result["passed"] is False
    assert result["failed"] == ["billing/faithfulness"]
    statuses = _by_status(result)
    assert statuses[(None, "faithfulness")] == "passed"
    assert statuses[("billing", "faithfulness")] == "failed"
    assert statuses[("billing", "context_recall")] == "passed"
    assert statuses[("api", "faithfulness")] == "passed"
    assert result["category_thresholds"] == {
        "billing": {"faithfulness": 0.9, "context_recall": 0.9},
        "api": {"faithfulness": 0.95},
    }


def test_gate_category_without_samples_fails():
    result = apply_gate({"faithfulness": _agg(0.9)}, {}, {}, {"nosuchcategory": {"faithfulness": 0.9}},
                        samples=[{"category": "billing", "not_computable": {}}])
    assert result["passed"] is False
    (check,) = result["checks"]
    assert (check["category"], check["status"]) == ("nosuchcategory", "failed")
    assert "no sample" in check["reason"]


def test_gate_overall_and_category_failures_listed_together():
    aggregate = {"faithfulness": _agg(0.5), "context_precision": _agg(0.9)}
    by_category = {"faq": {"context_precision": _agg(0.2)}}
    result = apply_gate(aggregate, by_category, {"faithfulness": 0.8}, {"faq": {"context_precision": 0.65}})
    assert result["failed"] == ["faithfulness", "faq/context_precision"]


# ================================================================================== config files


def test_read_config_file_own_toml(tmp_path):
    path = tmp_path / "offline-eval.toml"
    path.write_text('seed = 7\nlanguage = "zh"\n[thresholds]\nfaithfulness = 0.9\n', encoding="utf-8")
    assert read_config_file(path) == {"seed": 7, "language": "zh", "thresholds": {"faithfulness": 0.9}}


def test_read_config_file_pyproject_table(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[project]\nname = "x"\n\n[tool.ruff]\nline-length = 100\n\n'
        '[tool.offline-eval]\nseed = 3\ngate-on = "lower"\n\n[tool.offline-eval.thresholds]\ncontext_recall = 0.5\n',
        encoding="utf-8",
    )
    assert read_config_file(path) == {"seed": 3, "gate-on": "lower", "thresholds": {"context_recall": 0.5}}


def test_read_config_file_missing_and_invalid(tmp_path):
    with pytest.raises(ConfigError, match="config file not found") as exc:
        read_config_file(tmp_path / "nope.toml")
    assert "nope.toml" in str(exc.value)
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML") as exc:
        read_config_file(bad)
    assert str(bad) in str(exc.value)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'language = "\xe9"\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_config_file(latin)


def test_find_config_file(tmp_path):
    assert find_config_file(tmp_path) is None

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert find_config_file(tmp_path) is None  # a pyproject without the table is not a config

    pyproject.write_text('[project]\nname = "x"\n[tool.offline-eval]\nseed = 1\n', encoding="utf-8")
    assert find_config_file(tmp_path) == pyproject

    own = tmp_path / "offline-eval.toml"
    own.write_text("seed = 2\n", encoding="utf-8")
    assert find_config_file(tmp_path) == own  # the own file wins


def test_find_config_file_subtable_only(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.offline-eval.thresholds]\nfaithfulness = 0.9\n', encoding="utf-8")
    assert find_config_file(tmp_path) == pyproject
    assert read_config_file(pyproject) == {"thresholds": {"faithfulness": 0.9}}


def test_find_config_file_ignores_commented_out_table(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n# [tool.offline-eval]\n# seed = 1\n', encoding="utf-8")
    assert find_config_file(tmp_path) is None


def test_find_config_file_quoted_table_name(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n[tool."offline-eval"]\nseed = 1\n', encoding="utf-8")
    assert read_config_file(pyproject) == {"seed": 1}  # tomllib itself reads it fine
    assert find_config_file(tmp_path) == pyproject


# ================================================================================== apply_settings / validate


def test_thresholds_from_file_merge_over_defaults(tmp_path):
    path = tmp_path / "offline-eval.toml"
    path.write_text("[thresholds]\nfaithfulness = 0.95\ncontext_relevant_ratio = 0.5\n", encoding="utf-8")
    config = apply_settings(EvalConfig(), read_config_file(path), str(path))
    assert config.thresholds == {**DEFAULT_THRESHOLDS, "faithfulness": 0.95, "context_relevant_ratio": 0.5}
    assert DEFAULT_THRESHOLDS["faithfulness"] == 0.80  # the module default is not mutated
    assert EvalConfig().thresholds == DEFAULT_THRESHOLDS


def test_thresholds_merge_twice_keeps_earlier_layer():
    config = EvalConfig()
    apply_settings(config, {"thresholds": {"faithfulness": 0.9}}, "file.toml")
    apply_settings(config, {"thresholds": {"context_recall": 0.5}}, "command line")
    assert config.thresholds["faithfulness"] == 0.9
    assert config.thresholds["context_recall"] == 0.5
    assert config.thresholds["answer_relevancy"] == DEFAULT_THRESHOLDS["answer_relevancy"]


def test_apply_settings_from_pyproject(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[tool.offline-eval]\nlang = "zh"\ngate-on = "lower"\nmax-claims = 4\nmetrics = "faithfulness,context_recall"\n'
        'cache_path = "c.sqlite"\n[tool.offline-eval.category-thresholds]\nfaq = { faithfulness = 0.9 }\n',
        encoding="utf-8",
    )
    config = apply_settings(EvalConfig(), read_config_file(path), str(path))
    assert config.language == "zh"
    assert config.gate_on == "lower"
    assert config.max_claims == 4
    assert config.metrics == ("faithfulness", "context_recall")
    assert config.cache_path == Path("c.sqlite")
    assert config.category_thresholds == {"faq": {"faithfulness": 0.9}}


def test_metrics_as_list():
    config = apply_settings(EvalConfig(), {"metrics": ["answer_relevancy"]}, "x")
    assert config.metrics == ("answer_relevancy",)


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"bogus": 1}, "unknown setting 'bogus'"),
        ({"judge_name": "x"}, "unknown setting 'judge_name'"),
        ({"metrics": "faithfulness,bogus"}, "unknown metric(s) bogus"),
        ({"metrics": ["context_relevant_ratio"]}, "unknown metric(s) context_relevant_ratio"),
        ({"thresholds": {"bogus": 0.5}}, "threshold for unknown metric 'bogus'"),
        ({"thresholds": {"faithfulness": 1.5}}, "outside [0, 1]"),
        ({"thresholds": {"faithfulness": -0.1}}, "outside [0, 1]"),
        ({"thresholds": {"faithfulness": float("nan")}}, "outside [0, 1]"),
        ({"category_thresholds": {"faq": {"bogus": 0.5}}}, "faq/'bogus'"),
        ({"category_thresholds": {"faq": {"faithfulness": 2}}}, "faq/faithfulness=2"),
        ({"language": "fr"}, "language must be auto, en or zh"),
        ({"lang": "de"}, "not 'de'"),
        ({"gate_on": "median"}, "gate_on must be"),
        ({"gate_on": "Lower"}, "gate_on must be"),
        ({"metrics": []}, "no metric to run"),
        ({"metrics": "faithfulness,faithfulness"}, "named twice"),
        ({"n_resamples": 0}, "'n_resamples' must be at least 1, not 0"),
        ({"n_questions": 0}, "'n_questions' must be at least 1"),
        ({"max_claims": 0}, "'max_claims' must be at least 1"),
        ({"max_reference_claims": -1}, "'max_reference_claims' must be at least 1"),
        ({"n_ctx": 16}, "'n_ctx' must be at least 512"),
        ({"n_threads": 0}, "'n_threads' must be at least 1"),
        ({"n_gpu_layers": -2}, "'n_gpu_layers' must be at least -1"),
        ({"seed": -1}, "'seed' must be between 0 and 4294967295"),
        ({"seed": 2**32}, "'seed' must be between"),
        ({"allow_empty": "yes"}, "'allow_empty' must be true or false"),
    ],
)
def test_bad_settings_raise_config_error_naming_source(settings, fragment):
    source = "/some/dir/offline-eval.toml"
    with pytest.raises(ConfigError) as exc:
        apply_settings(EvalConfig(), settings, source)
    message = str(exc.value)
    assert message.startswith(source + ":")
    assert fragment in message


def test_bad_setting_in_file_names_the_file(tmp_path):
    path = tmp_path / "offline-eval.toml"
    path.write_text('language = "fr"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        apply_settings(EvalConfig(), read_config_file(path), str(path))
    assert str(path) in str(exc.value)


def test_threshold_bounds_inclusive():
    config = apply_settings(EvalConfig(), {"thresholds": {"faithfulness": 0.0, "context_recall": 1.0}}, "x")
    assert config.thresholds["faithfulness"] == 0.0 and config.thresholds["context_recall"] == 1.0


def test_validate_defaults_ok():
    validate(EvalConfig(), "defaults")
    # The four RAGAS core metrics run by default; the others (answer correctness, the RAGAS form of
    # answer relevancy...) when named.
    assert EvalConfig().metrics == default_metrics() == (
        "faithfulness", "answer_relevancy", "context_recall", "context_precision")
    assert set(default_metrics()) < set(metric_names())


def test_non_numeric_threshold_is_config_error():
    with pytest.raises(ConfigError, match="faithfulness"):
        apply_settings(EvalConfig(), {"thresholds": {"faithfulness": "high"}}, "x.toml")


def test_thresholds_not_a_table_is_config_error():
    with pytest.raises(ConfigError, match="thresholds"):
        apply_settings(EvalConfig(), {"thresholds": 0.8}, "x.toml")


def test_category_thresholds_not_nested_is_config_error():
    with pytest.raises(ConfigError, match="faq"):
        apply_settings(EvalConfig(), {"category_thresholds": {"faq": 0.5}}, "x.toml")


def test_metrics_wrong_type_is_config_error():
    with pytest.raises(ConfigError, match="metrics"):
        apply_settings(EvalConfig(), {"metrics": 5}, "x.toml")


def test_wrong_scalar_type_is_config_error():
    with pytest.raises(ConfigError, match="seed"):
        apply_settings(EvalConfig(), {"seed": "abc"}, "x.toml")


def test_integer_settings_at_their_bounds_are_accepted():
    config = apply_settings(EvalConfig(), {"n_resamples": 1, "n_questions": 1, "max_claims": 1, "n_ctx": 512,
                                           "n_threads": 1, "n_gpu_layers": -1, "seed": 0}, "x")
    assert (config.n_resamples, config.n_gpu_layers, config.n_threads) == (1, -1, 1)
    assert apply_settings(EvalConfig(), {"n_threads": None}, "x").n_threads is None


def test_allow_empty_setting_from_a_file(tmp_path):
    path = tmp_path / "offline-eval.toml"
    path.write_text("allow_empty = true\n", encoding="utf-8")
    assert apply_settings(EvalConfig(), read_config_file(path), str(path)).allow_empty is True
    assert EvalConfig().allow_empty is False
