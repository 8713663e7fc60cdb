"""The judge the metrics use: any backend, with the cache, the retry, the schema check and the cost.

Everything here is the same whatever computes the text (llama.cpp, a server, a script), so it is
written once: a call is looked up in the cache by what decides its output bytes, made with its token
budget (and again with a larger one if the output was cut), checked against its schema, stored, and
returned with what it cost.
"""

from __future__ import annotations

import time
from typing import Any

from offline_eval.judge.base import Backend, JudgeError, JudgeRequest, JudgeResult, validate_output
from offline_eval.judge.cache import JudgeCache, cache_key

# A truncated output is retried with budgets this many times larger, then given up on.
RETRY_FACTORS = (1, 2, 4)


class Judge:
    """A backend behind the one interface metrics use (``judge``, ``count_tokens``, ``room_for_shared``)."""

    def __init__(self, backend: Backend, cache: JudgeCache | None = None):
        self.backend = backend
        self.cache = cache

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def sha256(self) -> str | None:
        return self.backend.sha256

    @property
    def n_ctx(self) -> int:
        return self.backend.n_ctx

    def describe(self) -> dict[str, Any]:
        return self.backend.describe()

    def count_tokens(self, text: str) -> int:
        return self.backend.count_tokens(text)

    def room_for_shared(self, request: JudgeRequest) -> int:
        return self.backend.room_for_shared(request)

    def judge(self, request: JudgeRequest) -> JudgeResult:
        prepared = self.backend.prepare(request)
        room = self.n_ctx - prepared.n_prompt
        if room <= 0:
            raise JudgeError(f"prompt of {prepared.n_prompt} tokens does not fit the judge's window of {self.n_ctx}")
        schema_json = request.schema_json()
        key = cache_key(self.backend.identity, prepared.prompt, schema_json, prepared.params)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            output, prompt_tokens, completion_tokens, seconds, probabilities = hit
            return JudgeResult(validate_output(output, request.schema), prompt_tokens, completion_tokens,
                               seconds, 0, cached=True, raw=output, probabilities=probabilities)

        started = time.perf_counter()
        evaluated = completion_tokens = 0
        for factor in RETRY_FACTORS:
            budget = min(request.max_tokens * factor, room)
            completion = self.backend.complete(prepared, request, budget)
            evaluated += completion.evaluated_tokens
            completion_tokens += completion.completion_tokens
            if completion.finish != "length" or budget >= room:
                break
        seconds = time.perf_counter() - started
        if completion.finish == "length":
            raise JudgeError(f"judge output was cut at {budget} tokens even after retries (schema too loose?)")
        value = validate_output(completion.text, request.schema)
        prompt_tokens = prepared.n_prompt if completion.prompt_tokens is None else completion.prompt_tokens
        if self.cache is not None:
            self.cache.put(key, model_sha256=self.backend.identity, prompt=prepared.prompt, schema=schema_json,
                           params=prepared.params, output=completion.text, prompt_tokens=prompt_tokens,
                           completion_tokens=completion_tokens, seconds=seconds,
                           probabilities=completion.probabilities)
        return JudgeResult(value, prompt_tokens, completion_tokens, seconds, evaluated, cached=False,
                           raw=completion.text, probabilities=completion.probabilities)
