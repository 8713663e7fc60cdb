"""A small faithfulness report made by a scripted judge, for the review tests (model-free and browser).

Each sample's answer has a keyword that picks its claims and the judge's P(yes) per claim, so which
verdict is least certain, and so the "most worth checking" order, is known in advance. One sample
carries markup in its id and answer: report.html must show it as text and never run or load it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from offline_eval import evaluate
from offline_eval.testing import FakeJudge, hashing_embedders

INJECTED_ID = 'x</script><script>window.__pwned_id = 1</script>'
INJECTED_SCRIPT = "<script>window.__pwned = 1</script>"

# keyword in the answer -> (its claims, P(yes) of each claim's verdict; yes when P >= 0.5)
SCRIPT: dict[str, tuple[list[str], list[float]]] = {
    "store": (["The store opens at nine", "The store closes at five"], [0.95, 0.9]),
    "Parking": (["Parking is free on weekends", "Parking costs two euros on weekdays"], [0.55, 0.45]),
    "refund": (["A refund takes five days", "A refund needs the receipt"], [0.8, 0.15]),
    "pwned": ([f"The answer shows {INJECTED_SCRIPT} as text", "Nothing in it runs"], [0.7, 0.3]),
}


def records(leak_url: str = "http://127.0.0.1:9/leak.png") -> list[dict[str, Any]]:
    """Four samples; the last one's id and answer hold a script and an image from ``leak_url``."""
    return [
        {"sample_id": "store-hours", "question": "When is the store open?",
         "contexts": ["The store opens at nine and closes at five."],
         "answer": "The store opens at nine. The store closes at five."},
        {"sample_id": "parking", "question": "What does parking cost?",
         "contexts": ["Parking is free on weekends.", "On weekdays parking costs three euros."],
         "answer": "Parking is free on weekends. Parking costs two euros on weekdays."},
        {"sample_id": "refunds", "question": "How do refunds work?",
         "contexts": ["Refunds are paid within five days."],
         "answer": "A refund takes five days. A refund needs the receipt."},
        {"sample_id": INJECTED_ID, "question": "Is markup escaped?",
         "contexts": [f'<img src="{leak_url}"> a chunk with markup'],
         "answer": f'The answer shows {INJECTED_SCRIPT} as text. Nothing in it runs. <img src="{leak_url}">'},
    ]


def _keyword(request) -> str:
    text = request.shared + request.task
    return next(k for k in SCRIPT if k in text)


# Each claim's P(yes), by its text: a check call may hold one sentence or several claims, keyed in order.
_P_YES = {claim: p for claims, ps in SCRIPT.values() for claim, p in zip(claims, ps)}
_CHECKED = re.compile(r"^claim_\d+: (.*?)\.?$", re.MULTILINE)


def answer(request):
    props = request.schema["properties"]
    if "claims" in props:
        return {"claims": SCRIPT[_keyword(request)][0]}
    value, probs = {}, {}
    for key, checked in zip(props, _CHECKED.findall(request.task), strict=True):
        # A short sentence is checked after its question; a sentence no claim covered is checked too: 0.9.
        p = next((p for claim, p in _P_YES.items() if checked.endswith(claim)), 0.9)
        value[key] = "yes" if p >= 0.5 else "no"
        probs[key] = {"yes": p, "no": 1 - p}
    return value, probs


def build(out: Path, leak_url: str = "http://127.0.0.1:9/leak.png", **options: Any) -> dict:
    """Evaluate faithfulness on :func:`records` with the scripted judge; write every report to ``out``."""
    report = evaluate(records(leak_url), judge_instance=FakeJudge(answer), embedders=hashing_embedders(),
                      metrics=("faithfulness",), n_resamples=200, **options)
    report.write(out)
    return report.data


def write_labels(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path
