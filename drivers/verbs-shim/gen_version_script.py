#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Read the version nodes and exports of an installed rdma-core library.

Shared by the drop-in libibverbs.so.1 (drivers/verbs-shim) and
librdmacm.so.1 (drivers/rdmacm-shim).

  gen_version_script.py locate [SONAME]
      print the path of the reference library SONAME (default
      libibverbs.so.1; ldconfig's x86-64 entry).
  gen_version_script.py map REF OUT
      write a GNU ld version script with every node of REF, the node
      inheritance REF declares (readelf -V), and every default-version
      export (nm --dynamic --with-symbol-versions), `local: *` last.
  gen_version_script.py exports LIB
      print "name@@NODE" for every default-version export of LIB and
      "NODE<-PARENT" for every node, sorted; two libraries have the same ABI
      surface exactly when these lists are equal.
  gen_version_script.py compare REF OURS
      exit 0 when `exports` of both match, else print the difference.

Non-default compat aliases (name@IBVERBS_1.0 without @@) are deliberately
not reproduced: only binaries linked before 2006 use them.
"""
import re
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def locate(soname='libibverbs.so.1'):
    for line in run('/sbin/ldconfig', '-p').splitlines():
        m = re.match(r'\s*' + re.escape(soname) + r' \(([^)]*)\) => (\S+)', line)
        if m and 'x86-64' in m.group(1):
            return m.group(2)
    for p in ('/usr/lib/x86_64-linux-gnu/' + soname, '/usr/lib64/' + soname):
        try:
            open(p, 'rb').close()
            return p
        except OSError:
            pass
    return None


def nodes(lib):
    """[(node, parent or None)] in definition order, from .gnu.version_d."""
    out = run('readelf', '-V', '--wide', lib)
    sect = out.split("Version definition section '.gnu.version_d'", 1)
    if len(sect) < 2:
        raise SystemExit(f'{lib}: no version definitions')
    body = sect[1].split('Version needs section', 1)[0]
    result = []
    for line in body.splitlines():
        m = re.search(r'Flags: (\S+)\s+Index: \d+\s+Cnt: \d+\s+Name: (\S+)', line)
        if m:
            if m.group(1) != 'BASE':
                result.append([m.group(2), None])
            continue
        m = re.search(r'Parent 1: (\S+)', line)
        if m and result:
            result[-1][1] = m.group(1)
    return [tuple(n) for n in result]


def exports(lib):
    """{node: [symbol]} of default-version (@@) defined exports."""
    out = run('nm', '--dynamic', '--defined-only', '--with-symbol-versions', lib)
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or '@@' not in parts[2] or parts[1] == 'A':
            continue
        name, node = parts[2].split('@@', 1)
        syms.setdefault(node, []).append(name)
    return syms


def surface(lib):
    lines = [f'{n}<-{p or ""}' for n, p in nodes(lib)]
    for node, names in exports(lib).items():
        lines += [f'{s}@@{node}' for s in names]
    return sorted(lines)


def write_map(ref, out):
    syms = exports(ref)
    ns = nodes(ref)
    text = ['/* Generated from %s by gen_version_script.py: do not edit. */' % ref]
    for i, (node, parent) in enumerate(ns):
        text.append('%s {' % node)
        names = sorted(syms.get(node, []))
        if names:
            text.append('\tglobal:')
            text += ['\t\t%s;' % s for s in names]
        if i == len(ns) - 1:
            text.append('\tlocal: *;')
        text.append('}%s;' % (' ' + parent if parent else ''))
    with open(out, 'w') as f:
        f.write('\n'.join(text) + '\n')


def main(argv):
    if len(argv) in (2, 3) and argv[1] == 'locate':
        p = locate(*argv[2:])
        if not p:
            return 1
        print(p)
        return 0
    if len(argv) == 4 and argv[1] == 'map':
        write_map(argv[2], argv[3])
        return 0
    if len(argv) == 3 and argv[1] == 'exports':
        print('\n'.join(surface(argv[2])))
        return 0
    if len(argv) == 4 and argv[1] == 'compare':
        ref, ours = set(surface(argv[2])), set(surface(argv[3]))
        for s in sorted(ref - ours):
            print(f'missing: {s}')
        for s in sorted(ours - ref):
            print(f'extra:   {s}')
        print(f'{len(ref)} reference entries, {len(ours)} ours, '
              f'{len(ref - ours)} missing, {len(ours - ref)} extra')
        return 0 if ref == ours else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
