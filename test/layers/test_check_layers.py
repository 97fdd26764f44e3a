#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""scripts/check_layers.py on made-up trees: a clean tree passes, and every
kind of violation (upward, sideways, undeclared, unknown header, duplicate
header name, a library missing from the table, a table that points up or
names nothing) fails with a message naming the file. TAP output.

Usage: test_check_layers.py PATH/TO/check_layers.py
"""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile

spec = importlib.util.spec_from_file_location('check_layers', sys.argv[1])
cl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cl)
WORK = tempfile.TemporaryDirectory(prefix='split-layers-')  # removed at exit

TABLE = """\
# name layer uses
low    0
side   0
mid    1  low
top    2  mid side
"""
FILES = {
    'low/low.h': '#include <stdint.h>\n',
    'low/low.c': '#include "low.h"\n',
    'side/side.h': '',
    'mid/mid.h': '#include "low.h"\n',
    'mid/mid.c': '#include "mid.h"\n#include "mid_internal.h"\n',
    'mid/mid_internal.h': '#include "mid.h"\n',
    # top reaches low through mid: allowed (uses are transitive)
    'top/top.h': '#include "mid.h"\n',
    'top/top.c': '#include "top.h"\n#include "side.h"\n#include "low.h"\n',
}


def tree(extra_files=None, table=TABLE, drop=()):
    d = tempfile.mkdtemp(dir=WORK.name)
    files = dict(FILES)
    files.update(extra_files or {})
    for p in drop:
        files.pop(p, None)
    for p, text in files.items():
        os.makedirs(os.path.join(d, 'lib', os.path.dirname(p)), exist_ok=True)
        with open(os.path.join(d, 'lib', p), 'w') as f:
            f.write(text)
    with open(os.path.join(d, 'lib', 'layers.txt'), 'w') as f:
        f.write(table)
    return d


CASES = [
    # (name, tree, substring every problem list must contain; None: no problem)
    ('a clean tree passes', tree(), None),
    ('an upward include fails', tree({'low/low.c': '#include "low.h"\n#include "mid.h"\n'}),
     'lib/low/low.c:2: includes "mid.h" of lib/mid'),
    ('a sideways include fails', tree({'side/side.c': '#include "low.h"\n'}),
     'lib/side/side.c:1: includes "low.h" of lib/low'),
    ('an include from a header fails too', tree({'mid/mid.h': '#include "top.h"\n'}),
     'lib/mid/mid.h:1: includes "top.h" of lib/top'),
    ('an include of a non-library header fails', tree({'mid/mid.c': '#include "worker.h"\n'}),
     'lib/mid/mid.c:1: "worker.h" is no header of lib/'),
    ('a header name in two libraries fails', tree({'side/low.h': ''}),
     'low.h: a header of both lib/low and lib/side'),
    ('a library missing from the table fails', tree({'new/new.c': ''}),
     'lib/new: not in lib/layers.txt'),
    ('a table line without a directory fails', tree(table=TABLE + 'gone 3\n'),
     'gone has no directory lib/gone'),
    ('a table using a higher layer fails', tree(table=TABLE.replace('low    0', 'low    0  top')),
     'low (layer 0) uses top (layer 2)'),
    ('a table using a library on the same layer fails',
     tree(table=TABLE.replace('side   0', 'side   0  low')),
     'side (layer 0) uses low (layer 0)'),
    ('a table using an unknown library fails', 
     tree(table=TABLE.replace('mid    1  low', 'mid    1  low nope')),
     'mid uses nope, which is not in the table'),
]

print(f'1..{len(CASES) + 1}')
failed = 0
for i, (name, root, want) in enumerate(CASES, 1):
    problems = cl.check(root)
    ok = (not problems) if want is None else any(want in p for p in problems)
    if not ok:
        failed += 1
        for p in problems or ['(no problem found)']:
            print(f'# {p}')
    print(f'{"ok" if ok else "not ok"} {i} {name}')

# The real tree's checker exit status follows its findings.
root = tree({'low/low.c': '#include "top.h"\n'})
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = cl.main(['check_layers.py', root])
for line in out.getvalue().splitlines():
    print(f'# {line}')
ok = rc == 1
failed += not ok
print(f'{"ok" if ok else "not ok"} {len(CASES) + 1} main() exits 1 on a violation')
WORK.cleanup()
sys.exit(1 if failed else 0)
