#!/usr/bin/env bash
# The CUDA path end to end on the GPU test host as it is (issue 28 item 1):
# pip's torch (its libtorch, headers and CMake config), nvcc, CMake, Ninja,
# and no gRPC/protobuf/abseil/spdlog: those come from the bundle that
# scripts/gpu-bundle.sh made here and that travels with the tree
# (.gpu-bundle/deps.tar.gz). One call; every step is timed and recorded, a
# failed step does not stop the ones that do not need it.
#
#   scripts/gpu-check.sh [OUT]            everything; OUT (or $GPU_CHECK_OUT,
#                                         default gpu-check-out) gets report.json,
#                                         gpu-check.log and each step's JSON
#   scripts/gpu-check.sh --probe [OUT]    the host's facts, unpack, configure,
#                                         build the client and one torch library
#   scripts/gpu-check.sh --rehearse [OUT]    --probe on a machine without a GPU
#                                         (CI): Debian's CPU libtorch stands in
#                                         for torch's; the bundle is the same
#   scripts/gpu-check.sh --build-only [OUT]   the same, and the build: what the
#                                         Dockerfile runs (no GPU needed)
#   scripts/gpu-check.sh --cpu-only [OUT] the CPU rows with this machine's own
#                                         build (BUILD_DIR, default build)
#   --no-production                       skip the production-shape benchmark
#
# Steps: host facts; unpack the bundle; configure and build dflash-evald,
# dflash-eval, roofline_bench and load_bench against torch's libtorch (CUDA);
# generate the small and the production-shape fixtures (beside the build);
# bench/prod_shape/gpu_check.py: CPU fp32 vs CUDA fp32 (identical tokens,
# near ties listed), bf16 agreement, resident bytes vs nvidia-smi, the
# startup error for a device that does not exist, a real CUDA out-of-memory
# load (RESOURCE_EXHAUSTED, the server keeps serving); production.py: loads
# against a plain read, anchor/replay TFLOP/s against the bf16 peak.
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=full
PRODUCTION=1
OUT=""
for a in "$@"; do
  case "$a" in
    --probe) MODE=probe ;;
    --rehearse)
      MODE=probe
      export GPU_CHECK_ALLOW_CPU_TORCH=1
      export GPU_CHECK_TORCH_PREFIX="${GPU_CHECK_TORCH_PREFIX:-/usr/lib/x86_64-linux-gnu/cmake}"
      # The client links every bundled library the server's RPC side does;
      # the torch side is the main build's (and check-torch2's) business.
      export PROBE_TARGETS="${PROBE_TARGETS:-dflash-eval}"
      # What it proves is that the bundle configures, compiles and links,
      # not the code's speed: -O0 (CMake's "None" build type adds no flags).
      export GPU_CHECK_BUILD_TYPE="${GPU_CHECK_BUILD_TYPE:-None}"
      ;;
    --build-only) MODE=build ;;
    --cpu-only) MODE=cpu ;;
    --no-production) PRODUCTION="" ;;
    -*) echo "gpu-check.sh: unknown argument '$a'" >&2; exit 2 ;;
    *) OUT="$a" ;;
  esac
done
OUT="${OUT:-${GPU_CHECK_OUT:-gpu-check-out}}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
exec > >(tee -a "$OUT/gpu-check.log") 2>&1
THREADS="${THREADS:-$(nproc)}"
PY="${GPU_CHECK_PY:-python3}"
STEPS="$OUT/steps.tsv"
: >"$STEPS"
T0=$SECONDS

# step NAME CMD...: runs it, records name, exit code and seconds.
step() {
  local name="$1" t=$SECONDS rc=0
  shift
  echo "gpu-check: == $name ($((SECONDS - T0)) s in)"
  "$@" || rc=$?
  printf '%s\t%d\t%d\n' "$name" "$rc" "$((SECONDS - t))" >>"$STEPS"
  echo "gpu-check: == $name: exit $rc, $((SECONDS - t)) s"
  return "$rc"
}

host_facts() {
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "uname: $(uname -srm)"
    grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release 2>/dev/null
    echo "nproc: $(nproc)"
    echo "mem: $(free -g 2>/dev/null | awk '/Mem:/{print $2" GiB"}')"
    echo "glibc: $(ldd --version 2>/dev/null | head -1)"
    echo "gcc: $(g++ --version 2>/dev/null | head -1)"
    echo "cmake: $(cmake --version 2>/dev/null | head -1)"
    echo "ninja: $(ninja --version 2>/dev/null)"
    echo "nvcc: $(nvcc --version 2>/dev/null | tail -2 | head -1)"
    echo "libstdc++: $(g++ -print-file-name=libstdc++.so.6 2>/dev/null)" \
      "$(strings "$(g++ -print-file-name=libstdc++.so.6)" 2>/dev/null | grep -E '^GLIBCXX_3\.4\.[0-9]+$' | sort -V | tail -1)"
    echo "tools: $(for t in pkg-config xz zstd strings patchelf nvidia-smi; do command -v $t >/dev/null && printf '%s ' $t; done)"
    echo "python: $(command -v "$PY") $("$PY" --version 2>&1)"
    "$PY" - <<'EOF' 2>&1
import torch, os
print("torch:", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "devices", torch.cuda.device_count())
print("torch_cmake_prefix:", torch.utils.cmake_prefix_path)
inc = os.path.join(os.path.dirname(torch.__file__), "include")
print("torch_include_has:", " ".join(sorted(d for d in os.listdir(inc))))
EOF
    nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,clocks.max.sm \
      --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  } | tee "$OUT/host.txt"
  return 0  # facts only: a missing tool is itself a fact
}

unpack_bundle() {
  [ -f .gpu-bundle/deps.tar.gz ] ||
    { echo "gpu-check: no .gpu-bundle/deps.tar.gz: run scripts/gpu-bundle.sh and carry .gpu-bundle"; return 1; }
  rm -rf "$DEPS" && mkdir -p "$DEPS" && tar xzf .gpu-bundle/deps.tar.gz -C "$DEPS"
}

configure() {
  local torch_prefix lib="$DEPS/usr/lib/x86_64-linux-gnu" ldflags stdcxx
  torch_prefix="${GPU_CHECK_TORCH_PREFIX:-$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')}" ||
    return 1
  ldflags="-Wl,--disable-new-dtags -Wl,-rpath,$lib"
  # Debian's libraries were built by GCC 12: an older host C++ runtime gets
  # Debian's beside them (linked and found at run time through the rpath).
  stdcxx="$(g++ -print-file-name=libstdc++.so.6)"
  if ! strings "$stdcxx" | grep '^GLIBCXX_3\.4\.30$' >/dev/null; then
    echo "gpu-check: $stdcxx lacks GLIBCXX_3.4.30: using the bundle's libstdc++"
    ln -sf libstdc++.so.6 "$DEPS/stdcxx/libstdc++.so"
    ldflags="-L$DEPS/stdcxx -Wl,-rpath,$DEPS/stdcxx $ldflags"
  fi
  [ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
  # ccache keys on paths relative to the tree: clones in other folders hit.
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  export PKG_CONFIG_LIBDIR="$lib/pkgconfig:$DEPS/usr/share/pkgconfig"
  # No precompiled headers: 16 cores build the four binaries in about a
  # minute without, and the path that ran on the H200 stays as it ran.
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${GPU_CHECK_BUILD_TYPE:-Release}" -DDFLASH_PCH=OFF \
    -DDFLASH_BUILD_TESTS=OFF -DCMAKE_LIBRARY_ARCHITECTURE=x86_64-linux-gnu \
    -DCMAKE_PREFIX_PATH="$DEPS/usr;$torch_prefix" \
    -DDFLASH_FIRST_INCLUDE_DIRS="$DEPS/usr/include" \
    -DCMAKE_EXE_LINKER_FLAGS="$ldflags" -DCMAKE_SHARED_LINKER_FLAGS="$ldflags" \
    -DPKG_CONFIG_EXECUTABLE="$DEPS/usr/bin/pkg-config" \
    -DProtobuf_PROTOC_EXECUTABLE="$DEPS/usr/bin/protoc" \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 || return 1
  # GPU_CHECK_ALLOW_CPU_TORCH=1: a rehearsal of these steps on a CPU machine.
  [ -n "${GPU_CHECK_ALLOW_CPU_TORCH:-}" ] || grep -q DFLASH_WITH_CUDA "$BUILD_DIR/build.ninja" ||
    { echo "gpu-check: torch at $torch_prefix is not a CUDA libtorch (no DFLASH_WITH_CUDA)"; return 1; }
}

# Every library a binary loads is found, and the bundle's come from the
# bundle (not from a system copy that happens to be there).
bundle_resolves() {
  local bin="$1" out
  out="$(ldd "$bin")" || return 1
  echo "$out"
  ! grep -q "not found" <<<"$out" || { echo "gpu-check: $bin: a library is not found"; return 1; }
  for lib in libgrpc++.so libprotobuf.so libabsl_strings.so; do
    grep "$lib" <<<"$out" | grep -q "$DEPS/" ||
      { echo "gpu-check: $bin: $lib does not come from $DEPS"; return 1; }
  done
}

fixtures() {
  DFLASH_FIXTURE_PY="$PY" DFLASH_BENCH_CACHE="$FIXTURES" bench/fixtures/make.sh --size small \
    >"$OUT/fixture-small.path" || return 1
  if [ -n "$PRODUCTION" ]; then
    DFLASH_FIXTURE_PY="$PY" DFLASH_BENCH_CACHE="$FIXTURES" bench/fixtures/make.sh \
      --size "${PROD_SIZE:-qwen3-8b}" >"$OUT/fixture-prod.path" || return 1
  fi
}

report() {
  "$PY" - "$OUT" "$MODE" <<'EOF'
import json, os, sys
out, mode = sys.argv[1], sys.argv[2]
rep = {"mode": mode, "steps": [], "host": {}}
for line in open(os.path.join(out, "steps.tsv")):
    name, rc, sec = line.rstrip("\n").split("\t")
    rep["steps"].append({"step": name, "exit": int(rc), "seconds": int(sec)})
if os.path.exists(os.path.join(out, "host.txt")):
    for line in open(os.path.join(out, "host.txt")):
        k, _, v = line.partition(": ")
        rep["host"].setdefault(k.strip(), v.strip())
for part in ("gpu_check", "production", "production_full"):
    p = os.path.join(out, part + ".json")
    if os.path.exists(p):
        rep[part] = json.load(open(p))
rep["ok"] = all(s["exit"] == 0 for s in rep["steps"])
json.dump(rep, open(os.path.join(out, "report.json"), "w"), indent=1)
print("gpu-check: report %s: %s" % (os.path.join(out, "report.json"),
                                     "all steps passed" if rep["ok"] else "FAILED: " +
                                     ", ".join(s["step"] for s in rep["steps"] if s["exit"])))
sys.exit(0 if rep["ok"] else 1)
EOF
}

if [ "$MODE" = cpu ]; then
  BUILD_DIR="${BUILD_DIR:-build}"
  FIXTURES="${DFLASH_BENCH_CACHE:-$HOME/.cache/dflash-bench}"
  PY="${GPU_CHECK_PY:-/usr/bin/python3}"
  step build ninja -C "$BUILD_DIR" dflash-evald dflash-eval
  PRODUCTION="" step fixtures fixtures
  step cpu-rows "$PY" bench/prod_shape/gpu_check.py --build "$BUILD_DIR" \
    --fixture "$(cat "$OUT/fixture-small.path")" --threads "$THREADS" --cpu-only \
    --json "$OUT/gpu_check.json"
  report
  exit
fi

BUILD_DIR="${BUILD_DIR:-build-gpu}"
DEPS="${GPU_DEPS_DIR:-/tmp/dflash-deps}"
FIXTURES="${DFLASH_BENCH_CACHE:-/tmp/dflash-bench}"
step host-facts host_facts
step unpack-bundle unpack_bundle && step configure configure
if [ "$MODE" = probe ]; then
  # The client (gRPC, protobuf, abseil from the bundle) and one torch library.
  step build-probe ninja -C "$BUILD_DIR" -j "$THREADS" ${PROBE_TARGETS:-dflash-eval dflash_weights}
  step bundle-resolves bundle_resolves "$BUILD_DIR/client/dflash-eval"
  report
  exit
fi

if [ "$MODE" = build ]; then
  step build ninja -C "$BUILD_DIR" -j "$THREADS" dflash-evald dflash-eval
  report
  exit
fi

# Fixtures are Python and disk; they run beside the 16-core build.
fixtures >"$OUT/fixtures.log" 2>&1 &
FIX_PID=$!
if [ -n "${GPU_CHECK_PREBUILT:-}" ]; then
  step prebuilt tar xzf "$GPU_CHECK_PREBUILT" -C "$BUILD_DIR"
else
  # -k 0: every compile error in one call, not only the first.
  step build ninja -C "$BUILD_DIR" -k 0 -j "$THREADS" dflash-evald dflash-eval roofline_bench \
    load_bench
fi
step fixtures wait "$FIX_PID"
cat "$OUT/fixtures.log"
if [ -x "$BUILD_DIR/server/dflash-evald" ] && [ -s "$OUT/fixture-small.path" ]; then
  step cuda-vs-cpu "$PY" bench/prod_shape/gpu_check.py --build "$BUILD_DIR" \
    --fixture "$(cat "$OUT/fixture-small.path")" --threads "$THREADS" \
    --json "$OUT/gpu_check.json"
fi
if [ -n "$PRODUCTION" ] && [ -x "$BUILD_DIR/bench/roofline_bench" ] &&
  [ -s "$OUT/fixture-prod.path" ]; then
  step production "$PY" bench/prod_shape/production.py --build "$BUILD_DIR" \
    --fixture "$(cat "$OUT/fixture-prod.path")" --threads "$THREADS" --device cuda:0 \
    --dtype bf16 --json "$OUT/production.json"
  # Every anchor of 16 samples (~1600 blocks): what a full evaluation
  # reaches once the card has enough blocks per forward.
  step production-full "$PY" bench/prod_shape/production.py --build "$BUILD_DIR" \
    --fixture "$(cat "$OUT/fixture-prod.path")" --threads "$THREADS" --device cuda:0 \
    --dtype bf16 --max-samples 16 --max-blocks 100000 --json "$OUT/production_full.json"
fi
# The binaries come back with the report (OUT/bin.tar.gz), so a second call
# can rerun the checks without building (GPU_CHECK_PREBUILT=that file).
if [ -x "$BUILD_DIR/server/dflash-evald" ]; then
  tar czf "$OUT/bin.tar.gz" -C "$BUILD_DIR" server/dflash-evald client/dflash-eval \
    bench/roofline_bench bench/load_bench 2>/dev/null || true
fi
report
