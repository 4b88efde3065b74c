#!/usr/bin/env bash
# The CUDA path end to end on a GPU machine (issue 14 item 7), one table:
#   1. build dflash-evald, dflash-eval and roofline_bench against a CUDA
#      libtorch (LIBTORCH, default /opt/libtorch, as the Dockerfile unpacks it;
#      build dir BUILD_DIR, default build-gpu);
#   2. a generated fixture (bench/fixtures/make.sh --size small; needs
#      python3 with torch, DFLASH_FIXTURE_PY);
#   3. one server (--device auto): loads, anchor and replay evals on the CPU
#      (fp32) and on cuda:0 (fp32, and the bf16 default); CPU-vs-CUDA fp32
#      agreement of the draft outcomes and metrics; the allocator's numbers
#      in `info` (bench/prod_shape/gpu_check.py);
#   4. the production benchmark on cuda:0 (bench/prod_shape/production.py over
#      bench/fixtures/make.sh --size ${PROD_SIZE:-qwen3-8b}).
#
#   scripts/gpu-check.sh              all of it (exit 1 on a disagreement)
#   scripts/gpu-check.sh --cpu-only   steps 2-3 on the CPU with the existing
#                                     build (BUILD_DIR, default build): what a
#                                     machine without a GPU can run
#   scripts/gpu-check.sh --no-production   skip step 4
set -euo pipefail
cd "$(dirname "$0")/.."
CPU_ONLY=""
PRODUCTION=1
for a in "$@"; do
  case "$a" in
    --cpu-only) CPU_ONLY=1 ;;
    --no-production) PRODUCTION="" ;;
    *) echo "gpu-check.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
THREADS="${THREADS:-$(nproc)}"

if [ -n "$CPU_ONLY" ]; then
  BUILD_DIR="${BUILD_DIR:-build}"
  [ -f "$BUILD_DIR/build.ninja" ] ||
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$BUILD_DIR" dflash-evald dflash-eval >&2
else
  BUILD_DIR="${BUILD_DIR:-build-gpu}"
  command -v nvidia-smi >/dev/null && nvidia-smi -L >&2 ||
    { echo "gpu-check.sh: no GPU visible (nvidia-smi); use --cpu-only" >&2; exit 1; }
  LIBTORCH="${LIBTORCH:-/opt/libtorch}"
  [ -f "$LIBTORCH/share/cmake/Torch/TorchConfig.cmake" ] ||
    { echo "gpu-check.sh: no CUDA libtorch at $LIBTORCH (set LIBTORCH)" >&2; exit 1; }
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$LIBTORCH" -DDFLASH_BUILD_TESTS=OFF >/dev/null
  grep -q DFLASH_WITH_CUDA "$BUILD_DIR/build.ninja" ||
    { echo "gpu-check.sh: $LIBTORCH is not a CUDA libtorch (no DFLASH_WITH_CUDA)" >&2; exit 1; }
  ninja -C "$BUILD_DIR" dflash-evald dflash-eval roofline_bench >&2
fi

FX="$(bench/fixtures/make.sh --size small)"
echo "## gpu-check: CPU vs CUDA ($(date -u +%F), $THREADS threads)"
status=0
/usr/bin/python3 bench/prod_shape/gpu_check.py --build "$BUILD_DIR" --fixture "$FX" \
  --threads "$THREADS" ${CPU_ONLY:+--cpu-only} || status=$?

if [ -n "$PRODUCTION" ] && [ -z "$CPU_ONLY" ]; then
  PFX="$(bench/fixtures/make.sh --size "${PROD_SIZE:-qwen3-8b}")"
  echo
  echo "## gpu-check: production shape on cuda:0 (bf16)"
  /usr/bin/python3 bench/prod_shape/production.py --build "$BUILD_DIR" --fixture "$PFX" \
    --threads "$THREADS" --device cuda:0 --dtype bf16 || status=$?
fi
exit "$status"
