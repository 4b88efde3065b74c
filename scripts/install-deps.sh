#!/usr/bin/env bash
# Installs the Debian packages dflash-evald needs to build, test and run.
# The one list of packages lives here; everything else calls this script.
# Idempotent: installs only what is missing. Needs root (or sudo).
#
#   scripts/install-deps.sh          everything: build, run, test, CI
#   DFLASH_DEPS=demo scripts/...     only what the demo needs (the server and
#                                    client's build, the fixture's python3-torch);
#                                    scripts/demo.sh sets it, and the test
#                                    command installs the rest
set -euo pipefail

# The demo's packages: building dflash-evald and dflash-eval, generating the
# small model.
DEMO_PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git lld
  # RPC and status vocabulary
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  # tensors; libtorch multiplies through libblas.so.3, so bring an optimised BLAS
  libtorch-dev libopenblas0-pthread
  # logging, CLI, JSON, results store
  libspdlog-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev
  # a fleet's shared store (libpq)
  libpq-dev
  # operations: config files, Prometheus metrics, the web view's HTTP server
  libyaml-cpp-dev prometheus-cpp-dev libcpp-httplib-dev
  # the demo's small model (tools/dflash_ref/make_fixture.py)
  python3 python3-torch
)
# Everything else: the tests, the style gate, the fuzzers, CI.
TEST_PACKAGES=(
  # the real PostgreSQL the fleet's tests start
  postgresql
  # tests and fuzzing; the style gate (universal-ctags: every function's
  # length, scripts/check_function_length.py)
  libgtest-dev libgmock-dev clang libclang-rt-14-dev clang-format clang-tidy universal-ctags
  # the Python baseline, the Python client package (client/python: a venv
  # --system-site-packages, pip, its type check) and the example on it
  python3-grpcio python3-protobuf python3-venv python3-pip python3-mypy
  # the Kubernetes manifests' check (scripts/check_k8s.py): its parser, the
  # linter, and node for the schema validator (scripts/k8s-schema, from npm,
  # installed below). It also needs kubectl >= 1.21, which comes with the
  # machine image (the 'kubectl' package of Google Cloud CLI's repository):
  # Debian 12's kubernetes-client is 1.20, too old for the kustomizations.
  python3-yaml yamllint nodejs
  # the web view's pages are opened in a real headless browser by the tests
  chromium
)

DEPS="${DFLASH_DEPS:-all}"
case "$DEPS" in
  demo) PACKAGES=("${DEMO_PACKAGES[@]}") ;;
  all) PACKAGES=("${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) echo "install-deps: DFLASH_DEPS is '$DEPS'; expected demo or all" >&2; exit 2 ;;
esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm: Debian's package, unless node came with its own (NodeSource's nodejs
# bundles npm and conflicts with Debian's).
if [ "$DEPS" = all ] && ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

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

[ "$DEPS" = all ] || exit 0
# The Kubernetes schema validator's npm packages (pinned in its lock file).
K8S_SCHEMA="$(cd "$(dirname "$0")" && pwd)/k8s-schema"
if [ "$K8S_SCHEMA/package-lock.json" -nt "$K8S_SCHEMA/node_modules/.package-lock.json" ]; then
  printf 'install-deps: npm ci in scripts/k8s-schema ... '
  if npm ci --prefix "$K8S_SCHEMA" --omit=dev --no-audit --no-fund --loglevel=error \
      >/tmp/dflash-npm-ci.log 2>&1; then
    echo done
  else
    echo FAILED
    tail -n 20 /tmp/dflash-npm-ci.log >&2
    exit 1
  fi
fi
if ! command -v kubectl >/dev/null 2>&1; then
  echo "install-deps: no kubectl: the ctest k8s_manifests needs kubectl >= 1.21" \
    "(see scripts/check_k8s.py)" >&2
fi
