"""report.json: the contract (strict JSON, sorted keys, UTF-8), byte-identical for the same run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from offline_eval.report.formats import register


@register("json", "report.json")
def render_json(report: Mapping[str, Any]) -> str:
    """report.json's exact text: strict JSON (NaN/Infinity raise ValueError), sorted keys, UTF-8."""
    return json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False) + "\n"
