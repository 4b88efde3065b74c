#!/usr/bin/env bash
# Fails when a test skipped. CI installs everything the suite needs
# (python3-torch, grpcio, ...), so a skip there hides a test that did not
# run. The one exception is a test that needs a CUDA device (CI machines have
# no GPU) or needs its absence, allowed by its exact GTEST_SKIP message:
# "no CUDA device" or "this machine has CUDA".
#
# Reads the gtest XML reports of a ctest run: every gtest entry writes
# BUILD/test-results/<entry>.xml (tests/CMakeLists.txt, dflash_gtest_entry);
# scripts/test.sh does this after ctest:
#   ctest --test-dir build ...
#   scripts/check-skips.sh build/test-results
# Exit 0: no skip but the allowed ones; 1: skips (listed) or no reports.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 GTEST_XML_DIR" >&2
  exit 2
fi

python3 - "$1" <<'PY'
import glob
import os
import sys
import xml.etree.ElementTree as ET

ALLOWED = {"no CUDA device", "this machine has CUDA"}

folder = sys.argv[1]
reports = sorted(glob.glob(os.path.join(folder, "*.xml")))
if not reports:
    print(f"check-skips: no gtest XML reports in {folder}; ctest writes them "
          f"(tests/CMakeLists.txt, dflash_gtest_entry)", file=sys.stderr)
    sys.exit(1)

allowed, bad = [], []
for report in reports:
    binary = os.path.splitext(os.path.basename(report))[0]
    try:
        root = ET.parse(report).getroot()
    except ET.ParseError as e:
        bad.append(f"{binary}: unreadable report {report}: {e}")
        continue
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None and case.get("result") != "skipped":
            continue
        # gtest writes "FILE:LINE\nMESSAGE"; a suite whose SetUpTestSuite
        # failed skips its tests with no message at all.
        text = skipped.get("message", "") if skipped is not None else ""
        reason = text.split("\n", 1)[1].strip() if "\n" in text else ""
        name = f"{binary}: {case.get('classname')}.{case.get('name')}"
        if reason in ALLOWED:
            allowed.append(f"{name} ({reason})")
        else:
            bad.append(f"{name}: {reason or '(no message: did its suite set-up fail?)'}")

for line in allowed:
    print(f"check-skips: allowed skip {line}")
if bad:
    print(f"check-skips: {len(bad)} test(s) skipped; CI installs everything, so only "
          f"a missing CUDA device excuses a skip:", file=sys.stderr)
    for line in bad:
        print(f"  {line}", file=sys.stderr)
    sys.exit(1)
print(f"check-skips: no unexpected skips in {len(reports)} report(s)")
PY
