#!/usr/bin/env bash
# Set up offline-eval in a virtual environment inside the repository (.venv), with its default models.
#
# Idempotent: a second run only checks. Order matters: the CPU build of torch goes in first, so that
# nothing pulls a multi-GB CUDA build. llama-cpp-python is compiled for this CPU by
# scripts/llama_build.py (~8 min on 2 cores, once per set of flags; never AMX unless asked, never a
# wheel from pip's cache built with other flags), installed before anything else can pull it, and
# smoke-checked in a child process after the models are in: a build that crashes or fails is rebuilt
# with a more conservative instruction set.
#
#   scripts/setup.sh                 # set up, then install every registered model (~1.8 GB)
#   scripts/setup.sh --gpu cuda      # build llama.cpp with CUDA (needs nvcc); smoke-checked on the GPU
#   OFFLINE_EVAL_VENV=path scripts/setup.sh
#   OFFLINE_EVAL_LLAMA_BUILD=auto|native|avx2|x86-64 scripts/setup.sh   # build profile (default auto)
#   OFFLINE_EVAL_LLAMA_AMX=1 scripts/setup.sh                          # allow AMX kernels in auto
#   OFFLINE_EVAL_CHROMIUM=/path/to/chromium scripts/setup.sh           # the browser test's Chromium
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE="${OFFLINE_EVAL_LLAMA_BUILD:-auto}"
while [ $# -gt 0 ]; do
  case "$1" in
    --gpu) [ $# -ge 2 ] || { echo "setup failed: --gpu needs a value (cuda)" >&2; exit 2; }; GPU="$2"; shift 2 ;;
    --gpu=*) GPU="${1#*=}"; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "setup failed: unknown option $1 (see scripts/setup.sh --help)" >&2; exit 2 ;;
  esac
done
if [ -n "${GPU:-}" ]; then
  [ "$GPU" = cuda ] || { echo "setup failed: --gpu takes 'cuda', not '$GPU'" >&2; exit 2; }
  command -v nvcc >/dev/null || { echo "setup failed: --gpu cuda needs the CUDA toolkit's nvcc on PATH" >&2; exit 2; }
  PROFILE=cuda
fi

VENV="${OFFLINE_EVAL_VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
CONSTRAINTS=scripts/constraints.txt

step() { printf '==> %s\n' "$*"; }
fail() { printf 'setup failed: %s\n' "$*" >&2; exit 1; }

# Run a noisy command; on failure show its last lines instead of a wall of text.
quietly() {
  local log; log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    printf 'setup failed while running: %s\n--- last lines ---\n' "$*" >&2
    tail -n 25 "$log" >&2
    rm -f "$log"; exit 1
  fi
  rm -f "$log"
}

command -v "$PYTHON" >/dev/null || fail "$PYTHON not found (set PYTHON=/path/to/python3.11+)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || fail "Python 3.11 or newer is needed"

if [ ! -x "$VENV/bin/python" ]; then
  step "creating the virtual environment $VENV"
  quietly "$PYTHON" -m venv "$VENV"
fi

if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  step "installing torch (CPU build)"
  quietly "${PIP[@]}" install -c "$CONSTRAINTS" torch
fi

step "llama.cpp for this machine (build profile $PROFILE)"
"$VENV/bin/python" scripts/llama_build.py install --venv "$VENV" --profile "$PROFILE"

# Reinstall the package only when its dependencies changed (the install is editable: code changes
# need no reinstall).
stamp="$VENV/.offline-eval-installed"
want=$(cat pyproject.toml "$CONSTRAINTS" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$VENV/bin/python" -c 'import offline_eval, llama_cpp' 2>/dev/null; then
  step "installing offline-eval and its dependencies (with the [ray] extra: judge workers, and their tests)"
  quietly "${PIP[@]}" install -c "$CONSTRAINTS" -e '.[test,ray]'
  echo "$want" > "$stamp"
else
  step "offline-eval already installed in $VENV"
fi

# The report.html review test drives a real browser: Debian's chromium package, never a browser download.
CHROMIUM="${OFFLINE_EVAL_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  step "chromium for the browser test: $CHROMIUM"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "installing chromium (Debian package) for the report.html browser test"
  quietly apt-get update
  quietly env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
else
  step "no chromium: the report.html browser test will skip (install it: sudo apt-get install chromium)"
fi

step "models (installed and verified once, then only checked)"
"$VENV/bin/offline-eval" models install --all --quiet-if-ready || fail "could not install the models (see above)"
step "llama.cpp smoke check (a child process: load the tiny judge, decode under a grammar, restore a state)"
"$VENV/bin/python" scripts/llama_build.py check --venv "$VENV" --profile "$PROFILE"
step "ready: $VENV/bin/offline-eval"
