#!/usr/bin/python3
"""Checks the layering of cmake/layers.txt against the tree.

  check_layers.py [--root DIR] [--objects DIR]

Includes: every #include "..." of src/<part>/ and of a part's public
headers is mapped to the part that owns it (tickwire/X.h by the table's
`owns` lines, <part>/X.h by its folder); one outside the part's row fails,
and so does another part's *_internal.h.  Calls (with --objects, the folder
holding the library's object files as src/<part>/*.o): every undefined tw_
symbol of a part's objects must be defined by that part or one it may use;
and inside a part, calls between its files run one way: the files (each
object file's undefined tw_ symbols against the ones the others define)
form no cycle, for every part the table's `one-way:` line names.  Also
fails on a part or a public header the table does not know.  Prints
one line per violation and exits 1 if there is any, else prints a summary
and exits 0."""
import os
import re
import subprocess
import sys


def load_table(path):
    uses, owns, oneway = {}, {}, set()
    for n, line in enumerate(open(path), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        if ':' not in line:
            sys.exit(f'{path}:{n}: expected "part: parts..." or "owns part: headers..."')
        left, right = line.split(':', 1)
        left = left.split()
        if left == ['one-way']:
            oneway.update(right.split())
        elif len(left) == 2 and left[0] == 'owns':
            for h in right.split():
                if h in owns:
                    sys.exit(f'{path}:{n}: {h} already belongs to {owns[h]}')
                owns[h] = left[1]
        elif len(left) == 1:
            if left[0] in uses:
                sys.exit(f'{path}:{n}: part {left[0]} listed twice')
            uses[left[0]] = set(right.split())
        else:
            sys.exit(f'{path}:{n}: cannot read "{line}"')
    for p, deps in uses.items():
        for d in deps:
            if d not in uses:
                sys.exit(f'{path}: {p} uses {d}, which is not a part of the table')
    for h, p in owns.items():
        if p not in uses:
            sys.exit(f'{path}: {h} belongs to {p}, which is not a part of the table')
    for p in oneway:
        if p not in uses:
            sys.exit(f'{path}: one-way names {p}, which is not a part of the table')
    return uses, owns, oneway


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def includes(path):
    with open(path, errors='replace') as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1)


def check_includes(root, uses, owns, bad):
    files = []  # (path, part)
    src = os.path.join(root, 'src')
    for part in sorted(os.listdir(src)):
        d = os.path.join(src, part)
        if not os.path.isdir(d):
            continue
        if part not in uses:
            bad.append(f'src/{part}: a part the table does not list')
            continue
        for dirpath, _, names in os.walk(d):
            for f in sorted(names):
                if f.endswith(('.c', '.h')):
                    files.append((os.path.join(dirpath, f), part))
    inc = os.path.join(root, 'include', 'tickwire')
    for h in sorted(os.listdir(inc)):
        if not h.endswith('.h'):
            continue
        if h not in owns:
            bad.append(f'include/tickwire/{h}: a header no part owns in the table')
            continue
        files.append((os.path.join(inc, h), owns[h]))
    n_inc = 0
    for path, part in files:
        rel = os.path.relpath(path, root)
        for n, name in includes(path):
            if name.startswith('tickwire/'):
                h = name[len('tickwire/'):]
                if h not in owns:
                    continue  # generated or not ours: the compiler says
                owner, internal = owns[h], False
            elif '/' in name and name.split('/', 1)[0] in uses:
                owner = name.split('/', 1)[0]
                internal = True
            else:
                continue
            n_inc += 1
            if owner == part:
                continue
            if internal:
                bad.append(f'{rel}:{n}: includes {name}, the internals of {owner}')
            elif owner not in uses[part]:
                bad.append(f'{rel}:{n}: includes {name} ({owner}), which {part} may not use')
    return len(files), n_inc


def check_calls(objdir, uses, oneway, bad):
    objs = {}  # part -> [paths]
    file_of = {}  # symbol -> the object file defining it
    base = os.path.join(objdir, 'src')
    if not os.path.isdir(base):
        bad.append(f'{objdir}: no src/<part>/ object files there')
        return 0
    for part in sorted(os.listdir(base)):
        for dirpath, _, names in os.walk(os.path.join(base, part)):
            objs.setdefault(part, []).extend(
                os.path.join(dirpath, f) for f in sorted(names) if f.endswith('.o'))
    defined, undefined = {}, []
    for part, paths in objs.items():
        if not paths:
            continue
        out = subprocess.run(['nm', '-A', '--defined-only', '-g'] + paths, capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            sym = line.split()[-1]
            if sym.startswith('tw_'):
                defined.setdefault(sym, part)
                obj = os.path.relpath(line.split(':', 1)[0], objdir)
                file_of.setdefault(sym, obj)
        out = subprocess.run(['nm', '-A', '--undefined-only'] + paths, capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            sym = line.split()[-1]
            if sym.startswith('tw_'):
                obj = line.split(':', 1)[0]
                undefined.append((part, os.path.relpath(obj, objdir), sym))
    check_oneway(undefined, file_of, defined, oneway, bad)
    n = 0
    for part, obj, sym in undefined:
        owner = defined.get(sym)
        if owner is None or owner == part:
            continue
        n += 1
        if part not in uses:
            bad.append(f'{obj}: objects of src/{part}, a part the table does not list')
        elif owner not in uses[part]:
            bad.append(f'{obj}: calls {sym} ({owner}), which {part} may not use')
    return n


def check_oneway(undefined, file_of, defined, oneway, bad):
    """Within each one-way part: the graph of its files (an edge from the
    file that uses a symbol to the one that defines it) has no cycle; each
    cycle (a strongly connected set of files) is one violation, naming the
    files and the symbols of its edges."""
    edges = {}  # part -> {from: {to: [symbols]}}
    for part, obj, sym in undefined:
        if part not in oneway or defined.get(sym) != part:
            continue
        to = file_of[sym]
        if to != obj:
            edges.setdefault(part, {}).setdefault(obj, {}).setdefault(to, []).append(sym)
    for part in sorted(edges):
        g = edges[part]
        for comp in strongly_connected(g):
            if len(comp) < 2:
                continue
            inside = set(comp)
            calls = [f'{os.path.basename(a)} -> {os.path.basename(b)} ({", ".join(sorted(s))})'
                     for a in sorted(comp) for b, s in sorted(g.get(a, {}).items())
                     if b in inside]
            bad.append(f'src/{part}: calls run both ways between '
                       + ', '.join(os.path.basename(f) for f in sorted(comp)) + ': '
                       + '; '.join(calls))


def strongly_connected(g):
    """Tarjan's algorithm, iterative: the strongly connected sets of g
    (node -> {node: ...})."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    nodes = set(g) | {b for a in g for b in g[a]}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(g.get(root, {}))))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = n
                    n += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(g.get(nxt, {})))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def main(argv):
    root, objdir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))), None
    i = 0
    while i < len(argv):
        if argv[i] == '--root' and i + 1 < len(argv):
            root = argv[i + 1]
            i += 2
        elif argv[i] == '--objects' and i + 1 < len(argv):
            objdir = argv[i + 1]
            i += 2
        else:
            sys.exit(__doc__)
    uses, owns, oneway = load_table(os.path.join(root, 'cmake', 'layers.txt'))
    bad = []
    n_files, n_inc = check_includes(root, uses, owns, bad)
    n_calls = check_calls(objdir, uses, oneway, bad) if objdir else 0
    for b in bad:
        print(b)
    if bad:
        print(f'layers: {len(bad)} use(s) outside cmake/layers.txt')
        return 1
    print(f'layers: ok ({len(uses)} parts, {n_files} files, {n_inc} includes'
          + (f', {n_calls} calls between parts' if objdir else '')
          + (f'; one way inside {" ".join(sorted(oneway))}' if objdir and oneway else '') + ')')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
