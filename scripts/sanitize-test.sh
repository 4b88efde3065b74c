#!/usr/bin/env bash
# The suite's unit tests, the two binaries and one integration test, linked
# against AddressSanitizer + UndefinedBehaviorSanitizer builds of the server
# and client code, then run. The server and client code is instrumented; the
# tests' own code is not (tests/CMakeLists.txt says why).
# Issue 28: this stage took 3745 s of a CI run that hit its limit; the set
# and the flags took it to about 1600 s cold on 2 cores, then 712 s, then
# 380 s with the sanitized twins below (BENCHMARKS.md "CI stages"). The
# fuzz targets run under ASan in scripts/test.sh (fuzz-smoke). By hand:
#   scripts/sanitize-test.sh                 # the set below, in build/
#   SANITIZE_ALL=1 scripts/sanitize-test.sh  # every test, all instrumented, build-sanitize/
#   scripts/sanitize-test.sh -R token        # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

# The set is tests/CMakeLists.txt's: target sanitize_set builds it, ctest's
# label "sanitize" runs it (every unit test, and one integration test that
# drives the sanitized server and client end to end). It lives in the
# Release build folder as sanitized twins (cmake/sanitize_twins.cmake): the
# libraries and binaries again with ASan + UBSan at -O0 -g1, the test
# objects the Release build compiled, linked against them. The test code
# compiles once for both stages.
if [ -n "${SANITIZE_ALL:-}" ]; then
  BUILD_DIR="${SANITIZE_BUILD_DIR:-build-sanitize}"
  FILTER=()
  # Every target instrumented, in its own folder; -O0 with line tables
  # only (-g1): ASan and UBSan at -O2 -g cost about 2x the compile time of
  # -O0 -g1 per file (35 s vs 18 s for one torch-heavy test, measured).
  BUILD_DIR="$BUILD_DIR" BUILD_TYPE=Debug bash scripts/build.sh -DDFLASH_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1
else
  BUILD_DIR="${BUILD_DIR:-build}"
  FILTER=(-L '^sanitize$')
  BUILD_DIR="$BUILD_DIR" BUILD_TARGETS="sanitize_set" bash scripts/build.sh \
    -DDFLASH_SANITIZE_TWINS=ON
fi
# libtorch is not built with ASan: its own allocations and intentional
# leaks at exit are not ours to report; any error below still fails.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:detect_odr_violation=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
RESULTS="$(cd "$BUILD_DIR" && pwd)/test-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 1800 \
  "${FILTER[@]}" "$@"
bash scripts/check-skips.sh "$RESULTS"  # a skipped test fails CI (scripts/test.sh)
