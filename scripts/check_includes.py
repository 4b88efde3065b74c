#!/usr/bin/env python3
"""Fails on an #include that goes against the layer order in docs/architecture.md,
and on an include circle between files, inside a folder too.

The "Layer order" table of docs/architecture.md (between <!-- layers:begin/end -->) names,
for each server/ folder, the layers it uses and whether it may include torch
or gRPC headers. A folder may include itself and anything it uses, directly or
through another layer; a folder's internal/ headers (server/<layer>/internal/)
are for that folder alone. Prints one line per offence (file:line, the include,
why) and exits 1; exits 0 and says how many includes it checked otherwise.

A circle is counted between units: a header and its .cc are one unit, so
a.h including b.h while b.cc includes a.h is a circle (issue 27: the two
files then cannot be understood, or moved, one without the other). The fix
is to move what both need into a third file.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TORCH = re.compile(r'^(ATen|torch|c10)/')
GRPC = re.compile(r'^(grpcpp|grpc)/|\.pb\.h$')
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def read_layers(readme):
    text = readme.read_text()
    m = re.search(r'<!-- layers:begin -->(.*?)<!-- layers:end -->', text, re.S)
    if not m:
        sys.exit(f'{readme}: no <!-- layers:begin --> ... <!-- layers:end --> table')
    layers = {}
    for row in m.group(1).strip().splitlines()[2:]:
        cells = [c.strip() for c in row.strip().strip('|').split('|')]
        if len(cells) != 4 or cells[2] not in ('yes', 'no') or cells[3] not in ('yes', 'no'):
            sys.exit(f'{readme}: malformed layer row: {row}')
        layers[cells[0]] = (cells[1].split(), cells[2] == 'yes', cells[3] == 'yes')
    for name, (uses, _, _) in layers.items():
        for u in uses:
            if u not in layers:
                sys.exit(f'{readme}: layer {name} uses unknown layer {u}')
    return layers


def reachable(layers, name):
    seen, todo = set(), list(layers[name][0])
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(layers[n][0])
    if name in seen:
        sys.exit(f'docs/architecture.md: layer {name} uses itself through {sorted(seen)}')
    return seen


def check(root):
    layers = read_layers(root / 'docs' / 'architecture.md')
    server = root / 'server'
    folders = {p.name for p in server.iterdir() if p.is_dir()}
    problems, checked = [], 0
    missing = sorted(folders - set(layers))
    if missing:
        problems.append('docs/architecture.md: server/ folders missing from the layer table: '
                        f'{missing}')
    # A file's layer is its first folder under server/ (config/internal/x.cc
    # belongs to config).
    files = [(f, f.relative_to(server).parts[0]) for f in server.rglob('*')
             if f.suffix in ('.h', '.cc') and f.parent != server]
    files += [(f, f.name) for f in server.glob('*.cc')]
    for f, layer in sorted(files):
        if layer not in layers:
            continue
        allowed = reachable(layers, layer) | {layer}
        _, torch_ok, grpc_ok = layers[layer]
        for lineno, line in enumerate(f.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            checked += 1
            inc = m.group(1)
            where = f'{f.relative_to(root)}:{lineno}: #include "{inc}"'
            head = inc.split('/')[0]
            if '/' in inc and head in folders and inc.split('/')[1:2] == ['internal'] \
                    and head != layer:
                problems.append(f'{where}: {head}/internal/ is internal to {head}')
            elif '/' in inc and head in folders and head not in allowed:
                problems.append(f'{where}: {layer} may not use {head} '
                                f'(it uses {", ".join(sorted(allowed - {layer})) or "nothing"})')
            elif TORCH.search(inc) and not torch_ok:
                problems.append(f'{where}: {layer} is torch-free')
            elif GRPC.search(inc) and not grpc_ok:
                problems.append(f'{where}: {layer} is gRPC-free')
    for circle in include_circles(server):
        problems.append(f'server/{circle[0]}: include circle between {", ".join(circle)} '
                        '(move what they share into a file both include)')
    return problems, checked


def unit_of(path):
    """'eval/block_scorer' for server/eval/block_scorer.h and .cc."""
    return str(path.with_suffix(''))


def include_circles(server):
    """Each circle between units, as a sorted list of unit names."""
    edges = {}
    for f in server.rglob('*'):
        if f.suffix not in ('.h', '.cc'):
            continue
        here = unit_of(f.relative_to(server))
        deps = edges.setdefault(here, set())
        for line in f.read_text().splitlines():
            m = INCLUDE.match(line)
            if m and (server / m.group(1)).is_file():
                there = unit_of(pathlib.Path(m.group(1)))
                if there != here:
                    deps.add(there)
    # Tarjan's strongly connected components, iteratively.
    index, low, on_stack, stack, circles = {}, {}, set(), [], []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == node:
                        break
                if len(members) > 1:
                    circles.append(sorted(members))
    return sorted(circles)


def self_test():
    """The check fails where it should: an upward include, torch in a
    torch-free layer, gRPC in a gRPC-free one, a folder missing from the
    table; and passes a clean tree."""
    import tempfile
    table = ('<!-- layers:begin -->\n| layer | uses | torch | grpc |\n|---|---|---|---|\n'
             '| low | | no | no |\n| mid | low | yes | no |\n| top | mid | no | yes |\n'
             '<!-- layers:end -->\n')
    cases = {
        'clean': ({'mid/a.cc': '#include "low/b.h"\n#include <ATen/ATen.h>',
                   'top/c.cc': '#include "low/b.h"\n#include <grpcpp/grpcpp.h>'}, 0),
        'upward': ({'low/b.cc': '#include "mid/a.h"'}, 1),
        'torch': ({'top/c.cc': '#include <torch/types.h>'}, 1),
        'grpc': ({'mid/a.cc': '#include "dflash/eval/v1/eval.pb.h"'}, 1),
        'unlisted folder': ({'extra/d.cc': '#include "low/b.h"'}, 1),
        'circle in a folder': ({'mid/a.h': '', 'mid/a.cc': '#include "mid/b.h"',
                                'mid/b.h': '#include "mid/a.h"'}, 1),
        'three-file circle': ({'low/x.h': '#include "low/y.h"', 'low/y.h': '#include "low/z.h"',
                               'low/z.h': '', 'low/z.cc': '#include "low/x.h"'}, 1),
        'no circle': ({'low/x.h': '', 'low/x.cc': '#include "low/x.h"\n#include "low/y.h"',
                       'low/y.h': ''}, 0),
        'internal': ({'mid/internal/e.cc': '#include "low/b.h"\n#include "mid/a.h"',
                      'mid/a.cc': '#include "mid/internal/e.h"',
                      'top/c.cc': '#include "mid/internal/e.h"'}, 1),
        'internal upward': ({'low/internal/f.cc': '#include "mid/a.h"'}, 1),
    }
    for name, (files, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            root = pathlib.Path(d)
            (root / 'docs').mkdir()
            (root / 'docs' / 'architecture.md').write_text(table)
            for folder in ('low', 'mid', 'top'):
                (root / 'server' / folder).mkdir(parents=True)
            for rel, text in files.items():
                f = root / 'server' / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text + '\n')
            problems, _ = check(root)
            if len(problems) != want:
                print(f'self-test {name}: expected {want} problem(s), got {problems}')
                return 1
    print(f'check_includes: self-test passed ({len(cases)} cases)')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    problems, checked = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f'check_includes: {len(problems)} problem(s): includes against the layer order in '
              'docs/architecture.md or include circles')
        return 1
    print(f'check_includes: {checked} includes follow the layer order, no include circle')
    return 0


if __name__ == '__main__':
    sys.exit(main())
