#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check that the libraries under lib/ include only downward.

The layer table is lib/layers.txt (one line per library: NAME LAYER USES...).
A file in lib/NAME may `#include "x.h"` only when x.h is one of lib/NAME's
own headers or a header of a library NAME uses (directly or through the
libraries it uses). Every used library must sit on a lower layer, so the
libraries cannot include each other in a circle.

It fails (exit 1, one line per finding) on:
  * an include of another library's header that the table does not allow
    (upward, sideways, or simply undeclared);
  * an include of a header that no library has (lib/ never includes
    app/, drivers/ or test/ headers);
  * a header name that two libraries both have (includes are by file name);
  * a directory of lib/ missing from the table, or a table line naming a
    directory that does not exist;
  * a table line whose USES names an unknown library or one on the same or
    a higher layer.

Usage: check_layers.py [--tap] [SOURCE_ROOT]   (default: this script's ../)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = ('.c', '.h')


def read_table(path):
    """@return ({name: (layer, [uses])}, [problems])"""
    table, problems = {}, []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].split()
            if not line:
                continue
            where = f'{os.path.basename(path)}:{n}'
            if len(line) < 2 or not line[1].isdigit():
                problems.append(f'{where}: expected "NAME LAYER USES...", got {" ".join(line)!r}')
                continue
            if line[0] in table:
                problems.append(f'{where}: {line[0]} listed twice')
                continue
            table[line[0]] = (int(line[1]), line[2:])
    for name, (layer, uses) in table.items():
        for u in uses:
            if u not in table:
                problems.append(f'table: {name} uses {u}, which is not in the table')
            elif table[u][0] >= layer:
                problems.append(f'table: {name} (layer {layer}) uses {u} (layer {table[u][0]}):'
                                ' a used library must sit on a lower layer')
    return table, problems


def closure(table, name):
    """@return every library @p name may include: itself and what it uses, transitively."""
    seen, todo = set(), [name]
    while todo:
        lib = todo.pop()
        if lib in seen or lib not in table:
            continue
        seen.add(lib)
        todo.extend(table[lib][1])
    return seen


def check(root):
    """@return list of problems (empty: the layering holds)"""
    lib_dir = os.path.join(root, 'lib')
    table, problems = read_table(os.path.join(lib_dir, 'layers.txt'))
    dirs = sorted(d for d in os.listdir(lib_dir) if os.path.isdir(os.path.join(lib_dir, d)))
    for d in dirs:
        if d not in table:
            problems.append(f'lib/{d}: not in lib/layers.txt (give it a layer and its uses)')
    for name in table:
        if name not in dirs:
            problems.append(f'lib/layers.txt: {name} has no directory lib/{name}')

    owner, files = {}, {}
    for d in dirs:
        names = sorted(f for f in os.listdir(os.path.join(lib_dir, d)) if f.endswith(SOURCE_EXT))
        files[d] = names
        for f in names:
            if f.endswith('.h'):
                if f in owner:
                    problems.append(f'{f}: a header of both lib/{owner[f]} and lib/{d}'
                                    ' (includes name files, so header names must be unique)')
                else:
                    owner[f] = d

    for d in dirs:
        allowed = closure(table, d)
        for f in files[d]:
            path = os.path.join(lib_dir, d, f)
            with open(path, encoding='utf-8', errors='replace') as src:
                text = src.read()
            for m in INCLUDE.finditer(text):
                inc = os.path.basename(m.group(1))
                line = text.count('\n', 0, m.start()) + 1
                where = f'lib/{d}/{f}:{line}'
                lib = owner.get(inc)
                if lib is None:
                    problems.append(f'{where}: "{m.group(1)}" is no header of lib/'
                                    ' (a library includes only itself and lower libraries)')
                elif lib not in allowed:
                    layer = table.get(lib, (None,))[0]
                    mine = table.get(d, (None,))[0]
                    uses = ', '.join(sorted(allowed - {d}))
                    problems.append(f'{where}: includes "{inc}" of lib/{lib} (layer {layer});'
                                    f' lib/{d} (layer {mine}) uses '
                                    + (f'only {uses}' if uses else 'no other library'))
    return problems


def main(argv):
    tap = '--tap' in argv
    args = [a for a in argv[1:] if a != '--tap']
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    problems = check(root)
    if tap:
        print('1..1')
        for p in problems:
            print(f'# {p}')
        print(('not ok' if problems else 'ok') + ' 1 lib/ includes point only downward')
    else:
        for p in problems:
            print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
