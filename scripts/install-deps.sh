#!/usr/bin/env bash
# Installs the Debian packages dflash-evald needs to build, test and run.
# The one list of packages lives here; everything else calls this script.
# Idempotent: installs only what is missing. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git
  # RPC and status vocabulary
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  # tensors; libtorch multiplies through libblas.so.3, so bring an optimised BLAS
  libtorch-dev libopenblas0-pthread
  # logging, CLI, JSON, results store
  libspdlog-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev
  # a fleet's shared store (libpq) and the real PostgreSQL its tests start
  libpq-dev postgresql
  # operations: config files, Prometheus metrics
  libyaml-cpp-dev prometheus-cpp-dev
  # tests and fuzzing
  libgtest-dev libgmock-dev clang libclang-rt-14-dev clang-format clang-tidy
  # fixtures, the Python baseline, the Python client package (client/python:
  # a venv --system-site-packages, pip, its type check) and the example on it
  python3 python3-torch python3-grpcio python3-protobuf python3-venv python3-pip python3-mypy
  # the Kubernetes manifests' check (scripts/check_k8s.py)
  python3-yaml
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  # apt's progress goes to a log; the terminal gets one line per step, and
  # the log's path and last lines if a step fails.
  LOG="${DFLASH_INSTALL_LOG:-/tmp/dflash-install-deps.log}"
  : >"$LOG"
  step() {
    local what="$1"; shift
    local t0=$SECONDS
    printf 'install-deps: %s ... ' "$what"
    if "$@" >>"$LOG" 2>&1; then
      echo "done ($((SECONDS - t0)) s)"
    else
      echo "FAILED"
      echo "install-deps: '$what' failed; the last lines of $LOG:" >&2
      tail -n 20 "$LOG" >&2
      exit 1
    fi
  }
  echo "install-deps: ${#missing[@]} package(s) missing (apt's log: $LOG)"
  step "updating package lists" $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  step "installing ${missing[*]}" \
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
else
  echo "install-deps: all ${#PACKAGES[@]} packages present"
fi
