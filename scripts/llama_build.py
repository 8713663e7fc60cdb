#!/usr/bin/env python3
"""Build llama-cpp-python for the machine it runs on, install it, and prove it works there.

Why not a plain `pip install llama-cpp-python`: it compiles with -march=native, so on a CPU that
advertises AMX (Intel Sapphire Rapids and later) llama.cpp uses AMX tile kernels, and many hypervisors
and sandboxes fault on them: the judge dies with a segmentation fault at its first matrix product. And
pip's wheel cache keys a built wheel by the source archive alone, so a wheel built with other flags on
an earlier set-up is handed back whatever CMAKE_ARGS say.

So this script (standard library only; setup.sh runs it):
- chooses the build flags from a *profile*: ``auto`` (default) = the widest instruction sets that the
  CPU reports and the kernel has enabled (Linux clears a flag in /proc/cpuinfo when the OS does not
  save that register state), never AMX unless OFFLINE_EVAL_LLAMA_AMX=1; ``native`` = -march=native;
  ``avx2`` and ``x86-64`` = conservative baselines; ``cuda`` = ``auto`` plus the CUDA backend;
- builds the wheel with pip's cache off, into a folder of its own keyed by everything that decides the
  build (llama-cpp-python version, CMake arguments, compiler, Python), and installs that exact file;
- ``check``: runs a smoke decode in a subprocess (``python -m offline_eval.smoke``); if it crashes or
  fails, rebuilds once with each more conservative baseline and checks again; if all fail, stops with
  a message naming the CPU and what was tried.

    python3 scripts/llama_build.py flags [--profile P]          # print the CMake arguments
    python3 scripts/llama_build.py install --venv .venv [--profile P]
    python3 scripts/llama_build.py check --venv .venv [--profile P]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "scripts" / "constraints.txt"
STAMP = ".offline-eval-llama.json"  # inside the venv: what was installed, and whether it passed its check

# ggml's x86 CMake switches and the /proc/cpuinfo flags each needs (all of them).
_X86_OPTIONS: dict[str, tuple[str, ...]] = {
    "GGML_SSE42": ("sse4_2",),
    "GGML_AVX": ("avx",),
    "GGML_AVX2": ("avx2",),
    "GGML_FMA": ("fma",),
    "GGML_F16C": ("f16c",),
    "GGML_BMI2": ("bmi2",),
    "GGML_AVX_VNNI": ("avx_vnni",),
    "GGML_AVX512": ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
    "GGML_AVX512_VBMI": ("avx512vbmi",),
    "GGML_AVX512_VNNI": ("avx512_vnni",),
    "GGML_AVX512_BF16": ("avx512_bf16",),
    "GGML_AMX_TILE": ("amx_tile",),
    "GGML_AMX_INT8": ("amx_tile", "amx_int8"),
    "GGML_AMX_BF16": ("amx_tile", "amx_bf16"),
}
_AMX = {"GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"}
_AVX2_BASELINE = {"GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2"}
PROFILES = ("auto", "native", "avx2", "x86-64", "cuda")
# What `check` falls back to, in order, after the requested profile fails its smoke check.
FALLBACKS = ("avx2", "x86-64")


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def llama_version() -> str:
    match = re.search(r"^llama-cpp-python==(\S+)", CONSTRAINTS.read_text(), re.MULTILINE)
    if not match:
        raise SystemExit(f"{CONSTRAINTS}: no llama-cpp-python pin")
    return match.group(1)


def is_x86() -> bool:
    return platform.machine().lower() in {"x86_64", "amd64", "i686", "i386"}


@functools.lru_cache(maxsize=1)
def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _cpuinfo_field(name: str, cpuinfo: str | None) -> str | None:
    """The first ``name : value`` line of /proc/cpuinfo (read once), or of the text given."""
    for line in (_read_cpuinfo() if cpuinfo is None else cpuinfo).splitlines():
        if line.startswith(name):
            return line.partition(":")[2].strip()
    return None


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags as the kernel reports them (empty where /proc/cpuinfo is absent)."""
    return set((_cpuinfo_field("flags", cpuinfo) or "").split())


def cpu_name(cpuinfo: str | None = None) -> str:
    return _cpuinfo_field("model name", cpuinfo) or platform.processor() or platform.machine()


def cmake_args(profile: str, flags: set[str], *, x86: bool = True, allow_amx: bool = False) -> list[str]:
    """The CMake arguments for a profile on a CPU with these flags (pure: tested on made-up CPUs)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown build profile {profile!r}; choose from {', '.join(PROFILES)}")
    if profile == "native":
        return ["-DGGML_NATIVE=ON"]
    if not x86:
        # AMX is x86 only; elsewhere llama.cpp's own native detection is the robust choice.
        return ["-DGGML_NATIVE=ON"] + (["-DGGML_CUDA=ON"] if profile == "cuda" else [])
    if profile == "x86-64":
        wanted: set[str] = set()
    elif profile == "avx2":
        wanted = _AVX2_BASELINE if all(flag in flags for opt in _AVX2_BASELINE for flag in _X86_OPTIONS[opt]) else set()
    else:  # auto, cuda
        wanted = {opt for opt, needs in _X86_OPTIONS.items() if all(flag in flags for flag in needs)}
        if not allow_amx:
            wanted -= _AMX
    args = ["-DGGML_NATIVE=OFF"] + [f"-D{opt}={'ON' if opt in wanted else 'OFF'}" for opt in _X86_OPTIONS]
    if profile == "cuda":
        args.append("-DGGML_CUDA=ON")
    return args


def current_args(profile: str) -> list[str]:
    return cmake_args(profile, cpu_flags(), x86=is_x86(), allow_amx=os.environ.get("OFFLINE_EVAL_LLAMA_AMX") == "1")


def _compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or "cc"
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
        return out.splitlines()[0] if out else cc
    except OSError:
        return cc


def build_key(args: list[str]) -> str:
    """Everything that decides the compiled library; the wheel is cached under this key and no other."""
    blob = json.dumps({"llama_cpp_python": llama_version(), "cmake_args": args, "compiler": _compiler(),
                       "python": f"{sys.implementation.name}{sys.version_info[0]}{sys.version_info[1]}",
                       "machine": platform.machine()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def wheel_home() -> Path:
    home = os.environ.get("OFFLINE_EVAL_HOME")
    base = Path(home) if home else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "offline-eval"
    return base / "llama-wheels"


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def read_stamp(venv: Path) -> dict:
    try:
        return json.loads((venv / STAMP).read_text())
    except (OSError, ValueError):
        return {}


def _write_stamp(venv: Path, stamp: dict) -> None:
    (venv / STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")


def _quietly(cmd: list[str], env: dict[str, str] | None = None) -> None:
    """Run a noisy command; on failure show its last lines instead of a wall of text."""
    with tempfile.TemporaryFile("w+") as log:
        code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, check=False).returncode
        if code:
            log.seek(0)
            tail = log.read().splitlines()[-25:]
            raise SystemExit(f"setup failed while running: {' '.join(cmd)}\n--- last lines ---\n" + "\n".join(tail))


def build_wheel(python: Path, args: list[str], key: str) -> Path:
    """The wheel for this key: from our own cache, or compiled now (pip's cache never involved)."""
    folder = wheel_home() / key
    found = sorted(folder.glob("llama_cpp_python-*.whl"))
    if found:
        return found[0]
    version = llama_version()
    enabled = " ".join(a[2:-3] for a in args if a.endswith("=ON")) or "no optional instruction set: plain x86-64"
    say(f"compiling llama-cpp-python {version} ({enabled}); ~8 min on 2 cores, once per set of flags")
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    env = {**os.environ, "CMAKE_ARGS": " ".join(args), "FORCE_CMAKE": "1"}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    _quietly([str(python), "-m", "pip", "--disable-pip-version-check", "wheel", "--no-deps", "--no-cache-dir",
              "--no-binary", "llama-cpp-python", "-w", str(partial), f"llama-cpp-python=={version}"], env)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)  # only a finished build is ever found under the key
    return sorted(folder.glob("llama_cpp_python-*.whl"))[0]


def candidates(profile: str) -> list[str]:
    """The requested profile, then each more conservative baseline, without two of the same build."""
    out: list[str] = []
    keys: set[str] = set()
    for candidate in (profile, *FALLBACKS):
        if candidate == "avx2" and not is_x86():
            continue
        key = build_key(current_args(candidate))
        if key not in keys:
            keys.add(key)
            out.append(candidate)
    return out


def _failure_file(key: str) -> Path:
    return wheel_home() / key / "smoke-failed.json"


def failed_here(key: str) -> str | None:
    """Why this build failed its smoke check on this CPU before, if it did (then it is not tried again:
    a machine that segfaults on AMX will do so every time). OFFLINE_EVAL_LLAMA_RETRY=1 tries again."""
    if os.environ.get("OFFLINE_EVAL_LLAMA_RETRY") == "1":
        return None
    try:
        record = json.loads(_failure_file(key).read_text())
    except (OSError, ValueError):
        return None
    return record.get("reason") if record.get("cpu") == cpu_name() else None


def _record_failure(key: str, reason: str) -> None:
    path = _failure_file(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cpu": cpu_name(), "reason": reason}) + "\n")


def usable(profile: str) -> str:
    """The first candidate for ``profile`` that has not failed on this CPU (the last one regardless)."""
    options = candidates(profile)
    for candidate in options:
        reason = failed_here(build_key(current_args(candidate)))
        if reason is None:
            return candidate
        say(f"skipping build profile {candidate}: it failed its smoke check on this CPU before ({reason})")
    return options[-1]


def install(venv: Path, profile: str) -> dict:
    """Make the venv's llama-cpp-python the build for ``profile`` on this machine (no-op when it is)."""
    args = current_args(profile)
    key = build_key(args)
    stamp = read_stamp(venv)
    python = _venv_python(venv)
    if stamp.get("key") == key and _imports(python):
        return stamp
    wheel = build_wheel(python, args, key)
    say(f"installing llama-cpp-python built for this CPU (profile {profile}, build {key})")
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "install", "--no-cache-dir"]
    _quietly([*pip, "--no-deps", "--no-index", "--force-reinstall", str(wheel)])
    _quietly([*pip, "-c", str(CONSTRAINTS), str(wheel)])  # its own dependencies (diskcache, jinja2...), if missing
    stamp = {"key": key, "profile": profile, "cmake_args": args, "wheel": str(wheel), "cpu": cpu_name(),
             "smoke": None}
    _write_stamp(venv, stamp)
    return stamp


def _imports(python: Path) -> bool:
    return subprocess.run([str(python), "-c", "import llama_cpp"], capture_output=True, check=False).returncode == 0


def smoke(venv: Path, extra: list[str]) -> tuple[bool, str]:
    """The smoke decode in a child process, so that a crash is a result and not the end of set-up."""
    proc = subprocess.run([str(_venv_python(venv)), "-m", "offline_eval.smoke", *extra],
                          capture_output=True, text=True, check=False, cwd=REPO)
    if proc.returncode == 0:
        return True, proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "ok"
    if proc.returncode < 0:
        how = f"crashed with signal {-proc.returncode}"
        if -proc.returncode == 11:
            how += " (segmentation fault)"
    else:
        how = f"failed with exit code {proc.returncode}"
    detail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return False, how + (": " + " / ".join(detail) if detail else "")


def check(venv: Path, profile: str, extra: list[str]) -> None:
    """Smoke-check the installed build; on failure rebuild with each baseline in turn and check again."""
    stamp = install(venv, usable(profile))
    if stamp.get("smoke") == "passed" and not os.environ.get("OFFLINE_EVAL_SMOKE_FAULT"):
        say(f"llama.cpp build {stamp['key']} ({stamp['profile']}) already passed its smoke check on this machine")
        return
    tried: list[str] = []
    for candidate in candidates(profile):
        key = build_key(current_args(candidate))
        if (reason := failed_here(key)) is not None:
            tried.append(f"  {candidate}: {reason} (an earlier set-up)")
            continue
        stamp = install(venv, candidate)
        ok, message = smoke(venv, extra)
        if ok:
            stamp["smoke"] = "passed"
            _write_stamp(venv, stamp)
            say(f"llama.cpp smoke check passed (profile {candidate}): {message}")
            return
        _record_failure(key, message)
        tried.append(f"  {candidate}: {message}")
        say(f"llama.cpp smoke check FAILED with profile {candidate}: {message}")
        if candidate != candidates(profile)[-1]:
            say("rebuilding with a more conservative instruction set")
    raise SystemExit(
        f"setup failed: no llama.cpp build works on this machine ({cpu_name()}, {platform.machine()}).\n"
        "Tried:\n" + "\n".join(tried) + "\n"
        "Run `.venv/bin/python -m offline_eval.smoke --verbose` to see llama.cpp's own log, and report it with "
        "the lines above (OFFLINE_EVAL_LLAMA_RETRY=1 tries the failed builds again)."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["flags", "key", "install", "check"])
    parser.add_argument("--venv", type=Path, default=REPO / ".venv")
    parser.add_argument("--profile", default=os.environ.get("OFFLINE_EVAL_LLAMA_BUILD", "auto"), choices=PROFILES)
    parser.add_argument("--gpu-layers", default=None, help="passed to the smoke check (cuda: -1)")
    opts = parser.parse_args(argv)
    if opts.command == "flags":
        print(" ".join(current_args(opts.profile)))
    elif opts.command == "key":
        print(build_key(current_args(opts.profile)))
    elif opts.command == "install":
        install(opts.venv, usable(opts.profile))
    else:
        gpu_layers = opts.gpu_layers or ("-1" if opts.profile == "cuda" else None)
        check(opts.venv, opts.profile, ["--gpu-layers", gpu_layers] if gpu_layers else [])


if __name__ == "__main__":
    main()
