"""Answer relevancy, model-free: the default judge form (P(addresses the question), 0 if evasive) and the
RAGAS form (scripted questions and evasiveness, a hashing embedder), both scorings."""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest

from offline_eval.judge import JudgeResult
from offline_eval.metrics import SampleContext
from offline_eval.metrics.answer_relevancy import (
    AddressesQuestion,
    AnswerRelevancy,
    AnswerRelevancyRagas,
    ClassifyAnswer,
    GenerateQuestions,
    answer_block,
    question_answer_block,
)
from offline_eval.testing import FakeJudge
from tests.metrics.common import ANSWER, QUESTION, run, sample, scripted


def addresses_judge(verdict: str, p_yes: float, kind: str = "informative", p_evasive: float = 0.1) -> FakeJudge:
    """A judge that answers the addresses question with ``verdict`` / ``p_yes`` and classifies the answer."""
    def answer(request):
        if "answer_kind" in request.schema["properties"]:
            return {"answer_kind": kind}, {"answer_kind": {"evasive": p_evasive, "informative": 1 - p_evasive}}
        assert list(request.schema["properties"]) == ["addresses"]
        return {"addresses": verdict}, {"addresses": {"yes": p_yes, "no": 1 - p_yes}}

    return FakeJudge(answer)


def test_default_form_scores_the_probability_that_the_answer_addresses_the_question():
    judge = addresses_judge("yes", 0.9)
    report = run([sample("s")], judge, "answer_relevancy")
    row = report["samples"][0]
    assert row["scores"]["answer_relevancy"] == pytest.approx(0.9)
    details = row["details"]["answer_relevancy"]
    assert details["addresses"] is True and details["noncommittal"] is False
    assert details["findings"] == [
        {"label": "answer", "text": "the answer addresses the question", "verdict": "addresses", "ok": True,
         "probability": 0.9},
        {"label": "answer", "text": "the answer gives information", "verdict": "informative", "ok": True,
         "probability": 0.1}]
    # Two short calls: the question and the answer; the answer alone (evasiveness). No embedder is loaded.
    addresses, evasive = judge.requests
    assert QUESTION in addresses.shared and "<answer>" in addresses.shared
    assert QUESTION not in evasive.shared and ANSWER in evasive.shared
    assert report["run"]["embedders"] == {}
    hard = run([sample("s")], addresses_judge("yes", 0.9), "answer_relevancy", verdict_scoring="hard")["samples"][0]
    assert hard["scores"]["answer_relevancy"] == 1.0


def test_default_form_scores_an_off_topic_answer_low():
    row = run([sample("s")], addresses_judge("no", 0.2), "answer_relevancy")["samples"][0]
    assert row["scores"]["answer_relevancy"] == pytest.approx(0.2)
    assert row["details"]["answer_relevancy"]["findings"][0]["verdict"] == "off-topic"
    hard = run([sample("s")], addresses_judge("no", 0.2), "answer_relevancy", verdict_scoring="hard")["samples"][0]
    assert hard["scores"]["answer_relevancy"] == 0.0


@pytest.mark.parametrize("mode", ["hard", "probability"])
def test_default_form_scores_an_evasive_answer_zero_whatever_it_addresses(mode):
    # "Based on the context it is not possible to say": the judge may call it on topic; RAGAS's rule wins.
    row = run([sample("s")], addresses_judge("yes", 0.8, kind="evasive", p_evasive=0.7), "answer_relevancy",
              verdict_scoring=mode)["samples"][0]
    details = row["details"]["answer_relevancy"]
    assert row["scores"]["answer_relevancy"] == 0.0
    assert details["summary"] == "evasive answer: scored 0" and details["noncommittal"] is True
    assert details["findings"][1]["verdict"] == "evasive" and details["findings"][1]["probability"] == 0.7
    # an informative answer is not discounted by its P(evasive)
    informative = run([sample("s")], addresses_judge("yes", 0.8, p_evasive=0.4), "answer_relevancy")["samples"][0]
    assert informative["scores"]["answer_relevancy"] == pytest.approx(0.8)


def test_default_form_empty_answer_scores_zero_without_a_call():
    judge = FakeJudge()
    row = run([sample("e", answer=" ")], judge, "answer_relevancy")["samples"][0]
    assert row["scores"]["answer_relevancy"] == 0.0 and judge.requests == []


def test_the_ragas_form_runs_only_when_named_and_shares_the_evasiveness_call():
    from offline_eval.config import EvalConfig

    assert "answer_relevancy" in EvalConfig().metrics
    assert "answer_relevancy_ragas" not in EvalConfig().metrics
    judge = scripted()
    report = run([sample("s")], judge, "answer_relevancy", "answer_relevancy_ragas")
    kinds = [next(iter(r.schema["properties"])) for r in judge.requests]
    assert sorted(kinds) == ["addresses", "answer_kind", "questions"]  # evasiveness asked once for both
    assert set(report["samples"][0]["scores"]) >= {"answer_relevancy", "answer_relevancy_ragas"}


def test_addresses_task_in_both_languages_defuses_the_texts():
    block = question_answer_block("q</question>", "a</answer>", "en")
    assert block.count("</question>") == 1 and block.count("</answer>") == 1
    assert question_answer_block("长江有多长？", "约6300公里。", "zh").startswith("问题：")
    task = AddressesQuestion()
    assert task.schema["required"] == ["addresses"]
    # The instruction is English in both languages (measured: the 1.5B judge miscalibrates it in Chinese).
    assert task.text("zh") == task.text("en") and "whether or not" in task.text("en")


def test_review_truth_is_one_only_when_the_answer_addresses_the_question_and_is_not_evasive():
    assert AnswerRelevancy.truth_scores({}, [True, True]) == {"answer_relevancy": 1.0}
    assert AnswerRelevancy.truth_scores({}, [True, False]) == {"answer_relevancy": 0.0}
    assert AnswerRelevancy.truth_scores({}, [False, True]) == {"answer_relevancy": 0.0}
    assert AnswerRelevancy.truth_scores({}, [True]) is None


def test_questions_like_the_asked_one_score_high_with_findings():
    def answer(request):
        props = request.schema["properties"]
        if "questions" in props:
            return {"questions": [QUESTION, QUESTION, "What colour is the sky?"]}
        return {"answer_kind": "informative"}, {"answer_kind": {"evasive": 0.1, "informative": 0.9}}

    report = run([sample("s")], FakeJudge(answer), "answer_relevancy_ragas")
    row = report["samples"][0]
    details = row["details"]["answer_relevancy_ragas"]
    # Repeats are dropped: two distinct questions, one identical to the asked one.
    assert [q["text"] for q in details["generated_questions"]] == [QUESTION, "What colour is the sky?"]
    assert details["generated_questions"][0]["similarity"] == pytest.approx(1.0)
    assert row["scores"]["answer_relevancy_ragas"] == pytest.approx(0.5, abs=1e-6)  # mean of 1 and 0
    assert details["noncommittal"] is False
    assert details["findings"][0] == {"label": "answer", "text": "the answer gives information",
                                      "verdict": "informative", "ok": True, "probability": 0.1}
    assert details["findings"][1] == {"label": "generated question", "text": QUESTION, "verdict": "similarity 1.000",
                                      "ok": None}
    assert report["run"]["embedders"]["en"]["name"] == "hashing-embedder"


def test_evasive_answer_scores_zero_whatever_the_verdict_scoring():
    for mode in ("hard", "probability"):
        row = run([sample("s")], scripted(answer_kind="evasive", p_evasive=0.75), "answer_relevancy_ragas",
                  verdict_scoring=mode)["samples"][0]
        assert row["scores"]["answer_relevancy_ragas"] == 0.0
        assert row["details"]["answer_relevancy_ragas"]["summary"] == "evasive answer: scored 0"
        assert row["details"]["answer_relevancy_ragas"]["findings"][0]["probability"] == 0.75
    # an informative answer is not discounted by its P(evasive)
    informative = run([sample("s")], scripted(p_evasive=0.3), "answer_relevancy_ragas")["samples"][0]
    hard = run([sample("s")], scripted(p_evasive=0.3), "answer_relevancy_ragas", verdict_scoring="hard")["samples"][0]
    assert informative["scores"] == hard["scores"] and informative["scores"]["answer_relevancy_ragas"] > 0.0


def test_empty_answer_scores_zero_without_a_judge_call():
    judge = FakeJudge()
    metric = AnswerRelevancyRagas()
    empty = sample("empty", answer="  ")
    evidence = metric.collect(SampleContext(empty, "en", judge, metric.name))
    assert judge.requests == []

    def no_embedding(texts, langs):
        raise AssertionError("nothing to embed for an empty answer")

    (outcome,) = metric.score([empty], [evidence], no_embedding)
    assert outcome.scores == {"answer_relevancy_ragas": 0.0}
    assert outcome.not_computable is None
    assert outcome.details == {"reason": "empty answer"}


def test_empty_answer_scores_zero_next_to_scored_answers():
    metric = AnswerRelevancyRagas()
    judge = FakeJudge()
    samples = [sample("good"), sample("empty", answer="")]
    evidence = [metric.collect(SampleContext(s, "en", judge, metric.name)) for s in samples]

    def same_vector(texts, langs):
        return np.ones((len(texts), 2)) / np.sqrt(2)

    good, empty = metric.score(samples, evidence, same_vector)
    assert good.scores["answer_relevancy_ragas"] == pytest.approx(1.0)
    assert empty.scores["answer_relevancy_ragas"] == 0.0


def test_no_generated_question_is_not_computable():
    report = run([sample("s")], FakeJudge(lambda r: {"questions": [" "] * r.schema["properties"]["questions"]["minItems"]}
                                          if "questions" in r.schema["properties"] else {"answer_kind": "informative"}),
                 "answer_relevancy_ragas")
    assert report["samples"][0]["not_computable"]["answer_relevancy_ragas"] == "the judge generated no question"


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
