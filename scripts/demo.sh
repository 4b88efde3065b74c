#!/usr/bin/env bash
# The demo: installs what is missing, builds, generates a small model (target
# embed/lm_head, a DFlash drafter, cached hidden states), starts dflash-evald
# on it, and evaluates the drafter through the real client.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${BUILD_DIR:-build}"
T0=$SECONDS
# Only the demo's packages; scripts/test.sh installs the rest (the tests'
# PostgreSQL, clang, chromium, ...).
export DFLASH_DEPS=demo
bash scripts/install-deps.sh
if [ -x "$BUILD_DIR/server/dflash-evald" ]; then
  echo "== building dflash-evald and dflash-eval (up to date or incremental: seconds)"
else
  echo "== building dflash-evald and dflash-eval only (first build: ~3.5 min on 2 cores;"
  echo "   scripts/test.sh builds the rest; ccache makes later builds fast)"
fi
t=$SECONDS
# Configured without the tests (GoogleTest is not installed yet); the test
# command configures them into the same folder and reuses these objects.
BUILD_TESTS=OFF BUILD_TARGETS="dflash-evald dflash-eval" bash scripts/build.sh \
  >"${TMPDIR:-/tmp}/dflash-demo-build.log" 2>&1 || {
  echo "build failed; the last lines of ${TMPDIR:-/tmp}/dflash-demo-build.log:" >&2
  tail -n 30 "${TMPDIR:-/tmp}/dflash-demo-build.log" >&2
  exit 1
}
echo "   built in $((SECONDS - t)) s; then: a small model (~10 s), the server, three evaluations (~10 s)"
EVALD="$BUILD_DIR/server/dflash-evald"
EVAL="$BUILD_DIR/client/dflash-eval"

WORK="${DEMO_DIR:-$(mktemp -d /tmp/dflash-demo.XXXXXX)}"
mkdir -p "$WORK"
echo "== generating a small model and dataset in $WORK/data"
/usr/bin/python3 tools/dflash_ref/make_fixture.py "$WORK/data" --size "${DEMO_SIZE:-small}" --demo

echo "== starting dflash-evald"
rm -f "$WORK/port"
"$EVALD" --listen 127.0.0.1:0 --port-file "$WORK/port" --state-dir "$WORK/state" \
  --data-root "$WORK/data" --log-level warn &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  [ -s "$WORK/port" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "dflash-evald exited before serving" >&2; exit 1; }
  sleep 0.1
done
export DFLASH_EVAL_SERVER="127.0.0.1:$(cat "$WORK/port")"

run() { echo; echo "\$ dflash-eval $*"; "$EVAL" "$@"; }
run info
# The drafter and data generated under the default rules (zlab-current,
# z-lab's model.py today); its number under the 2025 rules comes last, named.
run load-target "$WORK/data/target" --name demo-target
run load-dataset "$WORK/data/dataset-v1new" --name demo-data
run validate "$WORK/data/drafter-pt"
run load-drafter "$WORK/data/drafter-v1new" --name demo-drafter
run ls
run eval --drafter demo-drafter --dataset demo-data --mode anchor --anchors all
run eval --drafter demo-drafter --dataset demo-data --mode replay
echo
echo "== the same drafter under the 2025 rules (--semantics zlab-2025), for comparison"
run eval --drafter demo-drafter --dataset demo-data --mode replay --semantics zlab-2025
echo
echo "demo finished in $((SECONDS - T0)) s; files are in $WORK"
