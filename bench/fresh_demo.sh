#!/usr/bin/env bash
# The README's first command on a fresh Debian 12 machine, timed: a minimal
# bookworm (debootstrap) with what this project's machines come with
# (build-essential, cmake, git, python3, GoogleTest, clang-format, ...;
# not gdb, whose libsource-highlight debootstrap cannot resolve), a
# clone of REV, and scripts/demo.sh run inside it as root. Every run starts
# from a copy of the same base, so nothing is cached: apt downloads and
# installs the demo's packages, ccache starts empty, the page cache holds
# none of the new files.
#
#   bench/fresh_demo.sh [REV] [WORK]    REV: HEAD; WORK: /var/tmp/dflash-fresh
#
# Needs root, network (Debian's mirror) and about 3 GB in WORK. The base is
# made once (debootstrap, about 2 minutes) and kept. Prints the demo's own
# lines (install, build, run) and the wall time; the log is WORK/demo-REV.log.
set -euo pipefail
cd "$(dirname "$0")/.."
REV="${1:-HEAD}"
WORK="${2:-/var/tmp/dflash-fresh}"
SHA="$(git rev-parse --short=12 "$REV")"
BASE="$WORK/base"
ROOT="$WORK/run-$SHA"

mkdir -p "$WORK"
if [ ! -f "$BASE/.complete" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  rm -rf "$BASE"
  debootstrap --variant=minbase --include=build-essential,cmake,git,python3,ca-certificates,libgtest-dev,libgmock-dev,clang-format,clang-tidy,valgrind,sudo \
    bookworm "$BASE" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1
  cat >"$BASE/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
  # debootstrap can leave an --include's dependency unconfigured.
  chroot "$BASE" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq && apt-get clean' >/dev/null
  touch "$BASE/.complete"
fi

# The host's /proc, /sys and /dev are bound into the copy; removing it
# stays on its own file system (--one-file-system), so a bind that failed
# to unmount is skipped, never deleted through.
# shellcheck disable=SC2317  # run by the trap
cleanup() {
  for m in dev/pts dev sys proc; do umount -l "$ROOT/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$ROOT"
}
cleanup
trap cleanup EXIT
cp -a "$BASE" "$ROOT"
git clone -q "$PWD" "$ROOT/root/dflash"
git -C "$ROOT/root/dflash" checkout -q "$SHA"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$ROOT/$m"; done

LOG="$WORK/demo-$SHA.log"
start=$(date +%s)
rc=0
chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c 'cd /root/dflash && scripts/demo.sh' >"$LOG" 2>&1 || rc=$?
wall=$(($(date +%s) - start))
grep -E '^install-deps|built in|demo finished' "$LOG" | cut -c1-120 || true
echo "fresh_demo: $SHA exit $rc, $wall s wall (log: $LOG)"
exit "$rc"
