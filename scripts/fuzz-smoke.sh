#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs
# each for a bounded time from a small seed corpus written here. Exits
# non-zero when a target fails to build or the fuzzer finds a crash, a
# sanitizer report, a leak or a timeout; the reproducer is left in
# build-fuzz/fuzz-artifacts/.
#
#   scripts/fuzz-smoke.sh                 # 15 s per target
#   FUZZ_SECONDS=300 scripts/fuzz-smoke.sh
#
# Env: FUZZ_SECONDS (per target, default 15), FUZZ_BUILD_DIR (default
# <repo>/build-fuzz), FUZZ_JOBS (ninja -j, default 2), FUZZ_PARALLEL
# (targets run at once, default: the cores).
# Targets are those server/CMakeLists.txt declares with dflash_fuzzer();
# to give one seeds, add a seed_<target> function below.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECS="${FUZZ_SECONDS:-15}"
# As scripts/build.sh: hits across clones (with -g the compile's folder is
# hashed unless NOHASHDIR), and each header hashed once per build.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1 CCACHE_INODECACHE=1

# ---- seeds --------------------------------------------------------------

# 8-byte little-endian integer.
le64() {
  local n=$1 i
  for i in 0 1 2 3 4 5 6 7; do
    printf "\\x$(printf %02x $(( (n >> (8 * i)) & 255 )))"
  done
}
# st_file HEADER DATA(printf %b escapes) [LENGTH]: a safetensors file.
st_file() {
  le64 "${3:-${#1}}"
  printf '%s' "$1"
  printf '%b' "$2"
}

seed_safetensors_header_fuzz() {
  local d=$1
  local good='{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[8,12]}}'
  st_file "$good" '\x00\x00\x80\x3f\x00\x00\x00\x40\x80\x3f\x00\x40' > "$d/valid"
  printf '%s' "$good" > "$d/valid_header_json"
  st_file '{}' '' > "$d/empty"
  st_file '{"z":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}' \
    '\x01\x00\x00\x00\x00\x00\x00\x00' > "$d/zero_and_scalar"
  st_file '{"a":{"dtype":"F32","shape":[5,4],"data_offsets":[0,100]}}' "$(printf '\\x00%.0s' {1..100})" > "$d/count_mismatch"
  st_file '{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}}' \
    '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' > "$d/overlap"
  st_file '{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}}' \
    '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' > "$d/gap"
  st_file '{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}' '' > "$d/bad_json"
  st_file '{}' '' 4294967296 > "$d/length_past_eof"
  printf 'abc' > "$d/short"
}

seed_drafter_config_fuzz() {
  local d=$1
  cat > "$d/zlab_4x" <<'JSON'
{"architectures": ["DFlashDraftModel"], "hidden_size": 64, "num_attention_heads": 4,
 "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "num_hidden_layers": 2,
 "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 32,
 "rms_norm_eps": 1e-6, "rope_theta": 10000, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
 "original_max_position_embeddings": 4096}, "block_size": 16, "torch_dtype": "bfloat16",
 "dflash_config": {"target_layer_ids": [1, 3, 5, 7, 9], "mask_token_id": 511}}
JSON
  cat > "$d/hf5_llama3" <<'JSON'
{"hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 48, "num_hidden_layers": 1,
 "rope_parameters": {"rope_theta": 500000, "rope_type": "llama3", "factor": 8.0,
 "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
 "dtype": "float32", "num_target_layers": 36, "dflash_config": {"mask_token_id": 7}}
JSON
  printf '{"hidden_size": "x"}' > "$d/bad_type"
}

seed_dataset_manifest_fuzz() {
  local d=$1
  printf '{"name": "demo", "hidden_size": 64, "features": {"hidden_states": [1, 3, 5, 7, 9]}}' > "$d/dflash"
  printf '{"features": {"aux_hidden_state": [1, 16, 31, 46], "hidden_state": [61]}}' > "$d/eagle3"
  printf '{"features": {"hidden_states": [1, 1]}}' > "$d/duplicate"
}

seed_shard_index_fuzz() {
  local d=$1
  printf '{"metadata": {"total_size": 24}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}' > "$d/two_shards"
  printf '{"weight_map": {"w": "sub/../sub/w.safetensors"}}' > "$d/normalised"
  printf '{"weight_map": {"w": "../outside.safetensors"}}' > "$d/escape"
  printf '{"weight_map": {"w": "/etc/passwd"}}' > "$d/absolute"
  printf '{"weight_map": {"w": 1, "v": ""}}' > "$d/wrong_types"
  printf '[{"weight_map": {}}]' > "$d/not_object"
}

seed_zip_archive_fuzz() {
  python3 - "$1" <<'PY'
import sys, zipfile
d = sys.argv[1]
pkl = b"\x80\x02}q\x00."
for name, method, zip64 in (("stored", zipfile.ZIP_STORED, False),
                            ("deflated", zipfile.ZIP_DEFLATED, False),
                            ("zip64", zipfile.ZIP_DEFLATED, True)):
    with zipfile.ZipFile(f"{d}/{name}", "w", compression=method) as z:
        for rec, data in (("archive/data.pkl", pkl), ("archive/byteorder", b"little"),
                          ("archive/data/0", bytes(range(64)) * 4), ("archive/version", b"3\n")):
            info = zipfile.ZipInfo(rec)
            info.compress_type = method
            with z.open(info, "w", force_zip64=zip64) as f:
                f.write(data)
PY
}

# ---- build --------------------------------------------------------------

if ! command -v clang++ >/dev/null; then
  echo "fuzz-smoke: clang++ not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
CC=clang CXX=clang++ cmake -G Ninja -S "$ROOT" -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFLASH_BUILD_FUZZERS=ON \
  -DDFLASH_BUILD_TESTS=OFF -DDFLASH_BUILD_SERVER=ON >/dev/null
mapfile -t TARGETS < <(grep -v '^$' "$BUILD/fuzz_targets.txt")
if [ "${#TARGETS[@]}" -eq 0 ]; then
  echo "fuzz-smoke: no fuzz targets declared" >&2
  exit 2
fi
ninja -C "$BUILD" -j "${FUZZ_JOBS:-2}" "${TARGETS[@]}"

# ---- run ----------------------------------------------------------------

# Targets run FUZZ_PARALLEL at a time (default: the cores), each on one core:
# the same time per target, a fraction of the wall time (issue 28).
run_one() {
  local t=$1 seeds="$BUILD/fuzz-seeds/$1" corpus="$BUILD/fuzz-corpus/$1"
  local artifacts="$BUILD/fuzz-artifacts" log="$BUILD/fuzz-logs/$1.log" bin
  rm -rf "$seeds"
  mkdir -p "$seeds" "$corpus" "$artifacts" "$(dirname "$log")"
  if declare -F "seed_$t" >/dev/null; then "seed_$t" "$seeds"; fi
  bin="$(find "$BUILD" -type f -name "$t" -perm -u+x | head -n1)"
  echo "fuzz-smoke: $t for ${SECS}s ($(ls "$seeds" | wc -l) seeds)"
  local rc=0
  "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
    "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$log.rc"
}
PARALLEL="${FUZZ_PARALLEL:-$(nproc)}"
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n || true; done
  rm -f "$BUILD/fuzz-logs/$t.log.rc"
  run_one "$t" &
done
wait
failed=()
for t in "${TARGETS[@]}"; do
  log="$BUILD/fuzz-logs/$t.log"
  if [ "$(cat "$log.rc" 2>/dev/null)" = 0 ]; then
    echo "fuzz-smoke: $t: $(grep -E '^stat::number_of_executed_units' "$log" | tail -n1)"
  else
    echo "fuzz-smoke: $t FAILED (log: $log)" >&2
    tail -n 40 "$log" >&2
    failed+=("$t")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz-smoke: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz-smoke: ${#TARGETS[@]} target(s) ran clean"
