"""The llama.cpp judge: a GGUF model, decoding under a grammar built from each call's JSON schema.

Determinism. llama.cpp's automatic prefix reuse made a greedy output depend on what the previous call
left in the KV cache. Here every call is computed the same way whatever came before. The rendered
prompt is cut in three: the *stem* (chat template and system prompt, identical for every call in one
language), the request's *shared* text (a sample's context, its answer...) and the call's own *tail*.
The stem is evaluated from an empty state and saved; a head (stem + shared) is made by restoring the
stem and evaluating the shared text, then saved; each call restores its head and evaluates its tail.
So the system prompt is evaluated once per run, a sample's context once per sample, and two processes
making the same calls get the same bytes, because each state is always made by the same steps.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from offline_eval.judge.base import Completion, JudgeError, JudgeRequest, JudgeResult, Prepared
from offline_eval.judge.decode import Generation, GrammarDecoder, choice_fields
from offline_eval.judge.judge import Judge
from offline_eval.judge.llama_build import build_identity

_STEM_END = "\u2063OFFLINE_EVAL_STEM\u2063"
_SHARED_END = "\u2063OFFLINE_EVAL_SPLIT\u2063"
_USER_END = "\u2063OFFLINE_EVAL_USER_END\u2063"
_SAVED_PREFIXES = 4


@dataclass(frozen=True)
class SplitPrompt:
    """A rendered prompt cut where the system stem ends, where the shared text ends, and where the user
    message ends (``closing`` is the chat template's end of turn and the assistant's cue)."""

    stem: str
    shared: str
    task: str
    closing: str

    @property
    def tail(self) -> str:
        return self.task + self.closing

    @property
    def text(self) -> str:
        return self.stem + self.shared + self.tail


@dataclass(frozen=True)
class PromptTokens:
    stem: list[int]
    shared: list[int]
    tail: list[int]

    @property
    def head(self) -> list[int]:
        return self.stem + self.shared

    def __len__(self) -> int:
        return len(self.stem) + len(self.shared) + len(self.tail)


@dataclass(frozen=True)
class _SavedState:
    """llama.cpp's context state (the KV cache of a prompt head) and the tokens it holds."""

    data: Any  # a ctypes byte array, passed back to llama.cpp as is
    size: int
    input_ids: Any
    n_tokens: int


class RecentHeads:
    """The saved states of the most recently used prompt heads, at most ``size`` (a sample's calls share
    a few heads: its context, its answer...). ``--dry-run`` keeps the same account without the states,
    so it counts the prompt tokens a run evaluates."""

    def __init__(self, size: int = _SAVED_PREFIXES):
        self.size = size
        self._states: OrderedDict[Any, Any] = OrderedDict()

    def __contains__(self, key: Any) -> bool:
        return key in self._states

    def put(self, key: Any, state: Any) -> None:
        self._states[key] = state
        while len(self._states) > self.size:
            self._states.popitem(last=False)

    def use(self, key: Any) -> Any:
        """The state saved for ``key``, now the most recently used."""
        self._states.move_to_end(key)
        return self._states[key]


@dataclass(frozen=True)
class JudgeOptions:
    n_ctx: int = 8192
    n_threads: int | None = None
    n_gpu_layers: int = 0
    seed: int = 0
    n_batch: int = 512
    verbose: bool = False
    lazy_grammar: bool = True  # same tokens as masking every step (tested), less time
    # Verdict outputs: the fixed text after each decision drafted and checked in one batch (decode.py):
    # a 4-claim call in 7 forward passes instead of 34, but 2.30 s against 2.27 s on a 2-core AMD EPYC,
    # where a batch of 2-8 tokens costs about as much as as many single ones; and a batch's rounding
    # moves P(yes) by up to 0.07. Off until a machine where passes are the cost (a GPU) measures it.
    draft: bool = False


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
    """The llama.cpp backend: any GGUF file, loaded once per run (``offline_eval.judge.Judge`` wraps it)."""

    def __init__(
        self,
        model_path: Path,
        *,
        name: str,
        sha256: str,
        options: JudgeOptions = JudgeOptions(),
    ):
        from llama_cpp import Llama

        self.name = name
        self.sha256 = sha256
        self.identity = sha256  # the cache key names the model by its file's hash
        self.path = Path(model_path)
        self.options = options
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
        self.build = build_identity()
        self._decoder = GrammarDecoder(self._llm, lazy=options.lazy_grammar)
        self._template = self._llm.metadata.get("tokenizer.chat_template")
        self._formatter = self._make_formatter()
        self._grammars: dict[str, Any] = {}
        # Saved states: every stem (one per language and system prompt, kept for the run) and the
        # recently used heads (a sample's context...), so a sample's calls share them in any order.
        self._saved_stems: dict[tuple[int, ...], Any] = {}
        self._saved_prefixes = RecentHeads()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "n_ctx": self.n_ctx, "backend": "llama.cpp",
                "build": self.build, "n_gpu_layers": self.options.n_gpu_layers}

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

    def render_split(self, request: JudgeRequest) -> SplitPrompt:
        """The full prompt text, cut where the stem and the shared part end (the same cuts every call)."""
        marked = self._render(request.system, _STEM_END + request.shared + _SHARED_END + request.task + _USER_END)
        stem, _, rest = marked.partition(_STEM_END)
        shared, _, rest = rest.partition(_SHARED_END)
        task, _, closing = rest.partition(_USER_END)
        return SplitPrompt(stem, shared, task, closing)

    def _tokens(self, prompt: SplitPrompt) -> PromptTokens:
        """Tokens of each part. The user message (shared text and task, which hold user data) is
        tokenised as plain text: an answer containing ``<|im_end|>`` cannot close its own turn. Only
        the template's own text (stem, closing) may hold control tokens."""
        def tokenize(text: str, *, bos: bool = False, special: bool = False) -> list[int]:
            return self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=special) if text or bos else []

        return PromptTokens(tokenize(prompt.stem, bos=True, special=True), tokenize(prompt.shared),
                            tokenize(prompt.task) + tokenize(prompt.closing, special=True))

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def room_for_shared(self, request: JudgeRequest) -> int:
        bare = replace(request, shared="")
        used = len(self._tokens(self.render_split(bare)))
        return self.n_ctx - used - request.max_tokens

    # ------------------------------------------------------------ decoding

    def _grammar(self, schema_json: str):
        if schema_json not in self._grammars:
            from llama_cpp import LlamaGrammar

            with _quiet_stderr(not self.options.verbose):
                self._grammars[schema_json] = LlamaGrammar.from_json_schema(schema_json, verbose=False)
        return self._grammars[schema_json]

    # Llama.save_state/load_state also copy a (512 × vocabulary) float array of logits, ~300 MB for
    # Qwen: 416 + 246 ms per save and load on a 561-token head, against 7 + 7 ms here, for logits a
    # call never reads (its tail is always evaluated before sampling, and logits_all is off).
    def _save_state(self) -> _SavedState:
        import llama_cpp

        ctx = self._llm._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (ctypes.c_uint8 * size)()
        n_bytes = llama_cpp.llama_state_get_data(ctx, buffer, size)
        n = self._llm.n_tokens
        return _SavedState(buffer, n_bytes, self._llm.input_ids[:n].copy(), n)

    def _load_state(self, state: _SavedState) -> None:
        import llama_cpp

        if llama_cpp.llama_state_set_data(self._llm._ctx.ctx, state.data, state.size) != state.size:
            raise JudgeError("llama.cpp could not restore a saved prompt state")
        self._llm.input_ids[: state.n_tokens] = state.input_ids
        self._llm.n_tokens = state.n_tokens
        self._llm._requires_eval = True  # sample only after evaluating the call's own tokens

    def _restore_prefix(self, tokens: PromptTokens) -> int:
        """Load the saved state for this exact head, making it first if needed. Returns tokens evaluated.

        A head is always made the same way (stem state restored, shared text evaluated), whatever is
        saved already, so its state, and every output computed from it, never depends on call order.
        """
        stem, key = tuple(tokens.stem), (tuple(tokens.stem), tuple(tokens.shared))
        evaluated = 0
        if stem not in self._saved_stems:
            self._llm.reset()
            self._llm.eval(tokens.stem)
            self._saved_stems[stem] = self._save_state()
            evaluated += len(tokens.stem)
        if not tokens.shared:
            self._load_state(self._saved_stems[stem])
            return evaluated
        if key not in self._saved_prefixes:
            self._load_state(self._saved_stems[stem])
            self._llm.eval(tokens.shared)
            self._saved_prefixes.put(key, self._save_state())
            evaluated += len(tokens.shared)
        self._load_state(self._saved_prefixes.use(key))
        return evaluated

    def _generate(self, tokens: PromptTokens, request: JudgeRequest, schema_json: str,
                  max_tokens: int) -> tuple[Generation, int]:
        """Decode one call from its head's saved state. Returns the generation and the tokens evaluated."""
        evaluated = self._restore_prefix(tokens)
        self._llm.eval(tokens.tail)
        generation = self._decoder.generate(self._grammar(schema_json), schema_json, request.schema, max_tokens,
                                            draft=self.options.draft)
        return generation, evaluated + len(tokens.tail)

    def prepare(self, request: JudgeRequest) -> Prepared:
        prompt = self.render_split(request)
        tokens = self._tokens(prompt)
        # What can change the output bytes: greedy decoding ignores the seed, so it is not part of the key
        # (a new --seed only redraws the bootstrap); the llama.cpp build and GPU offload change the
        # floating-point sums, so a verdict computed by another build or on a GPU is never read back.
        params = {"temperature": 0, "split": [len(tokens.stem), len(tokens.head)], "max_tokens": request.max_tokens,
                  "n_batch": self.options.n_batch, "n_gpu_layers": self.options.n_gpu_layers,
                  "build": self.build, "user_text": "plain"}
        if self.options.draft and choice_fields(request.schema):
            # A batch's logits round differently from one-at-a-time ones (by up to 0.6): kept apart.
            params["decode"] = "drafted"
        return Prepared(prompt.text, params, len(tokens), tokens)

    def complete(self, prepared: Prepared, request: JudgeRequest, max_tokens: int) -> Completion:
        generation, evaluated = self._generate(prepared.payload, request, request.schema_json(), max_tokens)
        return Completion(generation.text, generation.finish, len(generation.tokens), evaluated,
                          generation.probabilities)

    def judge(self, request: JudgeRequest) -> JudgeResult:
        """One call without a cache (the smoke check's way in); a run wraps this backend in a ``Judge``."""
        return Judge(self).judge(request)
