"""What every judge backend promises: a request in, a schema-valid value (or a typed error) out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import jsonschema


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
    probabilities: dict[str, dict[str, float]] = field(default_factory=dict)


class JudgeError(RuntimeError):
    """The judge could not produce a valid verdict: the metric records it, loudly, and never guesses."""


class Judge(Protocol):
    """The interface metrics use. ``n_ctx`` and ``count_tokens`` let them split work that won't fit."""

    name: str
    sha256: str | None
    n_ctx: int

    def judge(self, request: JudgeRequest) -> JudgeResult: ...

    def describe(self) -> dict[str, Any]:
        """What ``report.json`` records as ``run.judge``: the model and everything that shapes its output."""
        ...

    def count_tokens(self, text: str) -> int: ...

    def room_for_shared(self, request: JudgeRequest) -> int:
        """How many tokens of ``shared`` text fit beside this request's system, task and output budget."""
        ...


def validate_output(text: str, schema: dict[str, Any]) -> Any:
    """Parse and validate a judge's output; raise JudgeError saying exactly what was wrong."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise JudgeError(f"judge output is not JSON ({exc}): {text[:200]!r}") from None
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        raise JudgeError(f"judge output does not match the schema: {exc.message}") from None
    return value
