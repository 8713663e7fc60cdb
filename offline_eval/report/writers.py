"""Write report files atomically, in any registered format (json, md, html, junit: one module each)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from offline_eval.report.formats import REGISTRY

FORMATS = tuple(REGISTRY)  # the built-in formats (registered by importing offline_eval.report)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` via a temp file in the same folder + os.replace."""
    data = text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are meant to be read by CI and people
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text(path: Path, text: str) -> Path:
    """Write one file atomically (timing.json is written this way too); return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, text)
    return path


def write_reports(report: dict, out_dir: Path, formats: Sequence[str]) -> list[Path]:
    """Write ``report`` to ``out_dir`` in each of ``formats`` (registered names); return the paths written.

    Every format is rendered before anything is written, so an invalid report (an unknown format, a
    NaN score: ValueError) leaves ``out_dir`` untouched. Each file is replaced atomically.
    """
    if isinstance(formats, str):
        formats = [formats]
    wanted: list[str] = []
    for fmt in formats:
        if fmt not in REGISTRY:
            raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(REGISTRY)}")
        if fmt not in wanted:
            wanted.append(fmt)
    rendered = [(REGISTRY[fmt].filename, REGISTRY[fmt].render(report)) for fmt in wanted]
    return [write_text(Path(out_dir) / name, text) for name, text in rendered]
