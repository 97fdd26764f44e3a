#!/usr/bin/python3
"""Command server for the rxe interop guest (stdlib only).

    cmd_server.py ADDR PORT DIR [FAKE_PORT FAKE_QPN FAKE_GID]

The guest's runner loop asks GET /next?seq=N and gets the contents of
DIR/cmd.N ("NAME TIMEOUT" on the first line, the shell command after it),
"WAIT" while the host has not published command N yet, or DIR/cmd.N may say
"QUIT". Publishing is an atomic rename by the host script, so a command is
served whole or not at all. Served requests are logged to DIR/server.log.

With FAKE_PORT, it also answers one ibv_*_pingpong out-of-band exchange on
that port with a made-up QPN and FAKE_GID (32 hex digits): the guest then
sends real RoCEv2 frames to a QP that does not exist, which the daemon must
receive, check and count (rx_roce, rx_no_qp).
"""
import http.server
import os
import socket
import sys
import threading
import urllib.parse


def make_handler(cmd_dir):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            q = urllib.parse.parse_qs(url.query)
            body = b"WAIT"
            if url.path == "/next" and q.get("seq", [""])[0].isdigit():
                path = os.path.join(cmd_dir, "cmd." + q["seq"][0])
                try:
                    with open(path, "rb") as f:
                        body = f.read()
                except FileNotFoundError:
                    pass
            self.served = body != b"WAIT"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            if not getattr(self, "served", True):
                return  # the guest polls every 0.2 s: log what was served only
            with open(os.path.join(cmd_dir, "server.log"), "a") as f:
                f.write("%s %s\n" % (self.log_date_time_string(), fmt % args))

    return Handler


def fake_pingpong(addr, port, qpn, gid, log):
    """One pingpong exchange: read the client's 52 bytes, send ours, linger."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    s.settimeout(600)
    try:
        c, _ = s.accept()
    except OSError:
        return
    c.settimeout(30)
    try:
        got = b""
        while len(got) < 52:
            chunk = c.recv(52 - len(got))
            if not chunk:
                break
            got += chunk
        msg = ("0000:%06x:%06x:%s" % (qpn, 1, gid)).encode() + b"\0"
        c.sendall(msg)
        with open(log, "a") as f:
            f.write("fake pingpong: client %r, answered %r\n" % (got, msg))
        c.recv(16)  # the client's "done", or its close when it gives up
    except OSError:
        pass
    c.close()
    s.close()


def main():
    addr, port, cmd_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if len(sys.argv) > 6:
        threading.Thread(target=fake_pingpong, daemon=True,
                         args=(addr, int(sys.argv[4]), int(sys.argv[5], 0), sys.argv[6],
                               os.path.join(cmd_dir, "server.log"))).start()
    http.server.HTTPServer.allow_reuse_address = True
    srv = http.server.HTTPServer((addr, port), make_handler(cmd_dir))
    srv.serve_forever()


if __name__ == "__main__":
    main()
