"""Answer relevancy, model-free: the RAGAS form (scripted questions and evasiveness, a hashing embedder)
and the judge form (P(addresses the question)), both scorings."""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest

from offline_eval.judge import JudgeResult
from offline_eval.metrics import SampleContext
from offline_eval.metrics.answer_relevancy import (
    AddressesQuestion,
    AnswerRelevancy,
    AnswerRelevancyJudge,
    ClassifyAnswer,
    GenerateQuestions,
    answer_block,
    question_answer_block,
)
from offline_eval.testing import FakeJudge
from tests.metrics.common import QUESTION, run, sample, scripted


def test_judge_form_scores_the_probability_that_the_answer_addresses_the_question():
    def answer(request):
        assert list(request.schema["properties"]) == ["addresses"]
        return {"addresses": "yes"}, {"addresses": {"yes": 0.9, "no": 0.1}}

    judge = FakeJudge(answer)
    report = run([sample("s")], judge, "answer_relevancy_judge")
    row = report["samples"][0]
    assert row["scores"]["answer_relevancy_judge"] == pytest.approx(0.9)
    details = row["details"]["answer_relevancy_judge"]
    assert details["addresses"] is True
    assert details["findings"] == [{"label": "answer", "text": "the answer addresses the question",
                                    "verdict": "addresses", "ok": True, "probability": 0.9}]
    # One call, shown the question and the answer; no embedder is loaded for it.
    (request,) = judge.requests
    assert QUESTION in request.shared and "<answer>" in request.shared
    assert report["run"]["embedders"] == {}
    hard = run([sample("s")], FakeJudge(answer), "answer_relevancy_judge", verdict_scoring="hard")["samples"][0]
    assert hard["scores"]["answer_relevancy_judge"] == 1.0


def test_judge_form_scores_an_off_topic_or_evasive_answer_low():
    def answer(request):
        return {"addresses": "no"}, {"addresses": {"yes": 0.2, "no": 0.8}}

    row = run([sample("s")], FakeJudge(answer), "answer_relevancy_judge")["samples"][0]
    assert row["scores"]["answer_relevancy_judge"] == pytest.approx(0.2)
    assert row["details"]["answer_relevancy_judge"]["findings"][0]["verdict"] == "off-topic or evasive"
    hard = run([sample("s")], FakeJudge(answer), "answer_relevancy_judge", verdict_scoring="hard")["samples"][0]
    assert hard["scores"]["answer_relevancy_judge"] == 0.0


def test_judge_form_empty_answer_scores_zero_without_a_call():
    judge = FakeJudge()
    row = run([sample("e", answer=" ")], judge, "answer_relevancy_judge")["samples"][0]
    assert row["scores"]["answer_relevancy_judge"] == 0.0 and judge.requests == []


def test_the_judge_form_runs_only_when_named():
    from offline_eval.config import EvalConfig

    assert "answer_relevancy" in EvalConfig().metrics
    assert "answer_relevancy_judge" not in EvalConfig().metrics


def test_addresses_task_in_both_languages_defuses_the_texts():
    block = question_answer_block("q</question>", "a</answer>", "en")
    assert block.count("</question>") == 1 and block.count("</answer>") == 1
    assert question_answer_block("长江有多长？", "约6300公里。", "zh").startswith("问题：")
    task = AddressesQuestion()
    assert task.schema["required"] == ["addresses"]
    assert "不论信息对错" in task.text("zh") and "whether or not" in task.text("en")


def test_questions_like_the_asked_one_score_high_with_findings():
    def answer(request):
        props = request.schema["properties"]
        if "questions" in props:
            return {"questions": [QUESTION, QUESTION, "What colour is the sky?"]}
        return {"answer_kind": "informative"}, {"answer_kind": {"evasive": 0.1, "informative": 0.9}}

    report = run([sample("s")], FakeJudge(answer), "answer_relevancy")
    row = report["samples"][0]
    details = row["details"]["answer_relevancy"]
    # Repeats are dropped: two distinct questions, one identical to the asked one.
    assert [q["text"] for q in details["generated_questions"]] == [QUESTION, "What colour is the sky?"]
    assert details["generated_questions"][0]["similarity"] == pytest.approx(1.0)
    assert row["scores"]["answer_relevancy"] == pytest.approx(0.5, abs=1e-6)  # mean of 1 and 0
    assert details["noncommittal"] is False
    assert details["findings"][0] == {"label": "answer", "text": "the answer gives information",
                                      "verdict": "informative", "ok": True, "probability": 0.1}
    assert details["findings"][1] == {"label": "generated question", "text": QUESTION, "verdict": "similarity 1.000",
                                      "ok": None}
    assert report["run"]["embedders"]["en"]["name"] == "hashing-embedder"


def test_evasive_answer_scores_zero_whatever_the_verdict_scoring():
    for mode in ("hard", "probability"):
        row = run([sample("s")], scripted(answer_kind="evasive", p_evasive=0.75), "answer_relevancy",
                  verdict_scoring=mode)["samples"][0]
        assert row["scores"]["answer_relevancy"] == 0.0
        assert row["details"]["answer_relevancy"]["summary"] == "evasive answer: scored 0"
        assert row["details"]["answer_relevancy"]["findings"][0]["probability"] == 0.75
    # an informative answer is not discounted by its P(evasive)
    informative = run([sample("s")], scripted(p_evasive=0.3), "answer_relevancy")["samples"][0]
    hard = run([sample("s")], scripted(p_evasive=0.3), "answer_relevancy", verdict_scoring="hard")["samples"][0]
    assert informative["scores"] == hard["scores"] and informative["scores"]["answer_relevancy"] > 0.0


def test_empty_answer_scores_zero_without_a_judge_call():
    judge = FakeJudge()
    metric = AnswerRelevancy()
    empty = sample("empty", answer="  ")
    evidence = metric.collect(SampleContext(empty, "en", judge, metric.name))
    assert judge.requests == []

    def no_embedding(texts, langs):
        raise AssertionError("nothing to embed for an empty answer")

    (outcome,) = metric.score([empty], [evidence], no_embedding)
    assert outcome.scores == {"answer_relevancy": 0.0}
    assert outcome.not_computable is None
    assert outcome.details == {"reason": "empty answer"}


def test_empty_answer_scores_zero_next_to_scored_answers():
    metric = AnswerRelevancy()
    judge = FakeJudge()
    samples = [sample("good"), sample("empty", answer="")]
    evidence = [metric.collect(SampleContext(s, "en", judge, metric.name)) for s in samples]

    def same_vector(texts, langs):
        return np.ones((len(texts), 2)) / np.sqrt(2)

    good, empty = metric.score(samples, evidence, same_vector)
    assert good.scores["answer_relevancy"] == pytest.approx(1.0)
    assert empty.scores["answer_relevancy"] == 0.0


def test_no_generated_question_is_not_computable():
    report = run([sample("s")], FakeJudge(lambda r: {"questions": [" "] * r.schema["properties"]["questions"]["minItems"]}
                                          if "questions" in r.schema["properties"] else {"answer_kind": "informative"}),
                 "answer_relevancy")
    assert report["samples"][0]["not_computable"]["answer_relevancy"] == "the judge generated no question"


@pytest.mark.parametrize("n", [1, 3])
def test_questions_schema(n):
    schema = GenerateQuestions(n).schema
    questions = schema["properties"]["questions"]
    assert questions["minItems"] == questions["maxItems"] == n
    assert questions["items"]["type"] == "string"
    assert questions["items"]["minLength"] == 1
    assert isinstance(questions["items"]["maxLength"], int) and questions["items"]["maxLength"] > 0
    assert schema["required"] == ["questions"]
    assert schema["additionalProperties"] is False
    jsonschema.validate({"questions": ["What?"] * n}, schema)
    limit = questions["items"]["maxLength"]
    for bad in (
        {"questions": ["What?"] * (n + 1)},
        {"questions": ["x" * (limit + 1)] * n},
        {"questions": [""] * n},
        {"questions": ["What?"] * n, "noncommittal": "no"},
        {},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_answer_kind_schema_is_a_closed_enum_and_parses_with_its_probability():
    task = ClassifyAnswer()
    jsonschema.validate({"answer_kind": "evasive"}, task.schema)
    for bad in ({"answer_kind": "yes"}, {}, {"answer_kind": "informative", "x": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, task.schema)
    verdict = task.parse(JudgeResult({"answer_kind": "evasive"}, 1, 1,
                                     probabilities={"answer_kind": {"evasive": 0.6, "informative": 0.4}}))
    assert (verdict.yes, verdict.p_yes) == (True, 0.6)
    assert task.parse(JudgeResult({"answer_kind": "informative"}, 1, 1)).p_yes is None


def test_answer_block_defuses_the_answer():
    assert answer_block("a</answer>", "en").count("</answer>") == 1
    assert answer_block("回答", "zh").startswith("待评估的回答：")
