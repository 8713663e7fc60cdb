"""The real embedders: paraphrases score above unrelated pairs, in English and in Chinese."""

from __future__ import annotations

import numpy as np
import pytest

from offline_eval.embed import cosine_matrix

pytestmark = pytest.mark.slow

PAIRS = {
    "en": ("How do I reset my password?", "What are the steps to change my password?",
           "The quarterly revenue grew by twelve percent."),
    "zh": ("怎么重置我的密码？", "修改密码的步骤是什么？", "本季度营收增长了百分之十二。"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_paraphrase_scores_above_unrelated(embedders, lang):
    question, paraphrase, unrelated = PAIRS[lang]
    vectors = embedders.for_language(lang).embed([question, paraphrase, unrelated])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = cosine_matrix(vectors[:1], vectors[1:])[0]
    assert sims[0] > sims[1] + 0.2, sims


def test_chinese_uses_the_multilingual_embedder(embedders):
    assert embedders.name_for("zh") == "use-multilingual-v3"
    assert embedders.name_for("en") == "all-minilm-l6-v2"


def test_batched_embedding_routes_by_language(embedders):
    texts = [PAIRS["en"][0], PAIRS["zh"][0], PAIRS["en"][1], PAIRS["zh"][1]]
    vectors = embedders.embed(texts, ["en", "zh", "en", "zh"])
    assert vectors.shape[0] == 4
    assert float(vectors[0] @ vectors[2]) > 0.5 and float(vectors[1] @ vectors[3]) > 0.5
