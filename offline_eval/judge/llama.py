"""The llama.cpp judge: a GGUF model, decoding under a grammar built from each call's JSON schema.

Determinism. llama.cpp's automatic prefix reuse made a greedy output depend on what the previous call
left in the KV cache. Here every call is computed the same way whatever came before: the prompt is
split at the end of the shared text; the shared part is evaluated from an empty state and saved; each
call restores that saved state and evaluates only its own suffix. The calls of one sample share the
context this way (it is evaluated once), and two processes making the same calls get the same bytes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_eval.judge.base import JudgeError, JudgeRequest, JudgeResult, validate_output
from offline_eval.judge.cache import JudgeCache, cache_key

_SENTINEL = "\u2063OFFLINE_EVAL_SPLIT\u2063"
# A truncated output is retried with budgets this many times larger, then given up on.
_RETRY_FACTORS = (1, 2, 4)
_SAVED_PREFIXES = 4


@dataclass(frozen=True)
class JudgeOptions:
    n_ctx: int = 8192
    n_threads: int | None = None
    n_gpu_layers: int = 0
    seed: int = 0
    n_batch: int = 512
    verbose: bool = False


@contextlib.contextmanager
def _quiet_stderr(enabled: bool):
    """llama.cpp writes its load log straight to fd 2; keep it off the user's terminal unless verbose."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


class LlamaJudge:
    """A judge over any GGUF file, loaded once per run."""

    def __init__(
        self,
        model_path: Path,
        *,
        name: str,
        sha256: str,
        options: JudgeOptions = JudgeOptions(),
        cache: JudgeCache | None = None,
    ):
        from llama_cpp import Llama

        self.name = name
        self.sha256 = sha256
        self.path = Path(model_path)
        self.options = options
        self.cache = cache
        with _quiet_stderr(not options.verbose):
            self._llm = Llama(
                model_path=str(model_path),
                n_ctx=options.n_ctx,
                n_threads=options.n_threads or os.cpu_count() or 1,
                n_threads_batch=options.n_threads or os.cpu_count() or 1,
                n_gpu_layers=options.n_gpu_layers,
                n_batch=options.n_batch,
                seed=options.seed,
                verbose=options.verbose,
            )
        self.n_ctx = self._llm.n_ctx()
        self._template = self._llm.metadata.get("tokenizer.chat_template")
        self._formatter = self._make_formatter()
        self._grammars: dict[str, Any] = {}
        # Saved states of recently used prompt heads (the system part alone, a sample's context...),
        # so a sample's calls share them in any order. Each state is made the same way: from empty.
        self._saved_prefixes: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    # ------------------------------------------------------------ prompt rendering

    def _make_formatter(self):
        if not self._template:
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        vocab = self._llm
        eos = vocab.detokenize([vocab.token_eos()]).decode("utf-8", errors="ignore") if vocab.token_eos() >= 0 else ""
        bos = vocab.detokenize([vocab.token_bos()]).decode("utf-8", errors="ignore") if vocab.token_bos() >= 0 else ""
        return Jinja2ChatFormatter(template=self._template, eos_token=eos, bos_token=bos, add_generation_prompt=True)

    def _render(self, system: str, user: str) -> str:
        if self._formatter is None:
            # A model without a chat template gets a plain completion prompt.
            return f"{system}\n\n{user}\n\nAnswer (JSON):\n"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self._formatter(messages=messages).prompt

    def render_split(self, request: JudgeRequest) -> tuple[str, str]:
        """The full prompt text, cut where the shared part ends (the cut is identical for every call)."""
        marked = self._render(request.system, request.shared + _SENTINEL + request.task)
        head, _, tail = marked.partition(_SENTINEL)
        return head, tail

    def _tokens(self, head: str, tail: str) -> tuple[list[int], list[int]]:
        head_tokens = self._llm.tokenize(head.encode("utf-8"), add_bos=True, special=True)
        tail_tokens = self._llm.tokenize(tail.encode("utf-8"), add_bos=False, special=True)
        return head_tokens, tail_tokens

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def room_for_shared(self, request: JudgeRequest) -> int:
        head, tail = self.render_split(JudgeRequest(request.system, "", request.task, request.schema,
                                                    request.max_tokens, request.metric))
        used = sum(len(t) for t in self._tokens(head, tail))
        return self.n_ctx - used - request.max_tokens

    # ------------------------------------------------------------ decoding

    def _grammar(self, schema_json: str):
        if schema_json not in self._grammars:
            from llama_cpp import LlamaGrammar

            with _quiet_stderr(not self.options.verbose):
                self._grammars[schema_json] = LlamaGrammar.from_json_schema(schema_json, verbose=False)
        return self._grammars[schema_json]

    def _restore_prefix(self, head_tokens: list[int]) -> int:
        """Load the saved state for this exact prefix, making it first if needed. Returns tokens evaluated."""
        key = tuple(head_tokens)
        evaluated = 0
        if key not in self._saved_prefixes:
            self._llm.reset()
            self._llm.eval(head_tokens)
            self._saved_prefixes[key] = self._llm.save_state()
            evaluated = len(head_tokens)
            while len(self._saved_prefixes) > _SAVED_PREFIXES:
                self._saved_prefixes.popitem(last=False)
        self._saved_prefixes.move_to_end(key)
        self._llm.load_state(self._saved_prefixes[key])
        return evaluated

    def _generate(self, head_tokens: list[int], tail_tokens: list[int], schema_json: str, max_tokens: int):
        evaluated = self._restore_prefix(head_tokens)
        out = self._llm.create_completion(
            prompt=head_tokens + tail_tokens,
            max_tokens=max_tokens,
            temperature=0.0,
            top_k=1,
            top_p=1.0,
            min_p=0.0,
            repeat_penalty=1.0,
            seed=self.options.seed,
            grammar=self._grammar(schema_json),
        )
        choice = out["choices"][0]
        return choice["text"], choice.get("finish_reason"), out["usage"], evaluated + len(tail_tokens)

    def judge(self, request: JudgeRequest) -> JudgeResult:
        head, tail = self.render_split(request)
        head_tokens, tail_tokens = self._tokens(head, tail)
        n_prompt = len(head_tokens) + len(tail_tokens)
        room = self.n_ctx - n_prompt
        if room <= 0:
            raise JudgeError(f"prompt of {n_prompt} tokens does not fit the judge's window of {self.n_ctx}")
        schema_json = request.schema_json()
        params = {"temperature": 0, "seed": self.options.seed, "split": len(head_tokens),
                  "max_tokens": request.max_tokens, "n_batch": self.options.n_batch}
        key = cache_key(self.sha256, head + tail, schema_json, params)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            output, prompt_tokens, completion_tokens, seconds = hit
            return JudgeResult(validate_output(output, request.schema), prompt_tokens, completion_tokens,
                               seconds, 0, cached=True, raw=output)

        started = time.perf_counter()
        evaluated_total = 0
        completion_total = 0
        for factor in _RETRY_FACTORS:
            budget = min(request.max_tokens * factor, room)
            text, finish, usage, evaluated = self._generate(head_tokens, tail_tokens, schema_json, budget)
            evaluated_total += evaluated
            completion_total += int(usage["completion_tokens"])
            if finish != "length":
                break
            if budget >= room:
                break
        else:
            finish = "length"
        seconds = time.perf_counter() - started
        if finish == "length":
            raise JudgeError(f"judge output was cut at {budget} tokens even after retries (schema too loose?)")
        value = validate_output(text, request.schema)
        if self.cache is not None:
            self.cache.put(key, model_sha256=self.sha256, prompt=head + tail, schema=schema_json, params=params,
                           output=text, prompt_tokens=n_prompt, completion_tokens=completion_total, seconds=seconds)
        return JudgeResult(value, n_prompt, completion_total, seconds, evaluated_total, cached=False, raw=text)
