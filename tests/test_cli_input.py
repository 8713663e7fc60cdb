"""The command line rejects bad input with exit code 2 and a one-line message, before any model loads.

Every test runs in an empty temporary folder (no offline-eval.toml / pyproject.toml is picked up)
with an isolated offline-eval home, and makes sure no judge or embedder is ever loaded.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from offline_eval.cli import EXIT_BAD_INPUT, cli
from offline_eval.registry import all_models

GOOD_RECORD = {"question": "How long is the refund window?", "contexts": ["Refunds within 30 days."],
               "answer": "30 days."}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OFFLINE_EVAL_MODELS", str(tmp_path / "models"))

    import offline_eval.runner as runner

    def no_models(*args, **kwargs):
        raise AssertionError("a model was loaded while checking input")

    monkeypatch.setattr(runner, "load_judge", no_models)
    monkeypatch.setattr(runner.EmbedderSet, "for_language", no_models)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def assert_bad_input(result, *fragments: str) -> None:
    assert result.exit_code == EXIT_BAD_INPUT == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert "Error" in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)


def write_jsonl(path, records) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


# ================================================================================== help


def test_top_level_help_mentions_exit_codes(workdir):
    result = invoke("--help")
    assert result.exit_code == 0
    out = result.output
    assert "Exit codes" in out
    assert "0  the quality gate passed" in out
    assert "1  the quality gate failed" in out
    assert "2  bad input or usage" in out
    for command in ("evaluate", "models", "compare", "agreement"):
        assert command in out


def test_short_help_option(workdir):
    assert invoke("-h").exit_code == 0


def test_evaluate_help_mentions_exit_codes(workdir):
    result = invoke("evaluate", "--help")
    assert result.exit_code == 0
    out = result.output
    assert "0 gate passed" in out
    assert "1 gate failed" in out
    assert "2 bad input or usage" in out
    for option in ("--threshold", "--metrics", "--format", "--config", "--gate-on", "--skip-invalid"):
        assert option in out


def test_evaluate_help_has_no_control_characters(workdir):
    out = invoke("evaluate", "--help").output
    assert "\x08" not in out


# ================================================================================== models


def test_models_lists_every_registry_name(workdir):
    result = invoke("models")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    lines = result.output.splitlines()
    for spec in all_models():
        row = [line for line in lines if line.split() and line.split()[0] == spec.name]
        assert len(row) == 1, spec.name
        assert spec.role in row[0]
    assert "alias:fast" in result.output and "alias:tiny" in result.output
    assert "default:zh" in result.output
    assert str(workdir / "models") in result.output
    assert "offline-eval models install NAME" in result.output


def test_models_install_unknown_name(workdir):
    result = invoke("models", "install", "nosuchmodel")
    assert_bad_input(result, "nosuchmodel")


def test_models_install_without_a_name(workdir):
    result = invoke("models", "install")
    assert_bad_input(result, "--all")


# ================================================================================== evaluate: data file


def test_evaluate_missing_file(workdir):
    result = invoke("evaluate", "missing.jsonl")
    assert_bad_input(result, "missing.jsonl", "file not found")


def test_evaluate_empty_file(workdir):
    (workdir / "empty.jsonl").write_bytes(b"")
    result = invoke("evaluate", "empty.jsonl")
    assert_bad_input(result, "empty.jsonl", "empty")


def test_evaluate_whitespace_only_file(workdir):
    (workdir / "blank.jsonl").write_text("\n  \n", encoding="utf-8")
    assert_bad_input(invoke("evaluate", "blank.jsonl"), "blank.jsonl", "empty")


def test_evaluate_bad_contexts_field_names_file_line_and_field(workdir):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD, {**GOOD_RECORD, "contexts": "one chunk as a string"}])
    result = invoke("evaluate", "data.jsonl")
    assert_bad_input(result, "data.jsonl", "line 2", "contexts")


def test_evaluate_contexts_with_empty_string(workdir):
    write_jsonl(workdir / "data.jsonl", [{**GOOD_RECORD, "contexts": ["ok", ""]}])
    assert_bad_input(invoke("evaluate", "data.jsonl"), "data.jsonl", "line 1", "contexts")


def test_evaluate_broken_json_line(workdir):
    (workdir / "data.jsonl").write_text(json.dumps(GOOD_RECORD) + "\n{not json\n", encoding="utf-8")
    assert_bad_input(invoke("evaluate", "data.jsonl"), "data.jsonl", "line 2")


def test_evaluate_undecodable_bytes(workdir):
    good = json.dumps(GOOD_RECORD).encode()
    (workdir / "latin.jsonl").write_bytes(good + b'\n{"question": "caf\xe9", "contexts": [], "answer": "x"}\n')
    result = invoke("evaluate", "latin.jsonl")
    assert_bad_input(result, "latin.jsonl", "line 2", "UTF-8", "0xe9")


def test_evaluate_lone_surrogate_is_bad_input(workdir):
    (workdir / "data.jsonl").write_text('{"question": "q?", "contexts": [], "answer": "bad \\ud800"}\n', encoding="utf-8")
    assert_bad_input(invoke("evaluate", "data.jsonl"), "data.jsonl line 1: field 'answer'", "lone surrogate")


def test_evaluate_unsupported_extension(workdir):
    (workdir / "data.txt").write_text(json.dumps(GOOD_RECORD), encoding="utf-8")
    assert_bad_input(invoke("evaluate", "data.txt"), "data.txt", "unsupported file type")


# ================================================================================== evaluate: options


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--threshold", "faithfulness=abc"], ["--threshold", "faithfulness=abc", "METRIC=VALUE"]),
        (["--threshold", "faithfulness"], ["--threshold", "METRIC=VALUE"]),
        (["--threshold", "faithfulness=1.5"], ["faithfulness=1.5", "outside [0, 1]"]),
        (["--threshold", "faithfulness=-0.2"], ["outside [0, 1]"]),
        (["--threshold", "bogus=0.5"], ["unknown metric", "bogus"]),
        (["--category-threshold", "faithfulness=0.5"], ["--category-threshold", "CATEGORY:METRIC=VALUE"]),
        (["--category-threshold", "faq:faithfulness=2"], ["faq/faithfulness"]),
        (["--metrics", "faithfulness,bogus"], ["unknown metric(s) bogus"]),
        (["--metrics", "context_relevant_ratio"], ["unknown metric(s) context_relevant_ratio"]),
        (["--format", "json,pdf"], ["--format", "pdf", "json, md, html, junit"]),
        (["--format", ","], ["--format"]),
        (["--lang", "fr"], ["--lang"]),
        (["--gate-on", "median"], ["--gate-on"]),
        (["--seed", "abc"], ["--seed"]),
        (["--seed", "-1"], ["'seed' must be between 0 and"]),
        (["--n-ctx", "0"], ["'n_ctx' must be at least 512, not 0"]),
        (["--n-questions", "0"], ["'n_questions' must be at least 1, not 0"]),
        (["--max-claims", "0"], ["'max_claims' must be at least 1"]),
        (["--threads", "0"], ["'n_threads' must be at least 1"]),
        (["--workers", "0"], ["'workers' must be at least 1, not 0"]),
        (["--concurrency", "0"], ["'concurrency' must be at least 1, not 0"]),
        (["--ray", "ray://head:10001"], ["Ray Client (ray://) is not supported", "ray_address 'auto'"]),
        (["--concurrency", "4"], ["concurrency 4 is for a judge server", "use workers"]),
        (["--workers", "2", "--judge-url", "http://127.0.0.1:1", "--judge-model", "m"],
         ["a judge server is used in parallel with concurrency"]),
        (["--metrics", ","], ["no metric to run"]),
        (["--category-threshold", "shipping:faithfulness=0.9"],
         ["category threshold for 'shipping'", "no sample has that category", "categories in the data: none"]),
    ],
)
def test_evaluate_bad_options(workdir, args, fragments):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    result = invoke("evaluate", "data.jsonl", *args)
    assert_bad_input(result, *fragments)


def test_bad_option_is_reported_before_bad_data(workdir):
    result = invoke("evaluate", "missing.jsonl", "--metrics", "bogus")
    assert_bad_input(result, "bogus")
    assert "missing.jsonl" not in result.output


def test_evaluate_missing_config_file(workdir):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    result = invoke("evaluate", "data.jsonl", "--config", "nope.toml")
    assert_bad_input(result, "nope.toml", "config file not found")


def test_evaluate_invalid_toml_config(workdir):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    (workdir / "cfg.toml").write_text("seed = = 1\n", encoding="utf-8")
    assert_bad_input(invoke("evaluate", "data.jsonl", "--config", "cfg.toml"), "cfg.toml", "not valid TOML")


def test_evaluate_config_unknown_setting_names_the_file(workdir):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    (workdir / "offline-eval.toml").write_text("judge_name = 'x'\n", encoding="utf-8")
    result = invoke("evaluate", "data.jsonl")  # found in the working folder
    assert_bad_input(result, "offline-eval.toml", "unknown setting 'judge_name'")


def test_evaluate_pyproject_config_bad_language(workdir):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    (workdir / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.offline-eval]\nlanguage = "fr"\n',
                                            encoding="utf-8")
    assert_bad_input(invoke("evaluate", "data.jsonl"), "pyproject.toml", "language must be auto, en or zh")


def test_evaluate_command_line_threshold_over_config_is_validated(workdir):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    (workdir / "offline-eval.toml").write_text("[thresholds]\nfaithfulness = 0.9\n", encoding="utf-8")
    result = invoke("evaluate", "data.jsonl", "--threshold", "context_recall=7")
    assert_bad_input(result, "command line", "context_recall=7.0")


@pytest.mark.parametrize(
    ("toml", "fragment"),
    [
        ('[thresholds]\nfaithfulness = "high"\n', "faithfulness"),
        ("[category_thresholds]\nfaq = 0.5\n", "faq"),
        ("n_resamples = 0\n", "'n_resamples' must be at least 1"),
    ],
)
def test_evaluate_bad_value_in_config_names_the_file(workdir, toml, fragment):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    (workdir / "offline-eval.toml").write_text(toml, encoding="utf-8")
    assert_bad_input(invoke("evaluate", "data.jsonl"), "offline-eval.toml", fragment)


def test_valid_input_reaches_model_loading_only_after_checks(workdir):
    """Sanity check of the guard above: valid input does go on to load the judge (here: refused)."""
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    result = invoke("evaluate", "data.jsonl", "--metrics", "faithfulness", "--format", "json")
    assert isinstance(result.exception, AssertionError)
    assert "a model was loaded" in str(result.exception)
    assert "1 samples from data.jsonl" in result.output


def test_allow_empty_metric_flag_is_accepted(workdir):
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    result = invoke("evaluate", "data.jsonl", "--allow-empty-metric", "--format", "json")
    assert "a model was loaded" in str(result.exception)


def test_workers_without_ray_installed_is_one_line_naming_the_install(workdir, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed: find_spec says None
    write_jsonl(workdir / "data.jsonl", [GOOD_RECORD])
    for flags in (["--workers", "2"], ["--ray", "auto"]):
        result = invoke("evaluate", "data.jsonl", *flags)
        assert_bad_input(result, "need Ray, which is not installed: pip install 'offline-eval[ray]'")
        assert len(result.output.strip().splitlines()) == 1
    (workdir / "offline-eval.toml").write_text("workers = 2\n", encoding="utf-8")  # the same check for a file
    assert_bad_input(invoke("evaluate", "data.jsonl"), "offline-eval.toml", "pip install 'offline-eval[ray]'")
