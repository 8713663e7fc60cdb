"""The ``report`` fixture: a fresh copy of the hand-made report.json for each test."""

from __future__ import annotations

import pytest

from tests.report.common import load_fixture


@pytest.fixture()
def report() -> dict:
    return load_fixture()
