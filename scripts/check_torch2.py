#!/usr/bin/env python3
"""Compiles every torch-using source with -fsyntax-only against other headers.

Called by scripts/check-torch2.sh. A source is torch-using when it, or a
project header it includes (transitively), includes an ATen/, c10/, torch/
or caffe2/ header. A unity batch (cmake/unity.cmake) is one source here:
it uses torch when one of its files does, and --only matches its path or
any of its files (scripts/unity_batches.py). Each one's compile command
from compile_commands.json is rerun with the given headers first on the include path, so they win over the
system's libtorch 1.13 in /usr/include.

A source whose preprocessed text (under the same command) already passed is
not compiled again: its stamp, named by that text's hash, is in --stamps.
Preprocessing takes about a second; the syntax check tens of seconds. The
checkout's own path is taken out of the hash, so a fresh clone elsewhere (CI)
reuses the stamps, and the PCH is built only when some source needs a check.
Before preprocessing, a source's manifest (named by its command, listing the
files its last passing check read and their hashes) is tried, as ccache's
direct mode does: when every file still hashes the same, it passed already.

The libtorch headers are parsed once into a precompiled header (--pch-dir)
that every check then includes first: parsing ATen.h was most of each
check. A source whose flags void the PCH (GCC then reads the headers as
text, -Winvalid-pch says so) is still checked, only slower.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

from unity_batches import batch_sources

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
TORCH = re.compile(r"^(ATen|c10|torch|caffe2)/")
ROOTS = ("server", "tests", "bench", "client", ".")


def includes(path, cache={}):
    if path not in cache:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                cache[path] = INCLUDE.findall(f.read())
        except OSError:
            cache[path] = []
    return cache[path]


def resolve(name, including):
    """The project file an #include names, or None for a system header."""
    for d in (os.path.dirname(including),) + ROOTS:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def uses_torch(path, memo, stack=()):
    if path in memo:
        return memo[path]
    memo[path] = False  # cycles: #pragma once makes them harmless
    for name in includes(path):
        if TORCH.match(name):
            memo[path] = True
            break
        dep = resolve(name, path)
        if dep and dep not in stack and uses_torch(dep, memo, stack + (path,)):
            memo[path] = True
            break
    return memo[path]


def syntax_command(entry, headers):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out = [args[0], "-fsyntax-only", "-isystem", headers, "-isystem",
           os.path.join(headers, "torch/csrc/api/include")]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
        elif a == "-c" or a.startswith("-O"):
            continue
        else:
            out.append(a)
    return out


PCH_HEADERS = ("ATen/ATen.h", "ATen/core/grad_mode.h", "ATen/Parallel.h")


def pch_header(pch_dir):
    """Writes the header that includes PCH_HEADERS; returns its path."""
    os.makedirs(pch_dir, exist_ok=True)
    header = os.path.join(os.path.abspath(pch_dir), "torch2_pch.h")
    with open(header, "w") as f:
        f.write("".join(f"#include <{h}>\n" for h in PCH_HEADERS))
    return header


def build_pch(entry, headers, header):
    """Compiles header under entry's flags into header.gch; returns the
    header to -include, or None (then every check parses them as text)."""
    cmd = [a for a in syntax_command(entry, headers)
           if a not in ("-fsyntax-only", entry["file"])]
    cmd += ["-x", "c++-header", header, "-o", header + ".gch"]
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"check-torch2: no precompiled header (checks parse the headers "
              f"per source):\n{r.stderr[-2000:]}", flush=True)
        return None
    return header


MARKER = re.compile(rb'^# \d+ "([^"<][^"]*)"', re.M)


def file_hash(path, memo={}):
    if path not in memo:
        try:
            with open(path, "rb") as f:
                memo[path] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            memo[path] = None
    return memo[path]


def manifest_path(cmd, root, stamps):
    key = hashlib.sha256(" ".join(cmd).replace(root, "@ROOT@").encode())
    return os.path.join(stamps, "m-" + key.hexdigest() + ".json")


def manifest_holds(cmd, entry, root, stamps):
    """Whether the files the last passing check read all hash the same."""
    try:
        with open(manifest_path(cmd, root, stamps)) as f:
            deps = json.load(f)
    except (OSError, ValueError):
        return False
    d = entry["directory"]
    return all(file_hash(os.path.join(d, p.replace("@ROOT@", root))) == h
               for p, h in deps.items())


def stamp_of(cmd, entry, root):
    """The hash of the source as the compiler sees it, with the checkout's
    path taken out, and the files it read; (None, None) if -E fails."""
    pre = [a if a != "-fsyntax-only" else "-E" for a in cmd]
    r = subprocess.run(pre, cwd=entry["directory"], capture_output=True)
    if r.returncode != 0:
        return None, None
    h = hashlib.sha256(" ".join(cmd).replace(root, "@ROOT@").encode())
    h.update(r.stdout.replace(root.encode(), b"@ROOT@"))
    files = {m.decode(errors="replace") for m in MARKER.findall(r.stdout)}
    return h.hexdigest(), sorted(files)


def write_manifest(cmd, entry, root, stamps, files):
    d = entry["directory"]
    deps = {p.replace(root, "@ROOT@"): file_hash(os.path.join(d, p)) for p in files}
    if None in deps.values():
        return
    tmp = manifest_path(cmd, root, stamps) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(deps, f)
    os.replace(tmp, manifest_path(cmd, root, stamps))


def stamp_or_hit(cmd, entry, root, stamps):
    """(passed already, stamp, files read) for one source."""
    if manifest_holds(cmd, entry, root, stamps):
        return True, None, None
    stamp, files = stamp_of(cmd, entry, root)
    hit = bool(stamp) and os.path.exists(os.path.join(stamps, stamp))
    if hit:
        write_manifest(cmd, entry, root, stamps, files)
    return hit, stamp, files


def command(entry, headers, pch):
    cmd = syntax_command(entry, headers)
    if pch:
        cmd[1:1] = ["-Winvalid-pch", "-include", pch]
    return cmd


def check(entry, cmd, stamp, files, stamps, root):
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
    if r.returncode == 0 and stamp:
        open(os.path.join(stamps, stamp), "w").close()
        write_manifest(cmd, entry, root, stamps, files)
    return entry["file"], r.returncode, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headers", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--compile-commands", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--only", default="", help="regex: check only matching sources")
    ap.add_argument("--stamps", default="", help="folder of passed-source stamps (empty: none)")
    ap.add_argument("--pch-dir", default="", help="where to build the headers' PCH (empty: none)")
    a = ap.parse_args()
    if a.stamps:
        os.makedirs(a.stamps, exist_ok=True)
    with open(a.compile_commands) as f:
        entries = json.load(f)
    root = os.getcwd()
    memo = {}
    srcs = [batch_sources(e) for e in entries]
    todo = [e for e, src in zip(entries, srcs)
            if any(uses_torch(os.path.relpath(f, root), memo) for f in src)
            and any(re.search(a.only, f) for f in [e["file"]] + src)]
    if not todo:
        sys.exit("check-torch2: no torch-using source found in " + a.compile_commands)
    print(f"check-torch2: {len(todo)} of {len(entries)} sources use torch; "
          f"compiling them against libtorch-dev {a.version}", flush=True)
    pch = pch_header(a.pch_dir) if a.pch_dir else None
    failed = []
    no_pch = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        cmds = [command(e, a.headers, pch) for e in todo]
        seen = list(pool.map(lambda ec: stamp_or_hit(ec[1], ec[0], root, a.stamps),
                             zip(todo, cmds))
                    if a.stamps else [(False, None, None)] * len(todo))
        left = [i for i, (hit, _, _) in enumerate(seen) if not hit]
        stamps = [st for _, st, _ in seen]
        reused = len(todo) - len(left)
        server = [todo[i] for i in left if "/server/" in todo[i]["file"]]
        if pch and left and not build_pch((server or [todo[left[0]]])[0], a.headers, pch):
            pch = None  # the stamps named the PCH's command: none recorded
            cmds = [command(e, a.headers, None) for e in todo]
            stamps = [None] * len(todo)
        jobs = [(todo[i], cmds[i], stamps[i], seen[i][2], a.stamps, root) for i in left]
        for path, rc, err in pool.map(lambda j: check(*j), jobs):
            no_pch += ".gch: not used" in err
            if rc != 0:
                failed.append(path)
                print(f"FAIL {os.path.relpath(path, root)}\n{err}", flush=True)
    if failed:
        sys.exit(f"check-torch2: {len(failed)} of {len(todo)} sources do not "
                 f"compile against libtorch {a.version}")
    print(f"check-torch2: all {len(todo)} compile against libtorch {a.version} "
          f"({reused} unchanged since they last passed"
          + (f"; {no_pch} without the precompiled header" if pch else "") + ")")


if __name__ == "__main__":
    main()
