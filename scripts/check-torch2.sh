#!/usr/bin/env bash
# Compile check against libtorch 2.x (issue 14, item 7): the CUDA image links
# a libtorch 2.x while this machine builds against Debian 12's 1.13. Debian
# 13's libtorch-dev (2.6) headers are fetched with apt into a cache folder
# (a private sources list and state, so the system's apt is untouched) and
# every torch-using source is compiled with -fsyntax-only against them.
#
#   scripts/check-torch2.sh            # cold: ~3 MB download; warm: no network,
#                                      # and sources that passed unchanged are skipped
#                                      # (a manifest of the files each read, as
#                                      # ccache's direct mode; about 3 s for all)
#
# Environment:
#   TORCH2_CACHE  where the extracted headers live
#                 (default ${XDG_CACHE_HOME:-$HOME/.cache}/dflash-evald/libtorch2)
#   TORCH2_SUITE  the Debian suite to take libtorch-dev from (default trixie)
#   TORCH2_MIRROR the archive (default http://deb.debian.org/debian)
#   TORCH2_BUILD  the CMake build dir configured for compile_commands.json
#                 (default build-torch2; only configured, never built)
#   JOBS          parallel compiles (default nproc)
#   TORCH2_ONLY   a regex: check only the sources whose path matches
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE="${TORCH2_SUITE:-trixie}"
MIRROR="${TORCH2_MIRROR:-http://deb.debian.org/debian}"
CACHE="${TORCH2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dflash-evald/libtorch2}"
BUILD="${TORCH2_BUILD:-build-torch2}"
JOBS="${JOBS:-$(nproc)}"

fail() {
  echo "check-torch2: $*" >&2
  exit 1
}

# Downloads libtorch-dev from $SUITE and extracts its /usr/include into
# $CACHE/$SUITE. Marked complete only after a full extraction.
fetch_headers() {
  local dest="$1" tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/deb"
  echo "deb [trusted=yes] $MIRROR $SUITE main" >"$tmp/sources.list"
  touch "$tmp/status"
  local apt_opts=(
    -o "Dir::Etc::sourcelist=$tmp/sources.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$tmp/lists" -o "Dir::State::status=$tmp/status"
    -o "Dir::Cache=$tmp/cache" -o "Debug::NoLocking=1"
    -o "APT::Sandbox::User=$(id -un)" -o "Acquire::Retries=2")
  echo "check-torch2: fetching libtorch-dev from $MIRROR $SUITE"
  apt-get "${apt_opts[@]}" -qq update >"$tmp/log" 2>&1 ||
    fail "apt-get update of $MIRROR $SUITE failed (no network?):
$(tail -5 "$tmp/log")"
  (cd "$tmp/deb" && apt-get "${apt_opts[@]}" -qq download libtorch-dev) >"$tmp/log" 2>&1 ||
    fail "apt-get download libtorch-dev from $SUITE failed:
$(tail -5 "$tmp/log")"
  local deb
  deb="$(ls "$tmp"/deb/libtorch-dev_*.deb 2>/dev/null | head -1)"
  [ -n "$deb" ] || fail "no libtorch-dev .deb after the download"
  dpkg-deb -x "$deb" "$tmp/x" || fail "dpkg-deb -x $deb failed"
  [ -f "$tmp/x/usr/include/ATen/ATen.h" ] || fail "$deb has no ATen/ATen.h"
  rm -rf "$dest"
  mkdir -p "$(dirname "$dest")"
  mv "$tmp/x/usr/include" "$dest"
  dpkg-deb -f "$deb" Version >"$dest/.version"
}

HEADERS="$CACHE/$SUITE"
if [ ! -f "$HEADERS/.version" ]; then
  fetch_headers "$HEADERS"
fi
VERSION="$(cat "$HEADERS/.version")"
case "$VERSION" in
  2.*) ;;
  *) fail "libtorch-dev in $SUITE is $VERSION, not 2.x" ;;
esac

# compile_commands.json from a configure-only build dir, configured every run
# so new sources are seen (the generated proto headers are not needed: no
# torch-using source includes a *.pb.h). Libraries and test folders are
# checked as their unity batches (cmake/unity.cmake), as they are built:
# the gRPC, protobuf and gtest headers outside the PCH are parsed once per
# batch, not once per file (cold, 2 cores: the 92 torch-using files took
# 155 s as batches, 328 s one by one; BENCHMARKS.md "CI stages"). A failure
# names the file inside the batch.
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDFLASH_PCH=OFF -DDFLASH_UNITY=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$BUILD/configure.log" 2>&1 ||
  fail "cmake configure failed; see $BUILD/configure.log"

exec python3 scripts/check_torch2.py --headers "$HEADERS" --version "$VERSION" \
  --compile-commands "$BUILD/compile_commands.json" --jobs "$JOBS" \
  --only "${TORCH2_ONLY:-}" --stamps "$CACHE/passed-$SUITE" --pch-dir "$BUILD/pch"
