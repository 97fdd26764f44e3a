#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Counters of lab daemons for the lab tests, from their DPDK telemetry sockets.

  roce_tel.py get PREFIX CMD KEY...
      print the KEYs of CMD's answer (e.g. /roce/mcast attached), one line,
      space-separated
  roce_tel.py show PREFIX CMD
      print every KEY=VALUE of CMD's answer, one line, space-separated
  roce_tel.py sum CMD KEY PREFIX...
      print the sum of KEY over the PREFIXes
  roce_tel.py wait CMD KEY OP N SECONDS PREFIX...
      poll until the sum of KEY over the PREFIXes satisfies OP N (OP: ge,
      gt, le, lt, eq), every 50 ms over one connection per daemon, for at
      most SECONDS; print the last sum and the milliseconds waited

PREFIX is a daemon's --file-prefix (scripts/lab.sh: NAME-a, NAME-b).
Exit status: 0 done (wait: the condition held), 1 wait timed out, 2 a daemon
did not answer (3 s per query) or the answer lacks KEY (stderr says which).

One process and one connection instead of `lab.sh telemetry | python3`
per counter: on a loaded 2-core host that pipeline took 2 to 8 s per read,
and the lab tests' bounded waits ran out before their second read
(mcast_lab's rounds spent 33 to 51 s "waiting for the joins" that were
there within a second).
"""
import json
import operator
import os
import socket
import sys
import time

OPS = {"ge": operator.ge, "gt": operator.gt, "le": operator.le, "lt": operator.lt,
       "eq": operator.eq}


def runtime_dir():
    """Where DPDK puts a process's runtime files (eal_get_runtime_dir())."""
    if os.getuid() == 0:
        return "/var/run/dpdk"
    return os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")


class Daemon:
    """One telemetry connection to the daemon with file-prefix @prefix."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(3)
        path = os.path.join(runtime_dir(), prefix, "dpdk_telemetry.v2")
        try:
            self.sock.connect(path)
            self.max_len = json.loads(self.sock.recv(4096))["max_output_len"]
        except OSError as e:
            raise OSError("%s: %s" % (path, e.strerror or e)) from e

    def query(self, cmd):
        self.sock.send(cmd.encode())
        answer = json.loads(self.sock.recv(self.max_len))
        return answer[cmd.split(",")[0]]

    def value(self, cmd, key):
        v = self.query(cmd)
        if not isinstance(v, dict) or key not in v:
            raise KeyError("%s %s has no %s" % (self.prefix, cmd, key))
        return v[key]


def get(prefix, cmd, keys):
    d = Daemon(prefix)
    print(" ".join(str(d.value(cmd, k)) for k in keys))
    return 0


def total(daemons, cmd, key):
    return sum(d.value(cmd, key) for d in daemons)


def wait(cmd, key, op, n, seconds, prefixes):
    daemons = [Daemon(p) for p in prefixes]
    t0 = time.monotonic()
    while True:
        now = total(daemons, cmd, key)
        waited = time.monotonic() - t0
        if OPS[op](now, n) or waited >= seconds:
            print(now, int(waited * 1000))
            return 0 if OPS[op](now, n) else 1
        time.sleep(0.05)


def main(argv):
    try:
        if len(argv) >= 4 and argv[0] == "get":
            return get(argv[1], argv[2], argv[3:])
        if len(argv) == 3 and argv[0] == "show":
            print(" ".join("%s=%s" % kv for kv in Daemon(argv[1]).query(argv[2]).items()))
            return 0
        if len(argv) >= 4 and argv[0] == "sum":
            print(total([Daemon(p) for p in argv[3:]], argv[1], argv[2]))
            return 0
        if len(argv) >= 7 and argv[0] == "wait" and argv[3] in OPS:
            return wait(argv[1], argv[2], argv[3], int(argv[4]), float(argv[5]), argv[6:])
    except (OSError, ValueError, KeyError) as e:
        print("roce_tel: %s" % e, file=sys.stderr)
        return 2
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
