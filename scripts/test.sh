#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole
# suite (unit, integration against the real binaries, fuzz smoke). A test
# that skipped fails it too (scripts/check-skips.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh
BUILD_DIR="${BUILD_DIR:-build}"
# Every gtest entry writes its report here (tests/CMakeLists.txt,
# dflash_gtest_entry); check-skips.sh then fails the run if any test
# skipped (but for a missing CUDA device).
RESULTS="$(cd "$BUILD_DIR" && pwd)/test-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
# Not the sanitized twins' entries (label "sanitize": scripts/sanitize-test.sh
# builds and runs them; a folder it configured still lists them).
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 600 \
  -LE '^sanitize$'
bash scripts/check-skips.sh "$RESULTS"
if [ -x scripts/fuzz-smoke.sh ]; then
  bash scripts/fuzz-smoke.sh
fi
