"""Which outputs hold only choices, and the fixed text drafted between them (no model needed)."""

from __future__ import annotations

from offline_eval import prompts
from offline_eval.judge.decode import ChoiceDraft, choice_fields
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


_CLAIMS = ChoiceDraft(choice_fields(prompts.verdicts_schema(prompts.claim_keys(3))) or {})


def test_the_first_key_is_drafted_in_the_spacing_the_judge_opened_with():
    assert _CLAIMS.propose("{") == '"claim_1":"'
    assert _CLAIMS.propose("{ ") == '"claim_1": "'
    assert _CLAIMS.propose('{ "cla') == 'im_1": "'
    assert _CLAIMS.propose("") == ""  # nothing written: nothing to go on


def test_nothing_is_drafted_where_the_judge_decides():
    assert _CLAIMS.propose('{ "claim_1": "') == ""
    assert _CLAIMS.propose('{ "claim_1": "yes", "claim_2": "') == ""


def test_after_a_decision_the_rest_up_to_the_next_decision_is_drafted():
    assert _CLAIMS.propose('{ "claim_1": "y') == 'es", "claim_2": "'
    assert _CLAIMS.propose('{"claim_1":"no') == '","claim_2":"'
    assert _CLAIMS.propose('{ "claim_1": "yes", "cla') == 'im_2": "'
    assert _CLAIMS.propose('{ "claim_1": "yes", "claim_2": "no", "claim_3": "y') == 'es"}'


def test_the_judges_own_separators_are_copied_once_it_has_written_them():
    assert _CLAIMS.propose('{ "claim_1" : "yes",\n  "claim_2" : "n') == 'o",\n  "claim_3" : "'


def test_a_judge_that_leaves_the_draft_gets_no_draft_until_its_next_decision():
    assert _CLAIMS.propose('{ "claim_1": "yes" ,') == ""
    assert _CLAIMS.propose('{ "claim_1" :') == ""  # the guess was '{ "claim_1": "'
    assert _CLAIMS.propose('{ "claim_1" : "n') == 'o", "claim_2" : "'  # and from its decision on, its own
