"""A scripted stand-in for the llama.cpp judge, for tests that must not load a model.

``FakeJudge`` implements the Judge protocol (offline_eval/judge/base.py). Tokens are counted with a
regex that, like a real tokenizer, is denser on digits, punctuation and Chinese than on English words,
so code that estimates tokens from characters is caught overflowing. Its window is strict: a prompt
plus its output budget that exceeds ``n_ctx`` is a JudgeError (the contract ``room_for_shared`` states).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from offline_eval.judge import JudgeError, JudgeRequest
from offline_eval.judge.base import JudgeResult, validate_output

# A letter run is one token; every digit, punctuation mark and CJK character is one token.
_TOKEN = re.compile(r"[A-Za-z]+|\S")


def default_answer(request: JudgeRequest) -> Any:
    """A schema-valid answer: no claims, every verdict "yes", the questions asked, an informative answer."""
    props = request.schema.get("properties", {})
    if "claims" in props:
        return {"claims": []}
    if "questions" in props:
        return {"questions": [f"question {i}?" for i in range(props["questions"]["minItems"])]}
    if "answer_kind" in props:
        return {"answer_kind": "informative"}
    return {key: "yes" for key in props}


class FakeJudge:
    name = "fake-judge"
    sha256 = "0" * 64

    def __init__(self, answer: Callable[[JudgeRequest], Any] = default_answer, *, n_ctx: int = 4096):
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
        bare = JudgeRequest(request.system, "", request.task, request.schema, request.max_tokens, request.metric)
        return self.n_ctx - self.prompt_tokens(bare) - request.max_tokens

    def judge(self, request: JudgeRequest) -> JudgeResult:
        self.requests.append(request)
        used = self.prompt_tokens(request)
        if used + request.max_tokens > self.n_ctx:
            raise JudgeError(f"prompt of {used} tokens + {request.max_tokens} to generate overflow {self.n_ctx}")
        value = self.answer(request)
        validate_output(json.dumps(value), request.schema)
        return JudgeResult(value, used, 1)
