"""The sources behind a compile command: a unity batch (cmake/unity.cmake)
stands for the files it #includes, found through the batch's own -I
directories; any other command stands for its own file.

Used by scripts/check-style.sh (clang-tidy reads one entry per source) and
scripts/check_torch2.py (which batches use torch, and what --only matches).
"""
import os
import re
import shlex

UNITY_INCLUDE = re.compile(r'^#include "(.+)"$', re.M)


def is_batch(path):
    return os.sep + "unity" + os.sep in path


def batch_sources(entry):
    """A compile_commands.json entry's sources, as real paths: a batch's
    included files (those found), else the entry's own file."""
    f = entry["file"]
    if not is_batch(f):
        return [f]
    args = entry.get("arguments") or shlex.split(entry["command"])
    dirs = [os.path.join(entry["directory"], a[2:]) for a in args if a.startswith("-I") and a != "-I"]
    with open(f) as text:
        names = UNITY_INCLUDE.findall(text.read())
    out = []
    for rel in names:
        found = [os.path.realpath(os.path.join(d, rel)) for d in dirs
                 if os.path.exists(os.path.join(d, rel))]
        if found:
            out.append(found[0])
    return out
