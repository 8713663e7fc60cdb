"""The registry of report formats: a format is one module with a ``render(report) -> str`` function
decorated with ``@register(name, filename)``; ``write_reports`` and ``--format`` know it from here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Render = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class Format:
    name: str  # what --format calls it
    filename: str  # the file it is written to
    render: Render


REGISTRY: dict[str, Format] = {}


def register(name: str, filename: str) -> Callable[[Render], Render]:
    """Decorator: make ``render`` the format ``name``, written to ``filename``."""
    def add(render: Render) -> Render:
        REGISTRY[name] = Format(name, filename, render)
        return render

    return add
