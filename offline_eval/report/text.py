"""Numbers and user text as every rendering shows them, and the one Markdown escaper.

Used by the report formats, ``compare`` and ``agreement`` alike, so a score or a claim reads the same
in report.md, report.html, junit.xml and the comparison.
"""

from __future__ import annotations

import math
import re
from typing import Any

NONE = "—"

_NEWLINES = re.compile(r"\r\n|\r|\n")
# Characters Markdown would act on inside a table cell: entities for those that open HTML or code
# spans or that would escape our own "\|"; backslash escapes for cell separators, emphasis and links.
# (Intraword "_" is not emphasis in GFM, so metric names such as context_recall stay readable.)
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "&#92;", "`": "&#96;"}
_BACKSLASHED = set("|*[]")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def text_of(value: Any) -> str:
    return "" if value is None else str(value)


def clip(text: Any, limit: int) -> str:
    s = text_of(text)
    return s if len(s) <= limit else s[: max(0, limit - 1)].rstrip() + "…"


def fmt_num(value: Any, digits: int = 3) -> str:
    """A score to ``digits`` decimals; None (or anything not a number) as an em dash."""
    if not is_number(value):
        return NONE
    if not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}f}"


def fmt_ci(agg: Any) -> str:
    low, high = agg.get("ci_low"), agg.get("ci_high")
    if not (is_number(low) and is_number(high)):
        return NONE
    return f"[{fmt_num(low)}, {fmt_num(high)}]"


def fmt_count(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else NONE


def md_text(value: Any, limit: int | None = None) -> str:
    """User text made safe for a Markdown table cell or list item: shown literally, on one line."""
    text = text_of(value)
    if limit is not None:
        text = clip(text, limit)
    out = []
    for ch in text:
        if ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        elif ch in _BACKSLASHED:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return _NEWLINES.sub("<br>", "".join(out))
