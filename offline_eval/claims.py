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


_SUFFIX = re.compile(r"(?<=[a-z]{3})(?:ing|ed|es|s)$")


def _word_units(text: str) -> set[str]:
    """Lower-cased content words and numbers, crudely stemmed ("means" and "mean" are one unit)."""
    return {_SUFFIX.sub("", w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _bigram_units(text: str) -> set[str]:
    """Chinese character bigrams."""
    cjk = "".join(_CJK.findall(text))
    return {cjk[i : i + 2] for i in range(len(cjk) - 1)}


def content_units(text: str) -> set[str]:
    """Content words and numbers, plus Chinese character bigrams."""
    return _word_units(text) | _bigram_units(text)


def grounded(claim: str, source: str, *, question: str = "", min_overlap: float = 2 / 3,
             min_bigram_overlap: float = 0.5) -> bool:
    """True when at least ``min_overlap`` of the claim's content words (``min_bigram_overlap`` of its
    Chinese character bigrams) occur in ``source`` or ``question``, and at least one unit occurs in
    ``source``.

    Paraphrase keeps most content words (names, numbers, nouns); an invented fact brings new ones.
    The question counts because claims are asked to stand alone: the reference "Okta, Azure AD and
    Google Workspace (SAML 2.0)" becomes "Okta supports single sign-on", with "single sign-on" from the
    question (without it, that claim was dropped). A claim made only of the question's words restates
    the question and states nothing from the text: dropped. So is a claim about the text ("The answer
    says ..."), unless the text itself talks that way; and a claim with fewer than two content units
    ("e", "It is so.", "Gabriel"), which names at most one thing and says nothing of it: the fast judge,
    on ARES dev, split an answer into the "claims" "e", "l", "i", and the default judge on
    AttributionBench dev took "Gabriel" from "best known for his role as Gabriel "Gabe" Lowan", a
    "claim" the context could not support (P 0.07), which sank an attributable answer.

    Two thirds of the words, not half: the 1.5B judge turned the answer "HTTP 404 means internal
    server error" into the claim "HTTP 404 means the server cannot find the requested resource" —
    the right fact from its own knowledge, in place of the answer's wrong one, which half the words
    let through (and the context then "supported"). Bigrams keep the lower bar: a Chinese paraphrase
    that reorders characters breaks bigrams that a reworded English claim keeps as words.
    """
    if len(content_units(claim)) < 2 or (_META.search(claim) and not _META.search(source)):
        return False
    anchored = False
    for units_of, bar in ((_word_units, min_overlap), (_bigram_units, min_bigram_overlap)):
        units = units_of(claim)
        if not units:
            continue
        in_source = units & units_of(source)
        anchored = anchored or bool(in_source)
        if len(in_source | (units & units_of(question))) / len(units) < bar:
            return False
    return anchored


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
    return [p for p in parts if content_units(p)]


def uncovered_sentences(text_sentences: list[str], claims: list[str], *, question: str = "",
                        min_coverage: float = 0.5) -> list[int]:
    """Positions of the sentences whose content the claims do not cover.

    A sentence is covered when at least ``min_coverage`` of its content units that are not the
    question's appear in the claims taken together. A small judge asked to split a ten-sentence answer
    into claims returned about five and left whole sentences out — the hallucinated one among them,
    which then could never be caught. Such a sentence is checked as it stands. The question's words
    do not count towards coverage: a claim that keeps "HTTP 404 means" from the question and swaps
    "internal server error" for another fact has not covered that sentence.
    """
    claimed = set().union(*(content_units(c) for c in claims)) if claims else set()
    asked = content_units(question)
    out = []
    for i, sentence in enumerate(text_sentences):
        units = content_units(sentence)
        units = (units - asked) or units
        if units and len(units & claimed) / len(units) < min_coverage:
            out.append(i)
    return out


# Numbers: digits with thousands separators or decimals ("3,677", "34.4"), not part of a name ("C3",
# "S3", "Ka-27" aside). Not a list item's marker ("4. Justice…") nor a citation marker ("[3]"), which
# number the text rather than state a fact.
_NUMBER = re.compile(r"(?<![A-Za-z])\d+(?:[.,]\d+)*(?![A-Za-z])")
_MARKERS = re.compile(r"^\s*\d+[.)]\s|\[\d+(?:\s*[,–-]\s*\d+)*\]")
# Small numbers written as words count as written in digits ("two exits" states "2 exits").
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())} | {
    w: str(10 * i) for i, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)} | {
    c: str(i) for i, c in enumerate("零一二三四五六七八九十")} | {"两": "2", "百": "100", "千": "1000"}
_NUMBER_WORD = re.compile(
    r"\b(?:" + "|".join(w for w in _NUMBER_WORDS if w.isascii()) + r")\b|[零一二两三四五六七八九十百千]", re.IGNORECASE)


def _numbers(text: str) -> list[str]:
    return [n.replace(",", "") for n in _NUMBER.findall(_MARKERS.sub(" ", text))]


def unstated_numbers(sentence: str, context: str) -> list[str]:
    """The numbers ``sentence`` states in digits that ``context`` holds nowhere, neither in digits nor as
    a small number word.

    A number the context never gives cannot be supported by it. On AttributionBench dev (1,198 items),
    the 85 answers holding such a number were 85% unattributable against 50% overall, and the 1.5B
    judge still supported some of them ("the average man in the U.S. weighs 199.8 pounds", P 0.50).
    """
    given = set(_numbers(context)) | {_NUMBER_WORDS[w.lower()] for w in _NUMBER_WORD.findall(context)}
    return list(dict.fromkeys(n for n in _numbers(sentence) if n not in given))
