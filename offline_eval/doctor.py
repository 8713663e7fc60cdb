"""``offline-eval doctor``: is this installation healthy, and what was it built as?

Reports llama-cpp-python's version and the llama.cpp build (CPU features and GPU backend compiled in,
the set-up profile), the models' status, and a timed smoke decode in a child process (a build that
crashes on this CPU is reported, not fatal). Healthy when llama.cpp loads, the smoke decode passes
and the default models are verified.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Diagnosis:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    smoke: dict[str, Any] | None = None

    @property
    def healthy(self) -> bool:
        return not self.problems


def run_smoke_subprocess(judge: str, n_gpu_layers: int, timeout: float = 600) -> tuple[dict[str, Any] | None, str]:
    """``python -m offline_eval.smoke --json`` in a child: (figures, "") or (None, what went wrong)."""
    cmd = [sys.executable, "-m", "offline_eval.smoke", "--json", "--judge", judge, "--gpu-layers", str(n_gpu_layers)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, f"the smoke decode did not finish in {timeout:.0f} s"
    if proc.returncode == 0:
        return json.loads(proc.stdout.strip().splitlines()[-1]), ""
    if proc.returncode < 0:
        reason = f"the smoke decode crashed (signal {-proc.returncode}{', segmentation fault' if proc.returncode == -11 else ''})"
    else:
        reason = f"the smoke decode failed (exit {proc.returncode})"
    tail = " / ".join(proc.stderr.strip().splitlines()[-2:])
    return None, reason + (f": {tail}" if tail else "")


def diagnose(judge: str = "tiny", n_gpu_layers: int = 0, smoke: bool = True,
             smoke_runner: Callable[[str, int], tuple[dict[str, Any] | None, str]] = run_smoke_subprocess) -> Diagnosis:
    from offline_eval import __version__, modelstore
    from offline_eval.registry import all_models

    d = Diagnosis()
    d.lines.append(f"offline-eval {__version__} · Python {platform.python_version()} · {platform.system()} "
                   f"{platform.machine()} · {os.cpu_count()} cores")
    try:
        from offline_eval.judge.llama_build import build_identity, setup_stamp

        ident = build_identity()
    except Exception as exc:  # an import failure of the native library is exactly what doctor is for
        d.problems.append(f"llama-cpp-python does not load: {type(exc).__name__}: {exc} (run scripts/setup.sh)")
    else:
        d.lines.append(f"llama-cpp-python {ident['llama_cpp_python']}")
        for backend, features in ident["backends"].items():
            d.lines.append(f"  {backend}: {' '.join(features) or '(no optional features)'}")
        d.lines.append(f"  GPU offload: {'available' if ident['gpu_offload'] else 'not available (CPU build)'}")
        stamp = setup_stamp()
        if stamp:
            d.lines.append(f"  set-up build: profile {stamp.get('profile')}, key {stamp.get('key')}, smoke check "
                           f"{stamp.get('smoke') or 'not run'}")
        else:
            d.lines.append("  set-up build: not installed by scripts/setup.sh (no build stamp in this environment)")
        if n_gpu_layers and not ident["gpu_offload"]:
            d.problems.append("--gpu-layers was given but this llama.cpp build has no GPU backend "
                              "(rebuild: scripts/setup.sh --gpu cuda)")

    d.lines.append("models:")
    for spec in all_models():
        st = modelstore.status(spec)
        label = "verified" if st.verified else ("installed, not verified" if st.installed else "missing")
        needed = spec.default or bool(spec.default_for) or spec.name == judge or judge in spec.aliases
        d.lines.append(f"  {spec.name:<22} {spec.role:<9} {label}{' (needed)' if needed else ''}")
        if needed and not st.verified:
            d.problems.append(f"model {spec.name} is {label} (offline-eval models install {spec.name})")

    if smoke and not d.problems:
        figures, reason = smoke_runner(judge, n_gpu_layers)
        if figures is None:
            d.problems.append(reason)
        else:
            d.smoke = figures
            where = f"GPU, {n_gpu_layers} layers" if n_gpu_layers else "CPU"
            d.lines.append(f"smoke decode ({figures['judge']}, {where}): load {figures['load_seconds']} s, prompt "
                           f"{figures['prompt_tokens_per_second']} tok/s, generation "
                           f"{figures['generated_tokens_per_second']} tok/s; grammar and state restore ok")
    return d
