"""The Judge around any backend, model-free: cache, retry of a cut output, schema check, cost."""

from __future__ import annotations

import pytest

from offline_eval.judge import Completion, Judge, JudgeError, JudgeRequest, Usage
from offline_eval.judge.cache import JudgeCache
from offline_eval.testing import FakeJudge, ScriptedBackend

SCHEMA = {"type": "object", "properties": {"claim_1": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["claim_1"], "additionalProperties": False}
REQUEST = JudgeRequest("system", "shared context", "task", SCHEMA, 10, "faithfulness")
PROBABILITIES = {"claim_1": {"yes": 0.75, "no": 0.25}}


def test_a_call_is_cached_with_its_probabilities_and_read_back(tmp_path):
    judge = FakeJudge(lambda r: ({"claim_1": "yes"}, PROBABILITIES), cache=JudgeCache(tmp_path / "c.sqlite"))
    first = judge.judge(REQUEST)
    assert (first.value, first.cached, first.probabilities) == ({"claim_1": "yes"}, False, PROBABILITIES)
    assert first.prompt_tokens == judge.prompt_tokens(REQUEST) and first.evaluated_tokens == first.prompt_tokens
    again = judge.judge(REQUEST)
    assert (again.value, again.cached, again.probabilities, again.evaluated_tokens) == (
        {"claim_1": "yes"}, True, PROBABILITIES, 0)
    assert again.prompt_tokens == first.prompt_tokens and len(judge.requests) == 1  # the backend was asked once
    other = JudgeRequest("system", "shared context", "another task", SCHEMA, 10, "faithfulness")
    assert not judge.judge(other).cached


def test_usage_counts_calls_cache_hits_and_tokens(tmp_path):
    judge = FakeJudge(lambda r: {"claim_1": "no"}, cache=JudgeCache(tmp_path / "c.sqlite"))
    usage, total = Usage(), Usage()
    for _ in range(2):
        usage.record(judge.judge(REQUEST))
    assert (usage.judge_calls, usage.cache_hits) == (2, 1)
    assert usage.prompt_tokens == 2 * judge.prompt_tokens(REQUEST)
    total.add(usage)
    total.add(usage)
    assert (total.judge_calls, total.cache_hits) == (4, 2)


def test_an_output_that_breaks_its_schema_is_a_judge_error():
    judge = FakeJudge(lambda r: {"claim_1": "maybe"})
    with pytest.raises(JudgeError, match="does not match the schema"):
        judge.judge(REQUEST)


class _Verbose(ScriptedBackend):
    """Needs ``needed`` output tokens: any smaller budget is cut ("length")."""

    def __init__(self, needed: int, **kwargs):
        super().__init__(**kwargs)
        self.needed = needed
        self.budgets: list[int] = []

    def complete(self, prepared, request, max_tokens):
        self.budgets.append(max_tokens)
        if max_tokens < self.needed:
            return Completion('{"claim_1": "ye', "length", max_tokens, prepared.n_prompt)
        return Completion('{"claim_1": "yes"}', "stop", 5, prepared.n_prompt)


def test_a_cut_output_is_retried_with_larger_budgets_then_given_up():
    backend = _Verbose(needed=35)
    result = Judge(backend).judge(REQUEST)
    assert backend.budgets == [10, 20, 40] and result.value == {"claim_1": "yes"}
    assert result.completion_tokens == 10 + 20 + 5  # every attempt is paid for
    never = _Verbose(needed=1000)
    with pytest.raises(JudgeError, match="cut at 40 tokens even after retries"):
        Judge(never).judge(REQUEST)


def test_the_budget_never_passes_the_window_and_a_prompt_that_does_not_fit_is_refused():
    backend = _Verbose(needed=1000, n_ctx=0)
    backend.n_ctx = backend.prompt_tokens(REQUEST) + 15
    with pytest.raises(JudgeError, match="cut at 15 tokens"):
        Judge(backend).judge(REQUEST)
    assert backend.budgets == [10, 15]  # the second budget is the room left, and there is no third
    backend.n_ctx = backend.prompt_tokens(REQUEST)
    with pytest.raises(JudgeError, match="does not fit the judge's window"):
        Judge(backend).judge(REQUEST)


def test_the_judge_speaks_for_its_backend():
    judge = FakeJudge(n_ctx=1234)
    assert (judge.name, judge.n_ctx, judge.sha256) == ("fake-judge", 1234, "0" * 64)
    assert judge.describe() == {"name": "fake-judge", "sha256": "0" * 64, "n_ctx": 1234, "backend": "fake"}
    assert judge.count_tokens("Room 12, floor 3.") == 7  # Room 1 2 , floor 3 .
