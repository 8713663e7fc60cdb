"""Which outputs are written as choices rather than decoded token by token (no model needed)."""

from __future__ import annotations

from offline_eval import prompts
from offline_eval.judge.decode import choice_fields
from offline_eval.metrics.answer_relevancy import AddressesQuestion, ClassifyAnswer
from offline_eval.metrics.claim_coverage import ExtractClaims


def test_every_verdict_task_is_written_as_choices_in_key_order():
    assert choice_fields(prompts.verdicts_schema(prompts.claim_keys(3))) == {
        "claim_1": ("yes", "no"), "claim_2": ("yes", "no"), "claim_3": ("yes", "no")}
    assert choice_fields(ClassifyAnswer().schema) == {"answer_kind": ("informative", "evasive")}
    assert list(choice_fields(AddressesQuestion().schema) or {}) == list(AddressesQuestion().schema["properties"])


def test_free_text_and_loose_schemas_are_decoded_token_by_token():
    assert choice_fields(ExtractClaims("Cats purr.", "Do cats purr?", 2, "answer").schema) is None
    enum = {"type": "string", "enum": ["yes", "no"]}
    tight = {"type": "object", "properties": {"a": enum}, "required": ["a"], "additionalProperties": False}
    assert choice_fields(tight) == {"a": ("yes", "no")}
    # A field the judge may leave out, extra keys allowed, or a key order the output need not follow.
    assert choice_fields({**tight, "required": []}) is None
    assert choice_fields({k: v for k, v in tight.items() if k != "additionalProperties"}) is None
    two = {"type": "object", "properties": {"a": enum, "b": enum}, "required": ["b", "a"], "additionalProperties": False}
    assert choice_fields(two) is None
    # Options whose first token could name either, or that need escaping in JSON: not choices.
    assert choice_fields({**tight, "properties": {"a": {"type": "string", "enum": ["no", "not sure"]}}}) is None
    assert choice_fields({**tight, "properties": {"a": {"type": "string", "enum": ['say "yes"', "no"]}}}) is None
    assert choice_fields({**tight, "properties": {"a": {"type": "string"}}}) is None
