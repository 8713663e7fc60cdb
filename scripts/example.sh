#!/usr/bin/env bash
# The main job on a fresh machine: set up (if not done yet), then evaluate the bundled example with
# the default judge and embedders, print the score table and write the reports to offline-eval-out/.
#
# offline-eval itself exits 1 when the quality gate fails (that is its CI signal). This demo exits 0
# whenever the evaluation ran to the end, passed or failed, and says which; it fails on real errors.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
status=0
.venv/bin/offline-eval evaluate examples/sample.jsonl --out offline-eval-out "$@" || status=$?
case "$status" in
  0) echo "example: the quality gate passed (exit code 0); reports in offline-eval-out/" ;;
  1) echo "example: the evaluation ran and the quality gate failed (exit code 1, as CI would see it);" \
          "offline-eval-out/report.md says which metric and why" ;;
  *) exit "$status" ;;
esac
