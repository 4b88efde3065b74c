#!/usr/bin/env bash
# The sanitizer stage proves nothing if its binaries hold no instrumented
# code (a twin built without its flags links and passes all the same), so
# each binary given must call into both runtimes: ASan's load checks and
# UBSan's handlers, referenced only by instrumented objects (the test code
# itself is not instrumented: tests/CMakeLists.txt).
set -euo pipefail
rc=0
for bin in "$@"; do
  symbols="$(nm -u "$bin")"
  for needed in __asan_report_load __ubsan_handle_; do
    if ! grep -q "$needed" <<<"$symbols"; then
      echo "check_sanitized: $bin: no reference to $needed* (not instrumented)" >&2
      rc=1
    fi
  done
done
[ "$rc" = 0 ] && echo "check_sanitized: $# binaries instrumented (ASan and UBSan)"
exit "$rc"
