#!/usr/bin/env bash
# Production-shape check (issue 12 item 7; not part of CI): a random-weight
# DFlash 2 drafter with the released config's shapes (H 6656, 5 layers,
# V 202048; 5.54 GB bf16) validates, loads in bf16 beside a bf16 target of the
# same vocabulary (5.38 GB) and evaluates one anchor block in the real
# dflash-evald; prints a markdown section for BENCHMARKS.md.
#
#   bench/prod_shape/run.sh                 full scale: ~11 GB of files (generated once,
#                                           ~3-5 min), ~17 GiB RAM at the peak (11 GB
#                                           resident + the drafter file mapped while loading)
#   bench/prod_shape/run.sh --scale small   same code path, H 512, V 8192 (< 1 min)
#   bench/prod_shape/run.sh --scale medium  H 2048, V 65536 (0.6 + 0.5 GB; a few minutes)
#   options: --threads N (default: all cores), --cold (drop the drafter file's
#            pages before the plain read and the load), --json FILE, --dry-run
#            (print the tensor list and byte totals, write nothing), --validate-only
#            (a header-only sparse drafter of the scale through `dflash-eval validate`;
#            no data written, seconds)
# Env: BUILD_DIR (default build), BENCH_SKIP_BUILD=1,
#      DFLASH_PRODSHAPE_CACHE (default ~/.cache/dflash-prodshape; files are
#      generated once per scale and seed and reused).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
BUILD_DIR="${BUILD_DIR:-build}"
PY="${DFLASH_FIXTURE_PY:-/usr/bin/python3}"
SCALE=full
THREADS="$(nproc)"
SEED=0
EXTRA=()
DRY=""
VONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --cold) EXTRA+=(--cold); shift ;;
    --json) EXTRA+=(--json "$2"); shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --validate-only) VONLY=1; shift ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$SCALE" in full|medium|small) ;; *) echo "run.sh: --scale full|medium|small" >&2; exit 2 ;; esac
if [ -n "$DRY" ]; then
  exec "$PY" bench/prod_shape/make_prod_shape.py --dry-run --scale "$SCALE"
fi

if [ -n "$VONLY" ]; then
  if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
    [ -f "$BUILD_DIR/build.ninja" ] || cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$BUILD_DIR" dflash-evald dflash-eval >&2
  fi
  TMP="$(mktemp -d /tmp/dflash-prodshape-hdr.XXXXXX)"
  trap 'rm -rf "$TMP"' EXIT
  "$PY" bench/prod_shape/make_prod_shape.py "$TMP" --scale "$SCALE" --header-only >&2
  "$PY" bench/prod_shape/prod_shape.py --build "$BUILD_DIR" --fixture "$TMP" \
    --threads "$THREADS" --validate-only
  exit $?
fi

CACHE="${DFLASH_PRODSHAPE_CACHE:-$HOME/.cache/dflash-prodshape}"
VERSION=1  # bump when make_prod_shape.py's output changes
DIR="$CACHE/$SCALE-s$SEED-v$VERSION"

if [ "$SCALE" = full ]; then
  # Disk: 5.54 GB drafter + 5.38 GB target + ~1 MB dataset. RAM: 5.54 GB
  # drafter + 5.38 GB target resident, plus what a load maps transiently.
  need_disk=$((12 * 1024 * 1024))  # KiB
  if [ ! -f "$DIR/.complete" ]; then
    mkdir -p "$CACHE"
    avail=$(df -Pk "$CACHE" | awk 'NR==2 {print $4}')
    if [ "$avail" -lt "$need_disk" ]; then
      echo "run.sh: $CACHE has $((avail / 1024 / 1024)) GiB free; the full scale writes ~11 GB" >&2
      exit 1
    fi
  fi
  mem=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
  if [ "$mem" -lt $((17 * 1024 * 1024)) ] && [ "${PRODSHAPE_FORCE:-0}" != 1 ]; then
    echo "run.sh: $((mem / 1024 / 1024)) GiB available; the full scale needs ~17 GiB" \
         "(PRODSHAPE_FORCE=1 to try anyway)" >&2
    exit 1
  fi
fi

if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  ninja -C "$BUILD_DIR" dflash-evald dflash-eval >&2
fi

if [ ! -f "$DIR/.complete" ]; then
  echo "run.sh: generating the '$SCALE' files in $DIR (once)" >&2
  rm -rf "$DIR.tmp"
  mkdir -p "$CACHE"
  "$PY" bench/prod_shape/make_prod_shape.py "$DIR.tmp" --scale "$SCALE" --seed "$SEED" >&2
  rm -rf "$DIR"
  mv "$DIR.tmp" "$DIR"
  touch "$DIR/.complete"
fi

exec "$PY" bench/prod_shape/prod_shape.py --build "$BUILD_DIR" --fixture "$DIR" \
  --threads "$THREADS" "${EXTRA[@]}"
