#!/usr/bin/env bash
# "Checkpoint file to first result", the training loop's headline figure:
# with the target and a dataset resident, a drafter checkpoint is written
# (copied under a temporary name, then renamed into place, as docs/server.md
# asks) and evaluated at once with `dflash-eval eval --checkpoint` (one
# sample, one block); the time from the rename to the client's exit, and
# the server's load_seconds for the drafter.
#
#   bench/prod_shape/first_result.sh FIXTURE [THREADS]
# FIXTURE: a bench/fixtures/make.sh folder (drafter/, target/, dataset/).
# Three servers, one per mode: "copy" (--no-mmap), "default" (a fresh file
# is copied: --mmap-min-age-seconds 10) and "mapped" (--mmap-min-age-seconds
# 0: the trainer renames into place). Everything resident in bf16, the
# fixture's stored dtype, so that mapping applies. Prints one line per mode.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FIX="$(cd "$1" && pwd)"
THREADS="${2:-2}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
EVALD="${EVALD:-$BUILD_DIR/server/dflash-evald}"
CLI="${CLI:-$BUILD_DIR/client/dflash-eval}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

run_mode() {
  local mode="$1"; shift
  local state="$WORK/$mode" ckpts="$WORK/$mode-ckpt"
  mkdir -p "$state" "$ckpts"
  "$EVALD" --state-dir "$state" --port-file "$state/port" --data-root "$FIX" \
    --data-root "$ckpts" --device cpu --threads "$THREADS" --log-level warn "$@" &
  local pid=$!
  for _ in $(seq 300); do [ -s "$state/port" ] && break; sleep 0.1; done
  local cli=("$CLI" --server "127.0.0.1:$(cat "$state/port")")
  "${cli[@]}" load-target "$FIX/target" --name t --dtype bf16 >/dev/null
  "${cli[@]}" load-dataset "$FIX/dataset" --name d --dtype bf16 --max-samples 1 >/dev/null
  cp -r "$FIX/drafter" "$ckpts/step.tmp"
  local start end
  start=$(date +%s.%N)
  mv "$ckpts/step.tmp" "$ckpts/step"
  "${cli[@]}" --json eval --checkpoint "$ckpts/step" --dataset d --max-samples 1 \
    --max-blocks 1 >"$state/eval.json"
  end=$(date +%s.%N)
  python3 - "$mode" "$start" "$end" "$state/eval.json" <<'EOF'
import json, sys
mode, start, end, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
res = r.get("result", r)
print(f"{mode}: checkpoint file to first result {end - start:.2f} s "
      f"(setup {res.get('setupSeconds', 0):.2f} s, compute {res.get('computeSeconds', 0):.2f} s)")
EOF
  kill "$pid"; wait "$pid" || true
}

run_mode copy --no-mmap
run_mode default
run_mode mapped --mmap-min-age-seconds 0
