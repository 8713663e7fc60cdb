"""Testing helpers: a quality-gate assertion, a scripted judge and a hashing embedder.

``assert_quality`` turns a report into an assertion whose failure message lists what failed::

    from offline_eval import evaluate
    from offline_eval.testing import assert_quality

    def test_rag_quality():
        report = evaluate("tests/rag_samples.jsonl", thresholds={"faithfulness": 0.9})
        assert_quality(report)

``FakeJudge`` and ``HashingEmbedder`` stand in for the models, so a metric (your own too) can be
tested in milliseconds with scripted verdicts::

    from offline_eval.testing import FakeJudge, hashing_embedders
    judge = FakeJudge(lambda request: {key: "no" for key in request.schema["properties"]})
    report = evaluate(records, judge_instance=judge, embedders=hashing_embedders())
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from offline_eval.embed import EmbedderSet
from offline_eval.gate import describe_failure
from offline_eval.judge.base import Completion, JudgeError, JudgeRequest, Prepared, Probabilities
from offline_eval.judge.judge import Judge
from offline_eval.report import view

# ------------------------------------------------------------------------------------- quality gate


class QualityGateError(AssertionError):
    """The quality gate failed; the message lists each failed check with its explanation."""


def assert_quality(report: Any, *, worst: int = 3) -> None:
    """Raise QualityGateError when the report's gate failed, naming the failed metrics and the worst samples.

    ``report`` is an ``offline_eval.Report`` or the report.json dict.
    """
    data = getattr(report, "data", report)
    if view.passed(data) is not False:
        return
    lines = ["RAG quality gate failed:"]
    for check in view.failed_and_skipped_checks(data)[0]:
        metric = str(check["metric"])
        where = f" [{check['category']}]" if check.get("category") else ""
        lines.append(f"  {metric}{where}: {describe_failure(check)}")
        for sample in view.worst_samples(data, metric, worst, category=check.get("category")):
            lines.append(f"      {sample['sample_id']}: {view.score_of(sample, metric):.3f}")
    raise QualityGateError("\n".join(lines))


# ------------------------------------------------------------------------------------- fake judge

# A letter run is one token; every digit, punctuation mark and CJK character is one token.
_TOKEN = re.compile(r"[A-Za-z]+|\S")

# What a script returns for a request: the value, or the value and its verdict probabilities.
Answer = Callable[[JudgeRequest], "dict[str, Any] | tuple[dict[str, Any], Probabilities]"]


def default_answer(request: JudgeRequest) -> dict[str, Any]:
    """A schema-valid answer: no claims, every verdict "yes", the questions asked, an informative answer."""
    props = request.schema.get("properties", {})
    if "claims" in props:
        return {"claims": []}
    if "questions" in props:
        return {"questions": [f"question {i}?" for i in range(props["questions"]["minItems"])]}
    if "answer_kind" in props:
        return {"answer_kind": "informative"}
    return {key: "yes" for key in props}


class ScriptedBackend:
    """A judge backend that answers from a script instead of a model.

    Tokens are counted with a regex that, like a real tokenizer, is denser on digits, punctuation and
    Chinese than on English words, so code that estimates tokens from characters is caught overflowing.
    Its window is strict: a prompt plus its output budget (``max_tokens``) that exceeds ``n_ctx`` is a
    JudgeError, the contract ``room_for_shared`` states. Every request is kept in ``requests``.
    """

    name = "fake-judge"
    sha256 = "0" * 64
    identity = sha256

    def __init__(self, answer: Answer = default_answer, *, n_ctx: int = 4096):
        self.answer = answer
        self.n_ctx = n_ctx
        self.requests: list[JudgeRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "n_ctx": self.n_ctx, "backend": "fake"}

    def count_tokens(self, text: str) -> int:
        return len(_TOKEN.findall(text))

    def prompt_tokens(self, request: JudgeRequest) -> int:
        return sum(self.count_tokens(t) for t in (request.system, request.shared, request.task))

    def room_for_shared(self, request: JudgeRequest) -> int:
        return self.n_ctx - self.prompt_tokens(replace(request, shared="")) - request.max_tokens

    def prepare(self, request: JudgeRequest) -> Prepared:
        return Prepared("\n".join((request.system, request.shared, request.task)), {"backend": "scripted"},
                        self.prompt_tokens(request))

    def complete(self, prepared: Prepared, request: JudgeRequest, max_tokens: int) -> Completion:
        self.requests.append(request)
        if prepared.n_prompt + request.max_tokens > self.n_ctx:
            raise JudgeError(f"prompt of {prepared.n_prompt} tokens + {request.max_tokens} to generate overflow "
                             f"{self.n_ctx}")
        scripted = self.answer(request)
        value, probabilities = scripted if isinstance(scripted, tuple) else (scripted, {})
        text = json.dumps(value, ensure_ascii=False)
        return Completion(text, "stop", self.count_tokens(text), prepared.n_prompt, probabilities)


class FakeJudge(Judge):
    """A ``Judge`` over a ``ScriptedBackend``: the real cache, retry and schema check, scripted answers.

    ``answer(request)`` returns the value (a dict matching ``request.schema``), or ``(value,
    probabilities)`` to script verdict probabilities as the llama.cpp judge reports them.
    """

    def __init__(self, answer: Answer = default_answer, *, n_ctx: int = 4096, cache: Any = None):
        super().__init__(ScriptedBackend(answer, n_ctx=n_ctx), cache)

    @property
    def requests(self) -> list[JudgeRequest]:
        return self.backend.requests

    def prompt_tokens(self, request: JudgeRequest) -> int:
        return self.backend.prompt_tokens(request)


# ------------------------------------------------------------------------------------- fake embedder


class HashingEmbedder:
    """Texts to unit vectors by hashing their words (feature hashing): no model, same vectors every run.

    Texts that share words get a high cosine and texts that share none about 0, which is all a test of
    answer relevancy's plumbing needs. Chinese characters count as words.
    """

    name = "hashing-embedder"
    sha256 = None

    def __init__(self, dim: int = 256):
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.sha256(word.encode("utf-8")).digest()
                vectors[row, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)


def hashing_embedders(dim: int = 256) -> EmbedderSet:
    """An ``EmbedderSet`` that embeds every language with one ``HashingEmbedder``."""
    return EmbedderSet(default=HashingEmbedder(dim))
