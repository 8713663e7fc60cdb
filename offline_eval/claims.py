"""Guards around claim extraction, where a small judge goes wrong in two measured ways.

Seen with the 1.5B judge: asked for "at most 10 claims" about a one-sentence answer, it filled all ten
slots, inventing facts the answer never stated (then judged some of them "supported"). So:

- ``claim_budget`` caps the number of claims by the number of clauses in the text: a one-sentence
  answer cannot hold ten facts, and the grammar's ``maxItems`` then stops the padding.
- ``grounded`` drops a claim whose content words mostly do not occur in the text it was extracted
  from (or in the question, whose words a self-contained claim restates), that takes nothing from
  the text itself, that has no content word at all, or that talks about the text instead of stating
  its fact ("The reference answer states that ...", which the prompt forbids and the judge still
  wrote). Dropped claims are reported, never silently lost, and never enter the score.
"""

from __future__ import annotations

import re

# Clause boundaries: punctuation, and the conjunctions that join facts in one sentence (Chinese ones
# have no spaces around them, so they are matched anywhere; over-splitting only loosens the cap).
_CLAUSE = re.compile(r"[.!?;:。！？；：\n]+|[,，、]|\b(?:and|but|while|which|whereas)\b|并且|以及|而且|同时|和",
                     re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}|\d+(?:[.,]\d+)*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_META = re.compile(
    r"\b(?:the\s+)?(?:reference\s+)?answer\s+(?:states|says|mentions|notes|claims|indicates|explains)\b"
    r"|(?:参考答案|回答|答案)(?:中)?(?:提到|指出|说|表示|称|写道)",
    re.IGNORECASE,
)
_STOP = frozenset(
    "the and for are was were is has have had its with from that this these those into onto over under "
    "about also can could will would may might must shall should does did not but all any each which "
    "who whom whose what when where why how than then there their they them you your our his her".split()
)


def clauses(text: str) -> list[str]:
    """The text's clauses (pieces between punctuation and joining conjunctions), stripped."""
    return [c.strip() for c in _CLAUSE.split(text) if c and len(c.strip()) > 2]


def claim_budget(text: str, max_claims: int) -> int:
    """At most one claim per clause (and at least one), never more than ``max_claims``."""
    return max(1, min(max_claims, len(clauses(text))))


def _content_units(text: str) -> set[str]:
    """Lower-cased content words and numbers, plus Chinese character bigrams."""
    lowered = text.lower()
    units = {w for w in _WORD.findall(lowered) if w not in _STOP}
    cjk = "".join(_CJK.findall(text))
    units |= {cjk[i : i + 2] for i in range(len(cjk) - 1)}
    return units


def grounded(claim: str, source: str, *, question: str = "", min_overlap: float = 0.5) -> bool:
    """True when at least ``min_overlap`` of the claim's content units occur in ``source`` or ``question``,
    and at least one occurs in ``source``.

    Paraphrase keeps most content words (names, numbers, nouns); an invented fact brings new ones.
    The question counts because claims are asked to stand alone: the reference "Okta, Azure AD and
    Google Workspace (SAML 2.0)" becomes "Okta supports single sign-on", with "single sign-on" from the
    question (without it, that claim was dropped). A claim made only of the question's words restates
    the question and states nothing from the text: dropped. So is a claim about the text ("The answer
    says ..."), unless the text itself talks that way; and a claim with no content unit at all
    ("e", "It is so."): the fast judge, on ARES dev, split an answer into the "claims" "e", "l", "i".
    """
    units = _content_units(claim)
    if not units or (_META.search(claim) and not _META.search(source)):
        return False
    in_source = units & _content_units(source)
    present = in_source | (units & _content_units(question))
    return bool(in_source) and len(present) / len(units) >= min_overlap


# A sentence ends at . ! ? (followed by a space or the end; "3.5" and "e.g." do not end one), at a
# Chinese full stop, question or exclamation mark, or at a line break (list items).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^a-z0-9])|(?<=[。！？])|\n+")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|mr|mrs|dr|no|fig|approx|ca)\.$", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """The sentences of a text that state something (at least one content unit), in order."""
    parts: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {piece}"  # "e.g. Paris" does not start a sentence
        else:
            parts.append(piece)
    return [p for p in parts if _content_units(p)]


def uncovered_sentences(text_sentences: list[str], claims: list[str], min_coverage: float = 0.5) -> list[int]:
    """Positions of the sentences whose content the claims do not cover.

    A sentence is covered when at least ``min_coverage`` of its content units appear in the claims
    taken together. A small judge asked to split a ten-sentence answer into claims returned about
    five and left whole sentences out — the hallucinated one among them, which then could never be
    caught. Such a sentence is checked as it stands.
    """
    claimed = set().union(*(_content_units(c) for c in claims)) if claims else set()
    out = []
    for i, sentence in enumerate(text_sentences):
        units = _content_units(sentence)
        if units and len(units & claimed) / len(units) < min_coverage:
            out.append(i)
    return out
