#!/usr/bin/env python3
"""Checks that a folder binary's per-file ctest entries (tests/CMakeLists.txt,
dflash_file_filter) run each of its cases exactly once: a case no filter
names would never run, and one named twice would run twice.

  check_test_filters.py BINARY FILTER...   # exit 0, or 1 listing the cases
"""
import subprocess
import sys


def cases(binary, gtest_filter=None):
    """The binary's case names (Suite.Name), under a filter if given."""
    cmd = [binary, "--gtest_list_tests"]
    if gtest_filter is not None:
        cmd.append("--gtest_filter=" + gtest_filter)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    names, suite = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split()[0]
        else:
            names.append(suite + line.split()[0])
    return names


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, filters = argv[1], argv[2:]
    every = cases(binary)
    runs = {}
    for f in filters:
        picked = cases(binary, f)
        if not picked:
            print(f"check_test_filters: filter {f!r} selects no case", file=sys.stderr)
            return 1
        for name in picked:
            runs[name] = runs.get(name, 0) + 1
    missed = [n for n in every if n not in runs]
    twice = [n for n, k in runs.items() if k > 1]
    for n in missed:
        print(f"check_test_filters: {n} is in no entry's filter", file=sys.stderr)
    for n in twice:
        print(f"check_test_filters: {n} runs in {runs[n]} entries", file=sys.stderr)
    if missed or twice:
        return 1
    print(f"check_test_filters: {len(every)} cases, {len(filters)} entries, each case once")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
