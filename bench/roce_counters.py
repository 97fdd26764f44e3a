#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Counters of lab daemons, read from their DPDK telemetry sockets.

  roce_counters.py snap PREFIX... > FILE     one JSON object: PREFIX -> counters
  roce_counters.py delta BEFORE AFTER        what grew, per daemon (non-zero only)
  roce_counters.py get PREFIX NAME...        those counters of one daemon, one line,
                                             "-" for one it does not have

Counters per daemon: /roce/port/stats,0 (port totals, ethdev imissed/oerrors
included as eth_*) and /roce/lcore/stats,0 (worker 0: polls, idle_backoffs),
the latter prefixed "lcore0.". PREFIX is the daemon's --file-prefix, e.g.
rbench-a (scripts/lab.sh: NAME-a, NAME-b). One connect per query, bounded
by a 3 s timeout; a daemon that does not answer is left out (stderr says so).
"""
import json
import socket
import sys

QUERIES = (("/roce/port/stats,0", ""), ("/roce/lcore/stats,0", "lcore0."))


def query(prefix, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(3)
    try:
        s.connect("/var/run/dpdk/%s/dpdk_telemetry.v2" % prefix)
        info = json.loads(s.recv(4096))
        s.send(cmd.encode())
        return json.loads(s.recv(info["max_output_len"]))[cmd.split(",")[0]]
    finally:
        s.close()


def counters(prefix, queries=QUERIES):
    """prefix's counters of @p queries, or None (stderr says why)."""
    vals = {}
    try:
        for cmd, tag in queries:
            for k, v in (query(prefix, cmd) or {}).items():
                if isinstance(v, int):
                    vals[tag + k] = v
    except (OSError, ValueError, KeyError) as e:
        print("roce_counters: %s: %s" % (prefix, e), file=sys.stderr)
        return None
    return vals


def snap(prefixes):
    out = {}
    for p in prefixes:
        vals = counters(p)
        if vals is not None:
            out[p] = vals
    json.dump(out, sys.stdout)
    print()


def get(prefix, names):
    # only the queries the names need (one connect each): a tagged name
    # ("lcore0.polls") comes from its tag's query, a plain one from the port's
    needed = [(cmd, tag) for cmd, tag in QUERIES
              if any(n.startswith(tag) if tag else "." not in n for n in names)]
    vals = counters(prefix, needed) or {}
    print(" ".join(str(vals.get(n, "-")) for n in names))


def delta(before_file, after_file):
    with open(before_file) as f:
        before = json.load(f)
    with open(after_file) as f:
        after = json.load(f)
    for p in sorted(after):
        b = before.get(p, {})
        grew = ["%s=%d" % (k, v - b.get(k, 0)) for k, v in sorted(after[p].items())
                if v - b.get(k, 0) != 0 and k not in ("lcore0.lcore",)]
        print("%s: %s" % (p, " ".join(grew) if grew else "(nothing)"))


def main(argv):
    if len(argv) >= 2 and argv[0] == "snap":
        snap(argv[1:])
    elif len(argv) == 3 and argv[0] == "delta":
        delta(argv[1], argv[2])
    elif len(argv) >= 3 and argv[0] == "get":
        get(argv[1], argv[2:])
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
