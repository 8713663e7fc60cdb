"""What llama.cpp build this process runs, as far as it can change a verdict.

Two builds of the same llama.cpp version can differ in their output bytes: the SIMD kernels compiled
in (AVX2 vs AVX-512, AMX) and the GPU backend change the order of floating-point sums. So the judge's
cache key and ``report.json`` carry this identity, and a verdict cached by one build is never read
back by another. ``scripts/llama_build.py`` decides the build; this module only reads it back.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path
from typing import Any

# Written by scripts/llama_build.py into the virtual environment it installed llama-cpp-python into.
SETUP_STAMP = ".offline-eval-llama.json"
_FEATURE = re.compile(r"([A-Z0-9_]+) = 1\b")


def parse_system_info(text: str) -> dict[str, list[str]]:
    """``llama_print_system_info()`` text, e.g. ``CPU : AVX = 1 | AVX2 = 1 | ...``, as {backend: features}."""
    out: dict[str, list[str]] = {}
    backend = ""
    for part in text.split("|"):
        part = part.strip()
        if " : " in part:
            backend, _, part = part.partition(" : ")
            backend = backend.strip()
            out.setdefault(backend, [])
        match = _FEATURE.fullmatch(part.strip())
        if match and backend:
            out[backend].append(match.group(1))
    return out


@functools.lru_cache(maxsize=1)
def build_identity() -> dict[str, Any]:
    """llama-cpp-python's version, the backends and CPU features compiled in, and GPU offload support."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    backends = parse_system_info(info)
    return {
        "llama_cpp_python": llama_cpp.__version__,
        "backends": {name: sorted(features) for name, features in sorted(backends.items())},
        "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
    }


def compiled_features() -> set[str]:
    return {f for features in build_identity()["backends"].values() for f in features}


def setup_stamp() -> dict[str, Any] | None:
    """What set-up built and whether that build passed its smoke check (None outside a set-up venv)."""
    try:
        return json.loads((Path(sys.prefix) / SETUP_STAMP).read_text())
    except (OSError, ValueError):
        return None
