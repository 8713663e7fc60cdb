"""Focusing a long context on the sentences a claim is about (model-free: pure functions)."""

from __future__ import annotations

import numpy as np
import pytest

from offline_eval.evidence import ContextSentences, context_sentences, focus, overlap_scores, query_coverage

CONTEXT = ("Canberra is the capital of Australia. Sydney is the most populous city.\n"
           "The Harbour Bridge opened in 1932. Melbourne hosted parliament until 1927. - a")


def test_context_sentences_keep_ranks_and_leave_out_fragments():
    assert context_sentences([CONTEXT, "Second chunk here."]) == [
        (1, "Canberra is the capital of Australia."), (1, "Sydney is the most populous city."),
        (1, "The Harbour Bridge opened in 1932."), (1, "Melbourne hosted parliament until 1927."),
        (2, "Second chunk here.")]  # "- a" is a fragment


def test_chinese_sentences_split_on_chinese_punctuation():
    assert [s for _, s in context_sentences(["北京是中国的首都。上海是最大的城市！它有很多人口？"])] == [
        "北京是中国的首都。", "上海是最大的城市！", "它有很多人口？"]


def test_overlap_scores_weight_rare_units_more():
    sentences = [{"capital", "australia"}, {"australia", "city"}, {"australia", "bridge"}]
    scores = overlap_scores(sentences, {"capital", "australia"})
    # "australia" is in all three (weight log 2), "capital" in one (log 4).
    assert np.allclose(scores, [np.log(4) + np.log(2), np.log(2), np.log(2)])
    assert overlap_scores(sentences, set()).tolist() == [0, 0, 0]


def test_query_coverage_is_each_texts_weighted_share_of_the_query():
    texts = ["Canberra is the capital of Australia.", "Sydney is in Australia.", "The bridge opened in 1932."]
    # Query units: canberra (1 text: log 4), capital (1: log 4), australia (2: log 2.5), wall (0: log 4).
    total = 3 * np.log(4) + np.log(2.5)
    assert np.allclose(query_coverage(texts, "Canberra, capital of Australia? The wall."),
                       [(2 * np.log(4) + np.log(2.5)) / total, np.log(2.5) / total, 0.0])
    assert np.allclose(query_coverage(["堪培拉是首都"], "首都是哪里"), [1 / 4])  # bigrams: 首都 of 首都 都是 是哪 哪里
    assert np.array_equal(query_coverage(texts, "the of is"), np.zeros(3))  # no content units: nothing held
    assert query_coverage([], "capital").shape == (0,)


def test_focus_keeps_the_closest_sentences_in_context_order():
    chunks = focus(ContextSentences.of([CONTEXT, "Sydney's opera house opened in 1973."]),
                   "Sydney is the capital of Australia.", "What is the capital of Australia?", 2)
    assert chunks == [(1, "Canberra is the capital of Australia. Sydney is the most populous city.")]
    # A short context is read whole, and k = 0 turns focusing off.
    assert focus(ContextSentences.of([CONTEXT]), "Sydney is the capital.", "", 4) is None
    assert focus(ContextSentences.of([CONTEXT]), "Sydney is the capital.", "", 0) is None


@pytest.mark.parametrize("k", [1, 3])
def test_ties_go_to_the_earlier_sentence(k):
    context = ["Alpha one. Alpha two. Alpha three. Alpha four."]
    chunks = focus(ContextSentences.of(context), "Alpha.", "", k)
    assert chunks == [(1, " ".join(f"Alpha {w}." for w in ["one", "two", "three"][:k]))]
