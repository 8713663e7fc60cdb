#!/usr/bin/env bash
# Set up offline-eval in a virtual environment inside the repository (.venv), with its default models.
#
# Idempotent: a second run only checks. Order matters: the CPU build of torch goes in first, so that
# nothing pulls a multi-GB CUDA build; llama-cpp-python compiles from source once (~8 min on 2 cores)
# and pip reuses the built wheel afterwards.
#
#   scripts/setup.sh            # set up, then install every registered model (~1.8 GB)
#   OFFLINE_EVAL_VENV=path scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

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

# Reinstall the package only when its dependencies changed (the install is editable: code changes
# need no reinstall).
stamp="$VENV/.offline-eval-installed"
want=$(cat pyproject.toml "$CONSTRAINTS" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$VENV/bin/python" -c 'import offline_eval, llama_cpp' 2>/dev/null; then
  if ! "$VENV/bin/python" -c 'import llama_cpp' 2>/dev/null; then
    step "installing llama-cpp-python (compiles from source the first time: ~8 min on 2 cores)"
  fi
  step "installing offline-eval and its dependencies"
  quietly "${PIP[@]}" install -c "$CONSTRAINTS" -e '.[test]'
  echo "$want" > "$stamp"
else
  step "offline-eval already installed in $VENV"
fi

step "models (installed and verified once, then only checked)"
"$VENV/bin/offline-eval" models install --all --quiet-if-ready || fail "could not install the models (see above)"
step "ready: $VENV/bin/offline-eval"
