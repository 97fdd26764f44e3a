#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Includes point downward: the layer table of app/roce-daemon's files.

Reads every `#include "..."` of app/roce-daemon/ and fails (TAP) on an
include against the declared order, on a circle, and on a file the table
does not place. A module is X.c and X.h together; X may include a module
on its own or a lower layer of DAEMON_LAYERS, and the modules must not
include each other in a circle. A function declared in X.h is defined in
X.c (a header must not promise another file's code, which would hide a
call from the include graph). The libraries' order is lib/layers.txt
(scripts/check_layers.py); includes of library headers are not judged here.

Usage: include_layers.py SOURCE_ROOT   (meson test `daemon_layers`, suite
`layers`). Before checking the tree, it checks itself on made-up trees: a
circle, an upward include, an unplaced file and a hidden definition must
each be reported.

Adding a file to app/roce-daemon: put its module in DAEMON_LAYERS on the
lowest layer above everything it includes.
"""
import os
import re
import shutil
import sys
import tempfile

# app/roce-daemon modules (X.c + X.h), bottom first. A module may include
# modules of its own layer or below; callbacks in daemon_state.h (on_event,
# on_link, ctl_msg_fn) and ai_state.h (answered) are how a lower module
# reaches a higher one.
DAEMON_LAYERS = [
    ["config", "ctl_msg", "gsi_wire", "link",            # data and pure helpers
     "flow_steer", "mcast_table"],
    ["counters", "gid", "gid_ndev", "neigh_table"],
    ["port"],                                            # ethdev ports
    ["daemon_state"],                                    # struct daemon
    ["worker"],                                          # the poll loops
    ["capture", "engine_xport", "mcast", "neigh_kernel", "port_link"],
    ["neigh"],                                           # ARP / ND / resolution
    ["gsi"],                                             # QP1 MADs
    ["control", "telemetry"],                            # control loop, /roce/...
    ["daemon"],                                          # start-up and shutdown
    ["ai_state"],                                        # application interface: state
    ["ai_op"],                                           #   operations, messages
    ["ai_cq", "ai_mr", "ai_resolve", "ai_telemetry"],    #   roles
    ["ai_qp"],
    ["ai_event"],
    ["app_iface"],                                       #   set-up, tables
    ["main"],
]

DAEMON_DIR = "app/roce-daemon"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DEFINITION = re.compile(r"^(\w+)\(", re.M)
NOT_FUNCTIONS = {"_Static_assert", "static_assert", "sizeof", "if", "while", "for", "switch", "return"}
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
DECLARATION = re.compile(
    r"^(?!static|typedef|#|\s)[^;{}()#]*?\b(\w+)\s*\([^;{}]*\)\s*;", re.M)


def scan(root, dirs):
    """{relative path: text} of the .c/.h files of @dirs under @root."""
    files = {}
    for d in dirs:
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            continue
        for name in sorted(os.listdir(full)):
            if name.endswith((".c", ".h")):
                with open(os.path.join(full, name), encoding="utf-8") as f:
                    files[d + "/" + name] = f.read()
    return files


def resolve(files):
    """Header basename -> its path (every header name is unique in the tree)."""
    where = {}
    for path in files:
        if path.endswith(".h"):
            where.setdefault(os.path.basename(path), []).append(path)
    return where


def includes(files, where):
    """(file, included path) for every quoted include that names a scanned header."""
    for path, text in files.items():
        for inc in INCLUDE.findall(text):
            for target in where.get(os.path.basename(inc), []):
                yield path, target


def layer_of(table):
    return {name: i for i, layer in enumerate(table) for name in layer}


def module(path):
    return os.path.splitext(os.path.basename(path))[0]


def find_cycle(graph):
    """A list of nodes in a circle, or None (iterative DFS, colours)."""
    colour = {}
    for start in sorted(graph):
        if colour.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        colour[start] = 1
        path = [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not colour.get(nxt):
                colour[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


def check(root, daemon_layers=None, daemon_dir=DAEMON_DIR):
    """[(case name, [problems])] for the tree at @root."""
    daemon_layers = DAEMON_LAYERS if daemon_layers is None else daemon_layers
    files = scan(root, [daemon_dir])
    where = resolve(files)
    edges = sorted(set(includes(files, where)))
    results = []

    # -- app/roce-daemon modules
    mlayer = layer_of(daemon_layers)
    mods = sorted({module(p) for p in files if os.path.dirname(p) == daemon_dir})
    results.append(("%s: every module has a layer (DAEMON_LAYERS)" % daemon_dir,
                    ["%s is not in DAEMON_LAYERS" % m for m in mods if m not in mlayer]))
    graph = {m: set() for m in mods}
    probs = []
    for src, dst in edges:
        if os.path.dirname(src) != daemon_dir or os.path.dirname(dst) != daemon_dir:
            continue
        a, b = module(src), module(dst)
        if a == b:
            continue
        graph[a].add(b)
        if a in mlayer and b in mlayer and mlayer[b] > mlayer[a]:
            probs.append("%s includes %s: layer %d above layer %d" %
                         (src, os.path.basename(dst), mlayer[b], mlayer[a]))
    results.append(("%s: every include points to the same or a lower layer" % daemon_dir, probs))
    cycle = find_cycle(graph)
    results.append(("%s: no circle of modules" % daemon_dir,
                    [" -> ".join(cycle)] if cycle else []))

    # -- a header promises only its own file's functions
    defined = {}
    for path, text in files.items():
        if os.path.dirname(path) == daemon_dir and path.endswith(".c"):
            for name in DEFINITION.findall(text):
                if name in NOT_FUNCTIONS:
                    continue
                defined.setdefault(name, set()).add(module(path))
    probs = []
    for path, text in files.items():
        if os.path.dirname(path) != daemon_dir or not path.endswith(".h"):
            continue
        for name in DECLARATION.findall(COMMENT.sub("", text)):
            owners = defined.get(name)
            if owners and module(path) not in owners:
                probs.append("%s declares %s, defined in %s.c" %
                             (path, name, "/".join(sorted(owners))))
    results.append(("%s: functions declared in X.h are defined in X.c" % daemon_dir, probs))
    return results


def check_made_up(tree, mods):
    """check() on a made-up tree {path: text} in a temporary directory: its problems."""
    root = tempfile.mkdtemp(prefix="layers-")
    try:
        for path, text in tree.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        return [p for _, ps in check(root, mods, "app/d") for p in ps]
    finally:
        shutil.rmtree(root)


def self_tests():
    """The checker must report each kind of problem on a tree made to have it."""
    mods = [["low"], ["mid"], ["top"]]
    good = {
        "app/d/low.h": '#include "b.h"\nint low(void);\n',
        "app/d/low.c": '#include "low.h"\nint\nlow(void)\n{ return 0; }\n',
        "app/d/mid.h": '#include "low.h"\n', "app/d/mid.c": '#include "mid.h"\n',
        "app/d/top.c": '#include "mid.h"\n#include "low.h"\n',
    }
    bad = {
        "a circle": {"app/d/low.c": '#include "low.h"\n#include "mid.h"\nint\nlow(void)\n{ return 0; }\n'},
        "an upward include": {"app/d/mid.c": '#include "mid.h"\n#include "top.h"\n',
                              "app/d/top.h": "\n"},
        "an unplaced module": {"app/d/other.c": '#include "low.h"\n'},
        "a hidden definition": {"app/d/low.c": '#include "low.h"\n',
                                "app/d/mid.c": '#include "mid.h"\nint\nlow(void)\n{ return 1; }\n'},
    }
    out = []
    probs = check_made_up(good, mods)
    out.append(("self-test: a layered made-up tree passes", probs))
    for what, change in bad.items():
        tree = dict(good)
        tree.update(change)
        found = check_made_up(tree, mods)
        out.append(("self-test: %s is reported" % what,
                    [] if found else ["the checker found nothing"]))
    return out


def main():
    if len(sys.argv) != 2:
        print("usage: include_layers.py SOURCE_ROOT", file=sys.stderr)
        return 2
    cases = self_tests() + check(sys.argv[1])
    print("1..%d" % len(cases))
    failed = 0
    for i, (name, probs) in enumerate(cases, 1):
        print("%s %d - %s" % ("not ok" if probs else "ok", i, name))
        for p in probs:
            print("#   " + p)
        failed += bool(probs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
