#!/usr/bin/python3
"""Checks the layering of cmake/layers.txt against the tree.

  check_layers.py [--root DIR] [--objects DIR]

Includes: every #include "..." of src/<part>/ and of a part's public
headers is mapped to the part that owns it (tickwire/X.h by the table's
`owns` lines, <part>/X.h by its folder); one outside the part's row fails,
and so does another part's *_internal.h.  Calls (with --objects, the folder
holding the library's object files as src/<part>/*.o): every undefined tw_
symbol of a part's objects must be defined by that part or one it may use.
Also fails on a part or a public header the table does not know.  Prints
one line per violation and exits 1 if there is any, else prints a summary
and exits 0."""
import os
import re
import subprocess
import sys


def load_table(path):
    uses, owns = {}, {}
    for n, line in enumerate(open(path), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        if ':' not in line:
            sys.exit(f'{path}:{n}: expected "part: parts..." or "owns part: headers..."')
        left, right = line.split(':', 1)
        left = left.split()
        if len(left) == 2 and left[0] == 'owns':
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
    return uses, owns


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


def check_calls(objdir, uses, bad):
    objs = {}  # part -> [paths]
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
        out = subprocess.run(['nm', '-A', '--undefined-only'] + paths, capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            sym = line.split()[-1]
            if sym.startswith('tw_'):
                obj = line.split(':', 1)[0]
                undefined.append((part, os.path.relpath(obj, objdir), sym))
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
    uses, owns = load_table(os.path.join(root, 'cmake', 'layers.txt'))
    bad = []
    n_files, n_inc = check_includes(root, uses, owns, bad)
    n_calls = check_calls(objdir, uses, bad) if objdir else 0
    for b in bad:
        print(b)
    if bad:
        print(f'layers: {len(bad)} use(s) outside cmake/layers.txt')
        return 1
    print(f'layers: ok ({len(uses)} parts, {n_files} files, {n_inc} includes'
          + (f', {n_calls} calls between parts' if objdir else '') + ')')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
