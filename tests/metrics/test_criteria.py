"""Custom criteria, model-free: a yes/no question of the user's becomes a metric, scored, gated and reported."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from offline_eval import evaluate
from offline_eval.config import ConfigError, EvalConfig, apply_settings, read_config_file
from offline_eval.metrics import REGISTRY, unregister
from offline_eval.metrics.criteria import JudgeCriterion, is_criterion
from offline_eval.prompts import context_block, question_answer_block
from offline_eval.testing import FakeJudge, default_answer, hashing_embedders
from tests.metrics.common import ANSWER, CONTEXT, QUESTION, run, sample

CITES = "Does the answer cite a source?"


@pytest.fixture(autouse=True)
def forget_criteria():
    """Criteria register metrics process-wide: leave none behind for other tests."""
    yield
    for name in [n for n in REGISTRY if is_criterion(n)]:
        unregister(name)


def criterion_judge(p_yes: float = 0.7, verdict: str = "yes") -> FakeJudge:
    def answer(request):
        if "verdict" in request.schema["properties"]:
            return {"verdict": verdict}, {"verdict": {"yes": p_yes, "no": 1 - p_yes}}
        return default_answer(request)

    return FakeJudge(answer)


def test_a_criterion_scores_the_probability_of_yes_and_is_gated_at_its_default():
    judge = criterion_judge(0.7)
    report = run([sample("s")], judge, "faithfulness", criteria={"cites": CITES})
    (row,) = report["samples"]
    assert row["scores"]["cites"] == pytest.approx(0.7)
    details = row["details"]["cites"]
    assert details["findings"] == [{"label": "criterion", "text": CITES, "verdict": "met", "ok": True,
                                    "probability": 0.7}]
    assert details["summary"] == "criterion met; score = the judge's probability of yes"
    assert report["run"]["metrics"] == ["faithfulness", "cites"]  # a defined criterion always runs
    assert report["run"]["params"]["criteria"] == {"cites": {"question": CITES, "context": False}}
    check = next(c for c in report["gate"]["checks"] if c["metric"] == "cites")
    assert (check["threshold"], check["status"], check["reason"]) == (
        0.8, "failed", f"answers fail the criterion: {CITES}")
    assert report["run"]["usage"]["by_metric"]["cites"]["judge_calls"] == 1


def test_hard_scoring_counts_the_verdict():
    report = run([sample("s")], criterion_judge(0.3, "no"), "cites", criteria={"cites": CITES},
                 verdict_scoring="hard")
    assert report["samples"][0]["scores"] == {"cites": 0.0}
    assert report["samples"][0]["details"]["cites"]["findings"][0]["verdict"] == "not met"


def test_without_context_the_question_and_answer_are_the_shared_prefix_as_for_judged_relevancy():
    judge = criterion_judge()
    run([sample("s")], judge, "answer_relevancy", criteria={"cites": CITES})
    (asked,) = [r for r in judge.requests if r.metric == "cites"]
    relevancy = [r for r in judge.requests if r.metric == "answer_relevancy"]
    assert asked.shared == question_answer_block(QUESTION, ANSWER, "en") == relevancy[0].shared
    assert asked.task.endswith(CITES) and CONTEXT not in asked.task + asked.shared


def test_with_context_the_context_is_the_shared_prefix_as_for_faithfulness():
    judge = criterion_judge()
    run([sample("s")], judge, "faithfulness",
        criteria={"grounded": {"question": "Does the answer only use the context?", "context": True,
                               "threshold": 0.5}})
    (asked,) = [r for r in judge.requests if r.metric == "grounded"]
    verify = [r for r in judge.requests if r.metric == "faithfulness" and r.shared]
    assert asked.shared == context_block([(1, CONTEXT)], "en") == verify[0].shared
    assert ANSWER in asked.task and QUESTION in asked.task


def test_chinese_prompts_are_chinese():
    text = JudgeCriterion("退款期限是多久？", "30 天内。", "回答是否礼貌？", False).text("zh")
    assert text.startswith("针对上面这段回答判断下面这一点") and "是答 \"yes\"，否答 \"no\"" in text and text.endswith("回答是否礼貌？")
    with_context = JudgeCriterion("退款期限是多久？", "30 天内。", "回答是否礼貌？", True).text("zh")
    assert "<answer>\n30 天内。\n</answer>" in with_context and "以上面的资料为准" in with_context


def test_an_empty_answer_is_not_computable_without_a_call():
    judge = criterion_judge()
    report = run([sample("e", answer="")], judge, "cites", criteria={"cites": CITES})
    assert report["samples"][0]["scores"] == {"cites": None}
    assert report["samples"][0]["not_computable"] == {"cites": "empty answer"}
    assert judge.requests == []


def test_a_criterion_with_context_and_no_retrieval_is_judged_on_an_empty_context():
    judge = criterion_judge(0.2, "no")
    report = run([sample("e", contexts=())], judge, "x", criteria={"x": {"question": "Cites?", "context": True}})
    assert report["samples"][0]["scores"] == {"x": pytest.approx(0.2)}
    assert "<context>\n\n</context>" in judge.requests[0].shared


@pytest.mark.parametrize("criteria, fragment", [
    ({"faithfulness": "Is it?"}, "the name of a built-in metric or score"),
    ({"context_relevant_ratio": "Is it?"}, "the name of a built-in metric or score"),
    ({"Bad-Name": "Is it?"}, "lower-case letters, digits and _"),
    ({"x": "  "}, "needs a question"),
    ({"x": {"question": "Is it?", "threshold": 1.5}}, "threshold must be a number in [0, 1]"),
    ({"x": {"question": "Is it?", "context": "yes"}}, "context must be true or false"),
    ({"x": {"question": "Is it?", "weight": 2}}, "unknown key(s) weight"),
    (["x"], "criteria must be a table"),
])
def test_a_bad_criterion_is_a_config_error_naming_it(criteria, fragment):
    with pytest.raises(ConfigError, match="test: .*" + fragment.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)")):
        apply_settings(EvalConfig(), {"criteria": criteria}, "test")
    assert "faithfulness" in REGISTRY and not is_criterion("faithfulness")


def test_toml_criteria_with_threshold_and_context_and_a_flag_threshold_over_them(tmp_path):
    path = tmp_path / "offline-eval.toml"
    path.write_text('metrics = ["faithfulness"]\n[criteria.polite]\nquestion = "Is the answer polite?"\n'
                    'threshold = 0.6\ncontext = true\n', encoding="utf-8")
    config = apply_settings(EvalConfig(), read_config_file(path), str(path))
    assert config.metrics == ("faithfulness", "polite")
    assert config.thresholds["polite"] == 0.6 and config.criteria["polite"].context is True
    apply_settings(config, {"thresholds": {"polite": 0.9}, "metrics": ("context_precision",)}, "command line")
    assert config.thresholds["polite"] == 0.9 and config.metrics == ("context_precision", "polite")


def test_metrics_plus_adds_to_the_default_list():
    config = apply_settings(EvalConfig(), {"metrics": "+cites", "criteria": {"cites": CITES}}, "test")
    assert config.metrics == ("faithfulness", "answer_relevancy", "context_recall", "context_precision", "cites")


def test_a_criterion_of_an_earlier_run_is_neither_run_nor_accepted_later():
    evaluate([{"question": QUESTION, "contexts": [CONTEXT], "answer": ANSWER}], judge_instance=criterion_judge(),
             embedders=hashing_embedders(), criteria={"stale": CITES}, n_resamples=10)
    assert is_criterion("stale")
    assert "stale" not in EvalConfig().metrics
    with pytest.raises(ConfigError, match="unknown metric"):
        apply_settings(EvalConfig(), {"metrics": ("stale",)}, "test")
    with pytest.raises(ConfigError, match="threshold for unknown metric 'stale'"):
        apply_settings(EvalConfig(), {"thresholds": {"stale": 0.5}}, "test")


def test_the_command_line_defines_criteria_and_refuses_one_given_twice(tmp_path, monkeypatch):
    from offline_eval import runner
    from offline_eval.cli import cli
    from tests.conftest import REPO

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "load_judge", lambda config, echo: criterion_judge(0.9))
    monkeypatch.setattr(runner, "EmbedderSet", lambda forced=None: hashing_embedders())
    example = str(REPO / "examples" / "sample.jsonl")
    result = CliRunner().invoke(cli, ["evaluate", example, "--out", "out", "--metrics", "context_precision",
                                      "--criterion", f"cites={CITES}", "--threshold", "cites=0.85"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["aggregate"]["cites"]["mean"] == pytest.approx(0.9)
    assert report["gate"]["thresholds"]["cites"] == 0.85
    assert "cites" in result.output
    twice = CliRunner().invoke(cli, ["evaluate", example, "--criterion", "a=Is it?", "--criterion", "a=Is it?"])
    assert twice.exit_code == 2 and "given twice" in twice.output
    clash = CliRunner().invoke(cli, ["evaluate", example, "--criterion", "faithfulness=Is it?"])
    assert clash.exit_code == 2 and "built-in metric" in clash.output
