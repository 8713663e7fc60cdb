"""The hand-made report.json the report tests render, and small helpers over it."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURE = Path(__file__).parent.parent / "fixtures" / "report_sample.json"
SCRIPT = "<script>alert(1)</script>"


def load_fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def metrics_of(report: dict) -> list[str]:
    return sorted({m for s in report["samples"] for m in s["scores"]})


def sample_of(report: dict, sample_id: str) -> dict:
    return next(s for s in report["samples"] if s["sample_id"] == sample_id)
