#!/usr/bin/env python3
"""The engine's prefetches are in its compiled code (TAP).

GCC 12 deleted every call of a static function whose only effects were
__builtin_prefetch() calls, so the requester's WQE prefetch of sessions
20-25 was never emitted (issue 18, doc/benchmarks.md session 26). This
disassembles the engine's library and checks that each function meant to
prefetch does.

usage: check_prefetch.py OBJDUMP LIBRARY
"""
import re
import subprocess
import sys

# function: the instruction it must hold, and why
EXPECT = [
    ('xport_cq_post', 'prefetchw', 'the CQE slot ahead (xport_cq_slot_free)'),
    ('xport_comp_rx', 'prefetchw', 'the CQE slot ahead of the completions an ACK stages'),
]


def functions(objdump, lib):
    """Map each function of @lib to the mnemonics of its instructions."""
    out = subprocess.run([objdump, '-d', '--no-show-raw-insn', lib],
                         check=True, capture_output=True, text=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'^[0-9a-f]+ <([^>]+)>:$', line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.match(r'^\s+[0-9a-f]+:\s+(\S+)', line)
        if m and cur is not None:
            cur.append(m.group(1))
    return funcs


def main():
    objdump, lib = sys.argv[1], sys.argv[2]
    funcs = functions(objdump, lib)
    print(f'1..{len(EXPECT)}')
    bad = 0
    for i, (fn, insn, why) in enumerate(EXPECT, 1):
        body = funcs.get(fn)
        ok = body is not None and insn in body
        if not ok:
            bad += 1
        detail = 'missing' if body is None else f'{body.count(insn)} {insn}'
        print(f'{"ok" if ok else "not ok"} {i} - {fn} prefetches {why} ({detail})')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
