#!/usr/bin/env bash
# Installs what is missing, then configures and builds (Release, Ninja,
# ccache) into ${BUILD_DIR:-build}: the whole tree, or only the targets named
# in $BUILD_TARGETS (the demo builds just the server and the client).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
BUILD_DIR="${BUILD_DIR:-build}"
# ccache keys on relative paths, so clones in other folders (CI) share hits.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# The precompiled headers (cmake/pch.cmake) are cached only with these.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
# A cache hit hashes every file the compile read, the 110-320 MB .gch
# included: 0.66-0.97 s per hit, most of a warm build. The inode cache keeps
# each file's hash by inode, size and times, so a .gch is hashed once per
# build (0.02 s a hit, measured on eval/slices.cc). Issue 28: warm CI.
export CCACHE_INODECACHE=1
# Depend mode: on a miss ccache takes the include list from the compiler's
# own -MD output instead of running the preprocessor first, so a cold build
# (a fresh machine, the demo's first build) does not preprocess every batch
# twice: 36 s of CPU over the demo's 39 compiles; its cold build took 231 s
# with it and 244 s without (means of three each, 2 cores; BENCHMARKS.md
# "CI stages"). Hits are direct-mode hits as before; their include paths
# are relative (CCACHE_BASEDIR), so clones in other folders still hit.
export CCACHE_DEPEND=1
# The tests are configured unless BUILD_TESTS=OFF (the demo's build, before
# GoogleTest is installed); said every time, as CMake keeps the last value.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DDFLASH_BUILD_TESTS="${BUILD_TESTS:-ON}" "$@" >/dev/null
# Two compile jobs fit in 24 GiB with libtorch headers; more only thrash.
# shellcheck disable=SC2086  # BUILD_TARGETS is a list of target names
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
