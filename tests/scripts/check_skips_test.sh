#!/usr/bin/env bash
# scripts/check-skips.sh on gtest XML reports written here in gtest's own
# format: only the CUDA reasons pass; any other skip, a skip without a
# message (a failed suite set-up) or no reports at all fail, naming the test.
#   tests/scripts/check_skips_test.sh scripts/check-skips.sh
set -euo pipefail
CHECK="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# report DIR BINARY MESSAGE...: one suite, a passing case and one skipped
# case per MESSAGE ("" = skipped with no message).
report() {
  local dir="$1" binary="$2"
  shift 2
  mkdir -p "$dir"
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo '<testsuites tests="2" failures="0" disabled="0" errors="0" name="AllTests">'
    echo '  <testsuite name="FooTest" tests="2" failures="0" disabled="0" skipped="1" errors="0">'
    echo '    <testcase name="Runs" status="run" result="completed" classname="FooTest" />'
    local i=0
    for message in "$@"; do
      i=$((i + 1))
      echo "    <testcase name=\"Skips$i\" status=\"run\" result=\"skipped\" classname=\"FooTest\">"
      if [ -n "$message" ]; then
        echo "      <skipped message=\"../tests/foo_test.cc:$i&#x0A;$message\"><![CDATA[../tests/foo_test.cc:$i"
        echo "$message]]></skipped>"
      else
        echo '      <skipped message=""><![CDATA[]]></skipped>'
      fi
      echo '    </testcase>'
    done
    echo '  </testsuite>'
    echo '</testsuites>'
  } >"$dir/$binary.xml"
}

fail=0
# expect RC DIR [TEXT]: check-skips on DIR exits RC and, if given, prints TEXT.
expect() {
  local rc=0
  bash "$CHECK" "$2" >"$WORK/out" 2>&1 || rc=$?
  if [ "$rc" -ne "$1" ] || { [ $# -ge 3 ] && ! grep -qF -- "$3" "$WORK/out"; }; then
    echo "FAIL: check-skips on $2 exited $rc (expected $1${3:+, printing '$3'}):"
    cat "$WORK/out"
    fail=1
  fi
}

report "$WORK/cuda" weight_map_test "no CUDA device"
report "$WORK/cuda" server_cli_test "this machine has CUDA"
expect 0 "$WORK/cuda" "allowed skip weight_map_test: FooTest.Skips1 (no CUDA device)"

report "$WORK/torch" weight_map_test "no CUDA device"
report "$WORK/torch" drafter_pyref_test "/usr/bin/python3 has no torch: No module named 'torch'"
expect 1 "$WORK/torch" "drafter_pyref_test: FooTest.Skips1: /usr/bin/python3 has no torch"

report "$WORK/near" foo_test "no CUDA device here either"
expect 1 "$WORK/near" "foo_test: FooTest.Skips1: no CUDA device here either"

report "$WORK/setup" foo_test ""
expect 1 "$WORK/setup" "did its suite set-up fail?"

report "$WORK/clean" foo_test
expect 0 "$WORK/clean" "no unexpected skips in 1 report(s)"

mkdir -p "$WORK/empty"
expect 1 "$WORK/empty" "no gtest XML reports"

echo '<testsuites><testsuite' >"$WORK/broken.xml" && mkdir -p "$WORK/broken" && mv "$WORK/broken.xml" "$WORK/broken/foo_test.xml"
expect 1 "$WORK/broken" "foo_test: unreadable report"

[ "$fail" -eq 0 ] && echo "check-skips: all cases as expected"
exit "$fail"
