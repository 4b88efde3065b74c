#!/usr/bin/env bash
# dflash-evald vs the per-block Python harness, side by side (BENCHMARKS.md).
#   bench/run.sh             full run (~15 min on a 2-core machine)
#   bench/run.sh --quick     fewer samples and runs (~3-4 min)
#   bench/run.sh --smoke     tiny fixture: baseline and service agree (S1, S2)
#   bench/run.sh --markdown  full run, then regenerate BENCHMARKS.md
#   bench/run.sh --production  production shapes (bench/fixtures/make.sh --size
#                            qwen3-8b, made once): loads vs a plain read, peak RSS
#                            vs resident, anchor and replay time per block, fraction
#                            of the matmul peak (bench/prod_shape/production.py).
#                            PROD_SIZE=qwen3-8b-small for the reduced shapes.
# Env: BUILD_DIR (default build), BENCH_THREADS (default: all cores),
#      DFLASH_BENCH_CACHE (fixture cache, default ~/.cache/dflash-bench).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
THREADS="${BENCH_THREADS:-$(nproc)}"
MODE=full
MARKDOWN=""
for a in "$@"; do
  case "$a" in
    --quick) MODE=quick ;;
    --smoke) MODE=smoke ;;
    --markdown) MARKDOWN=1 ;;
    --production) MODE=production ;;
    *) echo "run.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  ninja -C "$BUILD_DIR" dflash-evald dflash-eval roofline_bench >&2
fi

if [ "$MODE" = production ]; then
  FX="$(bench/fixtures/make.sh --size "${PROD_SIZE:-qwen3-8b}")"
  exec /usr/bin/python3 bench/prod_shape/production.py --build "$BUILD_DIR" --fixture "$FX" \
    --threads "$THREADS" ${BENCH_OUT:+--json "$BENCH_OUT"}
fi

case "$MODE" in
  smoke) FX="$(bench/fixtures/make.sh --size tiny)"
         ARGS=(--smoke --samples 6 --s1-blocks 4 --runs 1) ;;
  quick) FX="$(bench/fixtures/make.sh --size bench)"
         ARGS=(--samples 16 --s1-blocks 8 --runs 2 --baseline-runs 1 --checkpoints 5) ;;
  full)  FX="$(bench/fixtures/make.sh --size bench)"
         ARGS=(--samples 64 --s1-blocks 8 --runs 3 --baseline-runs 1 --checkpoints 5) ;;
esac
[ -n "$MARKDOWN" ] && ARGS+=(--scaling)

OUT="${BENCH_OUT:-$(mktemp /tmp/dflash-bench-results.XXXXXX.json)}"
/usr/bin/python3 bench/bench.py --build "$BUILD_DIR" --fixture "$FX" --threads "$THREADS" \
  "${ARGS[@]}" --json "$OUT" >/dev/null
[ "$MODE" = smoke ] && { rm -f "$OUT"; echo "bench smoke: baseline and service agree"; exit 0; }
if [ -n "$MARKDOWN" ]; then
  /usr/bin/python3 bench/report.py "$OUT" --markdown BENCHMARKS.md
else
  /usr/bin/python3 bench/report.py "$OUT"
fi
echo "results: $OUT"
