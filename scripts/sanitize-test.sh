#!/usr/bin/env bash
# The suite's unit tests, the two binaries and the integration tests that
# have found sanitizer bugs, built with AddressSanitizer + UndefinedBehavior-
# Sanitizer (DFLASH_SANITIZE=ON) in their own build directory, then run
# (issue 28: a full second build of every integration test cost CI ~20 min
# on 2 cores and found nothing the unit tests and these did not). The fuzz
# targets run under ASan in scripts/test.sh (fuzz-smoke). By hand:
#   scripts/sanitize-test.sh                 # build-sanitize/, the set below
#   SANITIZE_ALL=1 scripts/sanitize-test.sh  # every test, as before
#   scripts/sanitize-test.sh -R token        # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

# Every gtest binary outside tests/integration and tests/fleet (unit tests,
# each against real files), plus the integration tests that drive the
# sanitized server through the most code: an eval end to end, sampled
# acceptance (its interval read past a vector once), DFlash 2.
INTEGRATION=(eval_e2e_test served_acceptance_e2e_test dflash2_e2e_test)
mapfile -t UNIT < <(find tests -name '*_test.cc' -not -path 'tests/integration/*' \
  -not -path 'tests/fleet/*' -printf '%f\n' | sed 's/\.cc$//' | sort)
TESTS=("${UNIT[@]}" "${INTEGRATION[@]}")

BUILD_DIR="${SANITIZE_BUILD_DIR:-build-sanitize}"
if [ -n "${SANITIZE_ALL:-}" ]; then
  FILTER=()
else
  export BUILD_TARGETS="dflash-evald dflash-eval ${TESTS[*]}"
  FILTER=(-R "^($(IFS='|'; echo "${TESTS[*]}"))\$")
fi
BUILD_DIR="$BUILD_DIR" BUILD_TYPE=RelWithDebInfo bash scripts/build.sh -DDFLASH_SANITIZE=ON
# libtorch is not built with ASan: its own allocations and intentional
# leaks at exit are not ours to report; any error below still fails.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:detect_odr_violation=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
RESULTS="$(cd "$BUILD_DIR" && pwd)/test-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
GTEST_OUTPUT="xml:$RESULTS/" \
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 1800 \
  "${FILTER[@]}" "$@"
bash scripts/check-skips.sh "$RESULTS"  # a skipped test fails CI (scripts/test.sh)
