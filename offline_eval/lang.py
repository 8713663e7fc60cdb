"""Which language a sample is written in: decides the prompts and the embedder."""

from __future__ import annotations

import re

LANGUAGES = ("en", "zh")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def detect_language(*texts: str) -> str:
    """``zh`` when Chinese characters carry the text, else ``en``.

    One Chinese character carries about as much as one English word, so characters are weighed
    against words: a Chinese answer quoting an English product name stays Chinese.
    """
    joined = " ".join(texts)
    cjk = len(_CJK.findall(joined))
    words = len(_LATIN_WORD.findall(joined))
    return "zh" if cjk > 0 and cjk >= words else "en"
