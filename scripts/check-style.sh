#!/usr/bin/env bash
# Style gate (CI): file length and clang-format on every C++ file of the
# tree (fast), and clang-tidy (.clang-tidy) on the server and client .cc
# files changed since $STYLE_BASE (default: the previous commit). clang-tidy
# reads the build's compile_commands.json, so run this after a build. Exits
# 1 on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"

# No C++ file of the server, client, tests or benchmarks over 500 lines
# (issue 27): a file that long holds more than one concept, and is split by
# what it holds (a test file by what it tests, its shared setup in a helper
# of its folder). Checked on the whole tree, not only on changed files, since
# a file grows a little at a time. Generated code (protoc's *.pb.*, any
# *_gen.*) is excepted; none is tracked there today. Functions are held to 80
# lines on the whole tree by check_function_length.py (Universal Ctags) and,
# on changed files, by clang-tidy (readability-function-size, .clang-tidy).
MAX_FILE_LINES=500
# One wc over all of them (xargs), then the offenders: "N path" lines.
too_long="$(git ls-files -z 'server/*.cc' 'server/*.h' 'client/*.cc' 'client/*.h' \
              'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'bench/*.h' |
  grep -z -v -E '(\.pb\.(cc|h)|_gen\.(cc|h))$' | xargs -0 -r wc -l |
  awk -v max="$MAX_FILE_LINES" '$2 != "total" && $1 > max')"
if [ -n "$too_long" ]; then
  while read -r n f; do
    echo "check-style: $f has $n lines (at most $MAX_FILE_LINES: split it by what it holds)" >&2
  done <<<"$too_long"
  exit 1
fi
echo "check-style: no server/client/tests/bench file over $MAX_FILE_LINES lines"

# The same 500 lines for the Python sources (issue 27): the reference and its
# fixtures (tools/), the scripts, the benchmarks, the Python client and the
# tests' fixture scripts. Generated code (*_gen.py, gen_records.py's output)
# is excepted.
too_long_py="$(git ls-files -z 'tools/*.py' 'scripts/*.py' 'bench/*.py' 'client/python/*.py' \
  'tests/*.py' | grep -z -v -E '_gen\.py$' | xargs -0 -r wc -l |
  awk -v max="$MAX_FILE_LINES" '$2 != "total" && $1 > max')"
if [ -n "$too_long_py" ]; then
  while read -r n f; do
    echo "check-style: $f has $n lines (at most $MAX_FILE_LINES: split it by what it holds)" >&2
  done <<<"$too_long_py"
  exit 1
fi
echo "check-style: no Python file over $MAX_FILE_LINES lines"

# No function over 80 lines, C++ and Python, on the whole tree (issue 27).
python3 scripts/check_function_length.py --max 80

mapfile -t all < <(git ls-files '*.cc' '*.h' | grep -E '^(server|client|tests|bench|proto)/')
if ! clang-format --dry-run -Werror "${all[@]}" 2>/tmp/dflash-format.log; then
  grep -E '^[^ ].*: (error|warning):' /tmp/dflash-format.log | cut -d: -f1 | sort -u |
    sed 's/^/check-style: not formatted: /' >&2
  echo "check-style: run clang-format -i on the files above" >&2
  exit 1
fi
echo "check-style: ${#all[@]} files formatted"

base="${STYLE_BASE:-HEAD~1}"
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "check-style: no $base to diff against (shallow clone?); clang-tidy skipped"
  exit 0
fi
mapfile -t changed < <(git diff --name-only --diff-filter=AM "$base" -- 'server/*.cc' 'client/*.cc' |
                       grep -v '_fuzz\.cc$' || true)
if [ "${#changed[@]}" -eq 0 ]; then
  echo "check-style: no server/client .cc changed since $base"
  exit 0
fi
echo "check-style: clang-tidy on ${#changed[@]} file(s) changed since $base"
rc=0
# The build's precompiled headers (cmake/pch.cmake) are GCC's; clang would
# take the .gch for its own and fail, so clang-tidy reads the compile
# commands without them (it parses the headers instead).
tidy_db="$(mktemp -d)"
trap 'rm -rf "$tidy_db"' EXIT
# A unity batch (cmake/unity.cmake) becomes one entry per source it includes,
# found through the batch's own -I directories, with the batch's command.
python3 - "$BUILD_DIR/compile_commands.json" "$tidy_db/compile_commands.json" <<'PY'
import json, re, sys
sys.path.insert(0, "scripts")
from unity_batches import batch_sources
out = []
for entry in json.load(open(sys.argv[1])):
    if "_san.dir/" in entry["command"]:
        continue  # a sanitized twin's copy of a command (cmake/sanitize_twins.cmake)
    entry["command"] = re.sub(r" -Winvalid-pch| -include \S*cmake_pch\.hxx", "", entry["command"])
    f = entry["file"]
    out += [dict(entry, file=src, command=entry["command"].replace(f, src))
            for src in batch_sources(entry)]
json.dump(out, open(sys.argv[2], "w"))
PY
# One clang-tidy per file, as many at once as there are cores (a torch-heavy
# file takes ~30 s alone).
mkdir -p "$tidy_db/logs"
printf '%s\n' "${changed[@]}" | xargs -r -d '\n' -P "$(nproc)" -I{} sh -c \
  'log="$0/logs/$(echo "$1" | tr / _).log"
   clang-tidy -p "$0" --quiet "$1" >"$log" 2>&1 || echo "$1" >>"$0/failed"' "$tidy_db" {}
cat "$tidy_db"/logs/*.log | grep -v ' warnings generated\.$' || true
[ -s "$tidy_db/failed" ] && rc=1
exit "$rc"  # non-zero when a check fired (WarningsAsErrors: all)
