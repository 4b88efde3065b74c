#!/usr/bin/env bash
# The whole suite built with AddressSanitizer + UndefinedBehaviorSanitizer
# (DFLASH_SANITIZE=ON) in its own build directory, then run. .ci/run runs it
# after scripts/test.sh (a full second build on a cold machine, ~20 min on 2
# cores; ccache makes later ones quick). By hand:
#   scripts/sanitize-test.sh              # build-sanitize/, all tests
#   scripts/sanitize-test.sh -R token     # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${SANITIZE_BUILD_DIR:-build-sanitize}"
BUILD_DIR="$BUILD_DIR" BUILD_TYPE=RelWithDebInfo bash scripts/build.sh -DDFLASH_SANITIZE=ON
# libtorch is not built with ASan: its own allocations and intentional
# leaks at exit are not ours to report; any error below still fails.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:detect_odr_violation=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
RESULTS="$(cd "$BUILD_DIR" && pwd)/test-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
GTEST_OUTPUT="xml:$RESULTS/" \
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 1800 "$@"
bash scripts/check-skips.sh "$RESULTS"  # a skipped test fails CI (scripts/test.sh)
