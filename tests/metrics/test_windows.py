"""Context windows and cut chunks fit the judge's window by its token count, not a character ratio.

Model-free: FakeJudge counts digits, punctuation and CJK characters as a token each and a run of
letters as one, so text whose density varies along its length is where a ratio goes wrong.
"""

from __future__ import annotations

import pytest

from offline_eval import prompts
from offline_eval.judge import JudgeError, JudgeRequest
from offline_eval.metrics import SampleContext
from offline_eval.metrics.claim_coverage import VerifyClaims, verify_claims
from offline_eval.metrics.context_precision import ContextPrecision
from offline_eval.metrics.windows import context_windows, longest_fitting_prefix
from offline_eval.sample import Sample
from offline_eval.testing import FakeJudge

# Dense head (a token per character), sparse tail (a token per five characters).
DENSE_THEN_SPARSE = "1234567890" * 150 + " word" * 1500
QUESTION = "When does the museum close on Mondays?"
ANSWER = "It closes at 18:00."


def _ctx(judge: FakeJudge, contexts: tuple[str, ...]) -> SampleContext:
    sample = Sample("s", QUESTION, ANSWER, contexts, reference_answer=ANSWER)
    return SampleContext(sample=sample, lang="en", judge=judge, metric="faithfulness")


def _probe(n_claims: int = 1) -> JudgeRequest:
    return VerifyClaims(("x",) * n_claims).request("en", metric="faithfulness")


def test_many_short_chunks_pack_into_windows_that_fit():
    judge = FakeJudge(n_ctx=1024)
    contexts = tuple(f"Room {i}: open 9-17, tel. 555-01{i:02d}, floor {i % 7}." for i in range(300))
    ctx = _ctx(judge, contexts)
    room = judge.room_for_shared(_probe())
    windows = context_windows(ctx, _probe())
    assert len(windows) > 1
    assert [rank for w in windows for rank, _ in w.chunks] == list(range(1, 301))
    for window in windows:
        assert judge.count_tokens(window.block("en")) <= room
        assert window.truncated == []
    # Greedy: each window is full (its next chunk would not have fitted).
    for window, after in zip(windows, windows[1:]):
        grown = prompts.context_block(window.chunks + after.chunks[:1], "en")
        assert judge.count_tokens(grown) > room
    verdicts, truncated = verify_claims(ctx, ["The museum closes at 18:00."])
    assert [v.yes for v in verdicts] == [True] and truncated == []
    assert len(judge.requests) == len(windows)  # every call fitted (FakeJudge raises otherwise)


def test_a_chunk_larger_than_the_window_is_cut_to_fit_by_tokens():
    judge = FakeJudge(n_ctx=2048)
    ctx = _ctx(judge, ("Short chunk first.", DENSE_THEN_SPARSE, "Closing time: 18:00 on Mondays."))
    windows = context_windows(ctx, _probe())
    room = judge.room_for_shared(_probe())
    cut = [text for w in windows for rank, text in w.chunks if rank == 2]
    assert cut and DENSE_THEN_SPARSE.startswith(cut[0]) and len(cut[0]) < len(DENSE_THEN_SPARSE)
    for window in windows:
        assert judge.count_tokens(window.block("en")) <= room
    assert [w.truncated for w in windows if 2 in dict(w.chunks)] == [[2]]  # the cut chunk's own window
    # As much as fits is kept: one more character would not fit on its own.
    longer = prompts.context_block([(2, DENSE_THEN_SPARSE[: len(cut[0]) + 1])], "en")
    assert judge.count_tokens(longer) > room
    _, truncated = verify_claims(ctx, ["The museum closes at 18:00."])
    assert truncated == [2]


def test_context_precision_cuts_an_oversized_chunk_to_fit():
    judge = FakeJudge(n_ctx=2048)
    ctx = _ctx(judge, (DENSE_THEN_SPARSE, "Closing time: 18:00 on Mondays."))
    metric = ContextPrecision()
    evidence = metric.collect(ctx)
    assert evidence.not_computable is None, evidence.not_computable
    assert evidence.data["truncated_chunks"] == [1]
    assert len(judge.requests) == 2
    for request in judge.requests:
        assert judge.prompt_tokens(request) + request.max_tokens <= judge.n_ctx


def test_a_window_with_no_room_for_any_context_is_a_judge_error():
    probe = _probe()
    judge = FakeJudge()
    judge.backend.n_ctx = judge.n_ctx - judge.room_for_shared(probe) + 10  # 10 tokens: not even the block's frame
    with pytest.raises(JudgeError, match="leaves no room for any context"):
        context_windows(_ctx(judge, (DENSE_THEN_SPARSE,)), probe)


def test_longest_fitting_prefix():
    assert longest_fitting_prefix("abcdef", lambda t: len(t) <= 4) == "abcd"
    assert longest_fitting_prefix("abcdef", lambda t: True) == "abcdef"
    assert longest_fitting_prefix("abcdef", lambda t: not t) == ""
