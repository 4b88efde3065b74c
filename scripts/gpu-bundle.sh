#!/usr/bin/env bash
# Gathers the C++ dependencies dflash-evald needs, from Debian's packages, into
# an ignored folder that travels with the working tree to a GPU host that has
# CUDA and pip's torch but no gRPC, protobuf, abseil, spdlog, ... and no apt
# (issue 28 item 1). scripts/gpu-check.sh builds against it there.
#
#   scripts/gpu-bundle.sh [DIR]      (default .gpu-bundle; prints its size)
# Env: GPU_BUNDLE_CACHE (downloaded .debs, default ~/.cache/dflash-gpu-bundle).
#
# DIR holds deps.tar.gz (the prefix, usr/ and stdcxx/, packed: 61 MiB of
# files pack to about 21 MiB) and MANIFEST.txt; gpu-check.sh unpacks it.
#
# What goes in: the -dev packages' headers, CMake configs and pkg-config
# files, the shared libraries they link and every library those load (the ldd
# closure, less glibc, libstdc++ and libgcc_s, which the host has), protoc,
# gRPC's plugins and pkgconf (behind wrappers that find the bundle's
# libraries). Static archives, docs and man pages stay out. Debian's
# libstdc++ rides in stdcxx/, used only where the host's is older.
# DIR/MANIFEST.txt lists each package and version, and the size.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-.gpu-bundle}"
MAX_MIB="${GPU_BUNDLE_MAX_MIB:-40}"  # packed

# Headers and build files, one -dev package per library the server links.
DEV=(
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev libprotoc-dev
  protobuf-compiler libabsl-dev libc-ares-dev libre2-dev libssl-dev zlib1g-dev
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  libsqlite3-dev libpq-dev prometheus-cpp-dev libcpp-httplib-dev libbrotli-dev
  libcurl4-openssl-dev libcivetweb-dev
  pkgconf-bin libpkgconf3
)
# The host's own: never carried (glibc's libraries, the C++ runtime).
BASE_RE='/(libc|libm|libdl|librt|libpthread|libresolv|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s|libmvec|libanl|libnsl)\.so'

command -v apt-get >/dev/null || { echo "gpu-bundle: needs apt-get (Debian)" >&2; exit 1; }
# ldd below resolves against installed copies: install what is missing.
missing=()
for p in "${DEV[@]}" file; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq >/dev/null
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/deb" "$work/x"

# Downloaded packages are kept in CACHE by their file names (which carry the
# version), so a second bundle downloads only what changed (issue 28: CI
# time); the rest come in one apt-get call, not one per package.
CACHE="${GPU_BUNDLE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dflash-gpu-bundle}"
mkdir -p "$CACHE"
download() {  # package names -> $work/deb (already fetched ones skipped)
  local p uris name get=()
  for p in "$@"; do
    ls "$work"/deb/"${p}"_*.deb >/dev/null 2>&1 || get+=("$p")
  done
  [ "${#get[@]}" -gt 0 ] || return 0
  uris="$(apt-get download --print-uris "${get[@]}" 2>&1)" ||
    { echo "gpu-bundle: apt-get download --print-uris ${get[*]} failed: $uris" >&2; exit 1; }
  get=()
  while read -r _ name _; do
    [ -n "$name" ] || continue
    if [ -f "$CACHE/$name" ]; then cp "$CACHE/$name" "$work/deb/"; else get+=("${name%%_*}"); fi
  done <<<"$uris"
  [ "${#get[@]}" -gt 0 ] || return 0
  (cd "$work/deb" && apt-get download -qq "${get[@]}" >/dev/null 2>&1) ||
    { echo "gpu-bundle: apt-get download ${get[*]} failed" >&2; exit 1; }
  cp -n "$work"/deb/*.deb "$CACHE/"
}
download "${DEV[@]}"
for d in "$work"/deb/*.deb; do dpkg-deb -x "$d" "$work/x"; done

# Runtime closure: the libraries the -dev packages' links point to (as
# installed here) and everything they and the programs load, mapped back to
# their packages through dpkg.
closure_pkgs() {
  local sys=/usr/lib/x86_64-linux-gnu
  {
    find "$work/x" -name '*.so' -printf '%f\n' | sort -u | while read -r n; do
      [ -e "$sys/$n" ] && readlink -f "$sys/$n"
    done
    find "$work/x" -type f -path '*/bin/*'
  } | sort -u >"$work/seeds"
  {
    cat "$work/seeds"
    xargs -r ldd <"$work/seeds" 2>/dev/null | awk '/=> \//{print $3}'
  } | sort -u | grep -Ev "$BASE_RE" | grep -v "^$work" | while read -r lib; do
    readlink -f "$lib"
    echo "$lib"  # merged /usr: dpkg may know the file by either name
  done | sort -u >"$work/closure" || true  # (a seed with no system copy ends the loop false)
  # One dpkg -S for all (it reads the whole package database per call: one
  # call per library took 27 of the script's 41 s). Names it does not know
  # are left out, as before.
  xargs -r -d '\n' dpkg -S <"$work/closure" 2>/dev/null | cut -d: -f1 | tr ', ' '\n\n' |
    grep -v '^$' | sort -u || true
}
mapfile -t RUNTIME < <(closure_pkgs)
ls "$work"/deb >"$work/extracted"
download "${RUNTIME[@]}"
for d in "$work"/deb/*.deb; do
  grep -qxF "$(basename "$d")" "$work/extracted" || dpkg-deb -x "$d" "$work/x"
done

# Keep headers, libraries, CMake and pkg-config files, three programs.
OUT_FINAL="$OUT"
OUT="$work/bundle"
mkdir -p "$OUT/usr/bin" "$OUT/stdcxx"
keep=()
for p in usr/include usr/lib/x86_64-linux-gnu lib usr/share/cmake usr/share/pkgconfig usr/lib/cmake; do
  [ -e "$work/x/$p" ] && keep+=("$p")
done
(cd "$work/x" && tar cf - --exclude='*.a' --exclude='*/python3*' --exclude='*/gconv/*' \
  "${keep[@]}") | (cd "$OUT" && tar xf -)
if [ -d "$OUT/lib/x86_64-linux-gnu" ]; then  # merged-/usr stragglers
  cp -a "$OUT/lib/x86_64-linux-gnu/." "$OUT/usr/lib/x86_64-linux-gnu/" && rm -rf "$OUT/lib"
fi
LIB='$(dirname "$0")/../lib/x86_64-linux-gnu'
# Every plugin gRPC's CMake config names must exist; the build runs the C++ one.
for real in "$work"/x/usr/bin/protoc "$work"/x/usr/bin/grpc_*_plugin "$work"/x/usr/bin/pkgconf; do
  prog="$(basename "$real")"
  real="$(readlink -f "$real")"
  cp "$real" "$OUT/usr/bin/$prog.real"
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$(dirname "$0")/%s.real" "$@"\n' \
    "$LIB" "$prog" >"$OUT/usr/bin/$prog"
  chmod +x "$OUT/usr/bin/$prog"
done
ln -sf pkgconf "$OUT/usr/bin/pkg-config"
# pkg-config files name /usr; make them relative to where they lie.
find "$OUT" -name '*.pc' -exec sed -i -e 's|^prefix=/usr$|prefix=${pcfiledir}/../../..|' \
  -e 's|=/usr/|=${pcfiledir}/../../../|' {} +
# A dangling link (to a static archive or a doc) would only confuse CMake.
find "$OUT" -xtype l -delete
# CMake configs check that every file of every target they import exists,
# used or not (gRPC's PHP plugin, civetweb's server program). A file left
# out becomes a placeholder that fails loudly if it is ever run or linked.
grep -rhoE '\$\{_IMPORT_PREFIX\}/[^";) ]+' "$OUT/usr" --include='*.cmake' | sort -u |
  while read -r ref; do
    f="$OUT/usr/${ref#\$\{_IMPORT_PREFIX\}/}"
    [ -e "$f" ] && continue
    mkdir -p "$(dirname "$f")"
    printf '#!/bin/sh\necho "%s: not carried by scripts/gpu-bundle.sh" >&2\nexit 1\n' \
      "${f#"$OUT/"}" >"$f"
    chmod +x "$f"
    echo "${f#"$OUT/"}" >>"$work/placeholders"
  done
cp -L /usr/lib/x86_64-linux-gnu/libstdc++.so.6 "$OUT/stdcxx/"

size_kib="$(du -sk "$OUT" | cut -f1)"
files="$(find "$OUT" -type f | wc -l)"
rm -rf "$OUT_FINAL"
mkdir -p "$OUT_FINAL"
# gzip -1: 3x faster than the default level here, a little larger.
tar cf - -C "$OUT" usr stdcxx | gzip -1 >"$OUT_FINAL/deps.tar.gz"
packed_kib="$(du -sk "$OUT_FINAL/deps.tar.gz" | cut -f1)"
{
  echo "# scripts/gpu-bundle.sh, $(date -u +%FT%TZ), Debian $(cat /etc/debian_version)"
  for d in "$work"/deb/*.deb; do dpkg-deb -f "$d" Package Version | paste -sd' '; done
  echo "libstdc++ (stdcxx/): $(dpkg-query -W -f='${Version}' libstdc++6)"
  [ -f "$work/placeholders" ] && sed 's/^/placeholder (not carried): /' "$work/placeholders"
  echo "unpacked_kib $size_kib files $files packed_kib $packed_kib"
} >"$OUT_FINAL/MANIFEST.txt"
echo "gpu-bundle: $OUT_FINAL/deps.tar.gz: $((packed_kib / 1024)) MiB packed," \
  "$((size_kib / 1024)) MiB in $files files, $(grep -c '^Package' "$OUT_FINAL/MANIFEST.txt") packages"
if [ "$((packed_kib / 1024))" -gt "$MAX_MIB" ]; then
  echo "gpu-bundle: over $MAX_MIB MiB packed (the tree and the bundle travel in 64 MiB)" >&2
  exit 1
fi
