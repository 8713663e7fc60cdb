"""The unit of evaluation: one question, what was retrieved for it, and what the RAG system answered."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sample:
    """One RAG interaction to score.

    ``contexts`` are the retrieved chunks in rank order (rank 1 first). ``source`` says where the
    sample came from (``data.jsonl:3``) so that every later message can point back at the input.
    """

    sample_id: str
    question: str
    answer: str
    contexts: tuple[str, ...]
    reference_answer: str | None = None
    category: str | None = None
    source: str = field(default="<memory>", compare=False)
