"""What a judge call is, what it costs, and what a backend (llama.cpp, a server, a script) must provide.

A request goes in and a schema-valid value (or a typed error) comes out. The backend only turns a
prompt into text; ``offline_eval.judge.judge.Judge`` wraps any backend with what does not depend on
the model: the cache, the retry of an output cut by its budget, the schema check and the accounting.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

# For each enum field of a schema, the judge's probability of each option ({"claim_1": {"yes": 0.93, ...}}).
Probabilities = dict[str, dict[str, float]]


@dataclass(frozen=True)
class JudgeRequest:
    """One judge call.

    The prompt is ``system`` + a user message made of ``shared`` then ``task``. ``shared`` is the text
    that several calls of a sample have in common (the retrieved context): backends may evaluate it
    once and reuse it. ``schema`` is a JSON schema; the output is decoded under its grammar.
    """

    system: str
    shared: str
    task: str
    schema: dict[str, Any]
    max_tokens: int
    metric: str = ""
    # A plausible answer without asking the judge (``--dry-run`` sizes the calls that follow from it);
    # not part of the call.
    estimate: Callable[[], Any] | None = field(default=None, compare=False, repr=False)

    def schema_json(self) -> str:
        # Key order is kept: the grammar emits properties in this order (e.g. questions before the
        # noncommittal flag), and schemas are built in code, so the text is stable run to run.
        return json.dumps(self.schema, ensure_ascii=False)


@dataclass
class JudgeResult:
    """A validated value and what it cost. ``cached`` results report the cost of the original call."""

    value: Any
    prompt_tokens: int
    completion_tokens: int
    seconds: float = 0.0
    evaluated_tokens: int = 0  # prompt tokens this process actually evaluated (0 when cached)
    cached: bool = False
    raw: str = field(default="", repr=False)
    # For each enum field of the schema, the judge's probability of each option where it decided
    # ({"claim_1": {"yes": 0.93, "no": 0.07}}); empty where the backend cannot say.
    probabilities: Probabilities = field(default_factory=dict)


class JudgeError(RuntimeError):
    """The judge could not produce a valid verdict: the metric records it, loudly, and never guesses."""


@dataclass
class Usage:
    """Judge cost of one metric (over a sample, or a run). ``seconds``/``cache_hits``/``evaluated`` vary run to run."""

    judge_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_tokens: int = 0
    cache_hits: int = 0
    seconds: float = 0.0

    def record(self, result: JudgeResult) -> None:
        """Count one call."""
        self.judge_calls += 1
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        self.evaluated_tokens += result.evaluated_tokens
        self.cache_hits += int(result.cached)
        self.seconds += 0.0 if result.cached else result.seconds

    def add(self, other: Usage) -> None:
        """Fold another tally (another sample's) into this one."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass(frozen=True)
class Prepared:
    """A request as a backend will send it.

    ``prompt`` (the exact text) and ``params`` (every decoding setting that can change the output
    bytes) make the cache key; ``n_prompt`` is the prompt's size in tokens (an upper bound where the
    backend cannot count exactly); ``payload`` is the backend's own form of it (tokens, a message list).
    """

    prompt: str
    params: dict[str, Any]
    n_prompt: int
    payload: Any = None


@dataclass
class Completion:
    """What a backend generated for one budget: text, and whether it stopped or ran out of tokens."""

    text: str
    finish: str  # "stop" | "length"
    completion_tokens: int
    evaluated_tokens: int = 0  # prompt tokens evaluated for this call (0 where the backend cannot say)
    probabilities: Probabilities = field(default_factory=dict)
    prompt_tokens: int | None = None  # the backend's own count of the prompt, where it reports one


class Backend(Protocol):
    """What turns a prompt into text: llama.cpp in this process, an OpenAI-compatible server, a script.

    ``identity`` names the model in the cache key (a GGUF file's sha256); ``n_ctx`` is the window in
    tokens that prompt and output share.
    """

    name: str
    sha256: str | None
    identity: str
    n_ctx: int

    def prepare(self, request: JudgeRequest) -> Prepared: ...

    def complete(self, prepared: Prepared, request: JudgeRequest, max_tokens: int) -> Completion:
        """Generate under ``request.schema`` with at most ``max_tokens`` output tokens."""
        ...

    def describe(self) -> dict[str, Any]:
        """What ``report.json`` records as ``run.judge``: the model and everything that shapes its output."""
        ...

    def count_tokens(self, text: str) -> int: ...

    def room_for_shared(self, request: JudgeRequest) -> int:
        """How many tokens of ``shared`` text fit beside this request's system, task and output budget."""
        ...


def validate_output(text: str, schema: dict[str, Any]) -> Any:
    """Parse and validate a judge's output; raise JudgeError saying exactly what was wrong."""
    import jsonschema  # here, not at the top: the metric registry imports this module, and --help stays instant

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise JudgeError(f"judge output is not JSON ({exc}): {text[:200]!r}") from None
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        raise JudgeError(f"judge output does not match the schema: {exc.message}") from None
    return value
