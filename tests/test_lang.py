"""Language detection (offline_eval.lang): decides a sample's prompts and embedder."""

from __future__ import annotations

import pytest

from offline_eval.lang import LANGUAGES, detect_language

# ================================================================================== detect_language


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (("How long do customers have to request a refund?",), "en"),
        (("退款期限是多久？",), "zh"),
        (("客户可以在购买后30天内申请全额退款。",), "zh"),
        # Chinese with an English product name stays Chinese.
        (("我们推荐使用 PostgreSQL 作为主数据库",), "zh"),
        (("如何在 Visual Studio Code 中安装 Python 扩展？",), "zh"),
        (("API 密钥",), "zh"),  # 2 characters vs 1 word
        # English with a few Chinese characters stays English.
        (("Open the 设置 menu and pick a language",), "en"),
        (("The word 猫 means cat",), "en"),
        # Tie: one character against one word is Chinese.
        (("猫 cat",), "zh"),
        # Several texts are weighed together.
        (("什么是退款政策？", "Refund policy applies within thirty days"), "zh"),
        (("What is the refund policy?", "退款"), "en"),
        # No letters at all: English by default.
        (("",), "en"),
        (("12345 !!! ???",), "en"),
        (("。，！？",), "en"),  # Chinese punctuation alone is not Chinese text
    ],
)
def test_detect_language(texts, expected):
    assert detect_language(*texts) == expected
    assert detect_language(*texts) in LANGUAGES


def test_detect_language_no_arguments():
    assert detect_language() == "en"
