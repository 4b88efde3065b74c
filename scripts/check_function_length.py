#!/usr/bin/env python3
"""No function over 80 lines, on the whole tree (issue 27).

clang-tidy's readability-function-size holds the server and client to the
same limit, but only on the files a change touches (it needs the build's
compile commands and takes seconds per file). This check reads every
function's first and last line from Universal Ctags (Debian's
`universal-ctags`, its `end:` field), so it covers all of server/, client/,
tests/, bench/, tools/ and scripts/, C++ and Python, in about a second.

A function may stay longer only with a marker on its first line and a
comment above saying why (an interpreter's opcode switch, a table of test
cases): `// NOLINT(readability-function-size)` in C++ (clang-tidy's own
marker) or `# noqa: function-size` in Python.

Usage: check_function_length.py [--max N] [paths...]
Prints one "path:line: name has N lines" per offender; exits 1 if any.
"""

import argparse
import json
import re
import subprocess
import sys

ROOTS = ["server", "client", "tests", "bench", "tools", "scripts"]
MARKERS = ("NOLINT(readability-function-size)", "noqa: function-size")
# Ctags kinds that are functions with a body: C++ "function" (definitions;
# prototypes are "prototype"), Python "function" and "member" (methods).
KINDS = {"function", "member"}


def tagged_functions(paths):
    """Yields (path, first line, last line, name) for every function body."""
    cmd = ["ctags", "--output-format=json", "--fields=+ne", "--kinds-C++=f",
           "--kinds-Python=fm", "--languages=C++,Python", "--exclude=*.pb.*",
           "--exclude=*_gen.*", "-R", "-f", "-"] + paths
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("check_function_length: no ctags (install Debian's universal-ctags)")
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") not in KINDS or "end" not in tag:
            continue
        name = tag["name"] if "scope" not in tag else f'{tag["scope"]}::{tag["name"]}'
        # Anonymous namespaces and lambdas get generated names: keep the rest.
        name = re.sub(r"__anon[0-9a-f]+(::)?", "", name).rstrip(":") or "(lambda)"
        yield tag["path"], tag["line"], tag["end"], name


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max", type=int, default=80)
    parser.add_argument("paths", nargs="*", default=ROOTS)
    args = parser.parse_args()
    lines_of = {}
    offenders = []
    for path, first, last, name in tagged_functions(args.paths):
        n = last - first + 1
        if n <= args.max:
            continue
        if path not in lines_of:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines_of[path] = f.read().splitlines()
        head = lines_of[path][first - 1]
        if any(m in head for m in MARKERS):
            continue
        offenders.append(f"{path}:{first}: {name} has {n} lines (at most {args.max}: "
                         "split it, or mark it with a reason)")
    for o in sorted(offenders):
        print(f"check_function_length: {o}", file=sys.stderr)
    if offenders:
        return 1
    print(f"check_function_length: no function over {args.max} lines in {' '.join(args.paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
