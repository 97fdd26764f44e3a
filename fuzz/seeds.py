#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Seed corpora of the libFuzzer targets (fuzz/fuzz.sh), from the golden
captures (classic pcap, either byte order) and the tree's test inputs.

usage: seeds.py TARGET PCAP_DIR OUT_DIR [SOURCE_DIR]
TARGET: roce_parse (one file per frame), cm_mad (the CM MAD of every UD
frame to QP1), xport (fuzz_xport.c command programs: every RoCE frame of
the captures injected into a QP, plus traffic programs), ctl (fuzz_ctl.c
request programs), config (every .ini of config/ and test inputs), neigh
(ARP/ND/echo frames of the captures and made here).
"""
import glob
import os
import struct
import sys


def frames(pcap_dir):
    for path in sorted(glob.glob(os.path.join(pcap_dir, "*.pcap"))):
        data = open(path, "rb").read()
        if len(data) < 24:
            continue
        end = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        off, k = 24, 0
        while off + 16 <= len(data):
            incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
            k += 1
            yield os.path.basename(path)[:-5], k, data[off + 16:off + 16 + incl]
            off += 16 + incl


def roce_body(f):
    """BTH to the end of the payload of a RoCEv2 frame (no ICRC), or None."""
    l2 = 18 if f[12:14] == b"\x81\x00" else 14
    et = f[l2 - 2:l2]
    if et == b"\x08\x00" and len(f) > l2 + 20 and f[l2 + 9] == 17:
        l4 = l2 + (f[l2] & 0xf) * 4
    elif et == b"\x86\xdd" and len(f) > l2 + 40 and f[l2 + 6] == 17:
        l4 = l2 + 40
    else:
        return None
    if len(f) < l4 + 8 + 12 + 4 or f[l4 + 2:l4 + 4] != b"\x12\xb7":
        return None
    return f[l4 + 8:len(f) - 4]


def write(out, name, data):
    with open(os.path.join(out, name), "wb") as fh:
        fh.write(data)


def seed_roce_parse(pcaps, out, src):
    n = 0
    for base, k, f in frames(pcaps):
        write(out, "%s-%03d" % (base, k), f)
        n += 1
    return n


def seed_cm_mad(pcaps, out, src):
    n = 0
    for _, _, f in frames(pcaps):
        body = roce_body(f)
        if body is None or body[0] != 0x64 or body[5:8] != b"\x00\x00\x01":
            continue
        if len(body) < 20 + 256:
            continue
        write(out, "mad-%03d" % n, body[20:20 + 256])
        n += 1
    return n


def u16(v):
    return struct.pack("<H", v & 0xffff)


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def seed_xport(pcaps, out, src):
    """fuzz_xport.c programs. Config byte: bits 0-1 type (0 RC, 1 UC, 2 UD),
    bit 2 SRQ, bits 3-5 MTU - 1 (mod 5), bits 6-7 timeout - 1."""
    n = 0
    # Receives first, so that injected SENDs find buffers.
    recvs = b"".join(b"\x0c" + b"\x01" + b"\x00" + u16(i * 1024) + u16(1024) for i in range(8))
    for base, k, f in frames(pcaps):
        body = roce_body(f)
        if body is None:
            continue
        op = body[0]
        qpt = {0: 0, 1: 1, 3: 2}.get(op >> 5)
        if qpt is None:
            continue
        cfg = bytes([qpt | (2 << 3)])
        # the frame's PSN made the QP's (flags bit 1, delta 0)
        inj = b"\x01" + b"\x02" + b"\x00" + u16(len(body)) + body
        write(out, "x-%s-%03d" % (base, k), cfg + recvs + inj + b"\x2d")
        n += 1
    # Traffic: every send opcode through the real peer, each QP type.
    for qpt in range(3):
        for opcode in range(10):
            prog = bytes([qpt | (2 << 3)]) + recvs
            for r in range(4):
                # post send: op, flags (signaled), sel (1 SGE, key 0), imm, raddr off
                prog += b"\x03" + bytes([opcode, 0x02, 0x01]) + u32(0x1234) + u16(r * 512)
                if opcode in (5, 6):
                    prog += u32(1) + u32(2)
                if qpt == 2:
                    pass
                prog += b"\x00" + u16(r * 1024) + u16(700 + r)  # SGE: key 0, offset, len
            prog += b"\x2d\x2d"  # run
            write(out, "traffic-%d-%d" % (qpt, opcode), prog)
            n += 1
    return n


def seed_files(out, paths, prefix):
    n = 0
    for p in paths:
        try:
            data = open(p, "rb").read()
        except OSError:
            continue
        write(out, "%s-%03d" % (prefix, n), data)
        n += 1
    return n


def c_texts(path):
    """The INI texts a C test spells as adjacent string literals."""
    import re
    code = open(path, encoding="utf-8", errors="replace").read()
    lit = r'"(?:[^"\\\n]|\\.)*"'
    for m in re.finditer(r"(?:%s\s*)+" % lit, code):
        parts = re.findall(lit, m.group(0))
        text = "".join(p[1:-1] for p in parts)
        text = text.encode().decode("unicode_escape", errors="replace")
        if "[" in text and "=" in text:
            yield text.encode("utf-8", errors="replace")


def seed_config(pcaps, out, src):
    n = seed_files(out, sorted(glob.glob(os.path.join(src, "config", "*"))), "conf")
    for t in sorted(glob.glob(os.path.join(src, "test", "daemon", "*.c")) +
                    glob.glob(os.path.join(src, "test", "integ", "*.c"))):
        for text in c_texts(t):
            write(out, "c-%03d" % n, text)
            n += 1
    return n


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def ip6(a):
    import socket
    return socket.inet_pton(socket.AF_INET6, a)


def ip4(a):
    import socket
    return socket.inet_aton(a)


def icmp6_frame(dmac, src, dst, icmp, hop=255):
    pseudo = src + dst + struct.pack("!IxxxB", len(icmp), 58)
    icmp = icmp[:2] + struct.pack("!H", csum(pseudo + icmp)) + icmp[4:]
    ip = struct.pack("!IHBB", 6 << 28, len(icmp), 58, hop) + src + dst
    return dmac + PEER_MAC + b"\x86\xdd" + ip + icmp


def icmp4_frame(dmac, src, dst, icmp):
    icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0, 64, 1, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return dmac + PEER_MAC + b"\x08\x00" + ip + icmp


PEER_MAC = bytes([0x02, 0, 0, 0, 0, 0x99])
PORT0_MAC = bytes([0x02, 0, 0, 0, 0, 1])


def neigh_made():
    """fuzz_neigh.c's ports: p0 198.18.0.1/24, 2001:db8::1/64, MAC 02:..:01."""
    bcast = b"\xff" * 6
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + PEER_MAC + ip4("198.18.0.9") + b"\0" * 6
    yield "arp-req", bcast + PEER_MAC + b"\x08\x06" + arp + ip4("198.18.0.1")
    rep = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + PEER_MAC + ip4("198.18.0.254") + PORT0_MAC
    yield "arp-rep", PORT0_MAC + PEER_MAC + b"\x08\x06" + rep + ip4("198.18.0.1")
    yield "arp-vlan", bcast + PEER_MAC + b"\x81\x00\x00\x05\x08\x06" + arp + ip4("198.18.0.1")
    peer6, our6 = ip6("2001:db8::9"), ip6("2001:db8::1")
    ns = b"\x87\0\0\0\0\0\0\0" + our6 + b"\x01\x01" + PEER_MAC
    yield "ns", icmp6_frame(b"\x33\x33\xff\0\0\x01", peer6, ip6("ff02::1:ff00:1"), ns)
    na = b"\x88\0\0\0\x60\0\0\0" + peer6 + b"\x02\x01" + PEER_MAC
    yield "na", icmp6_frame(PORT0_MAC, peer6, our6, na)
    yield "echo6", icmp6_frame(PORT0_MAC, peer6, our6, b"\x80\0\0\0\0\x01\0\x01hello", 64)
    yield "echo4", icmp4_frame(PORT0_MAC, ip4("198.18.0.9"), ip4("198.18.0.1"),
                               b"\x08\0\0\0\0\x01\0\x01hello")


def seed_neigh(pcaps, out, src):
    n = 0
    for name, f in neigh_made():
        for sel in (0x00, 0x14):  # port 0; then with resolution and timers
            write(out, "made-%s-%02x" % (name, sel), bytes([sel]) + f)
            n += 1
    for base, k, f in frames(pcaps):
        l2 = 18 if f[12:14] == b"\x81\x00" else 14
        et = f[l2 - 2:l2]
        keep = et == b"\x08\x06"
        keep |= et == b"\x08\x00" and len(f) > l2 + 20 and f[l2 + 9] == 1
        keep |= et == b"\x86\xdd" and len(f) > l2 + 40 and f[l2 + 6] == 58
        if keep:
            # fuzz_neigh.c: first byte picks the port, the rest is the frame
            write(out, "n-%s-%03d" % (base, k), b"\x00" + f)
            n += 1
    return n


def ctl_req(op, body=b"", patches=(), fd=None):
    """One fuzz_ctl.c request command: kind 0, op, flags, body, handle
    patches ((word, pick): body word <- the pick-th handle answered), fd."""
    patch = len(patches) | (0x40 if fd is not None else 0)
    cmd = b"\x00" + bytes([op, patch, len(body)]) + body
    cmd += b"".join(bytes([w, k]) for w, k in patches)
    if fd is not None:
        cmd += fd
    return cmd


def seed_ctl(pcaps, out, src):
    """fuzz_ctl.c programs: the verbs an application runs, in order.
    Handles of answers are picked by index (A's answers follow B's six)."""
    # handles answered: B's OPEN_DEVICE, PD, CQ, MR (0-3), then A's from 4 on
    opdev = ctl_req(2, b"dpdk_roce0")                     # A: 4
    pd = ctl_req(10)                                       # A: 5
    cq = ctl_req(17, u32(0) * 2 + u32(16))                 # cqe 16, no channel
    mr = ctl_req(12, struct.pack("<QQQQQII", 0, 0x10000, 4096, 0x10000, 0, 0, 1),
                 patches=[(10, 5)], fd=b"\x04\x01")        # memfd 4 KiB, F_SEAL_SHRINK
    qp = ctl_req(20, u32(0) * 6 + u32(2) + u32(0) * 5 + u32(4) + u32(4) + u32(1) + u32(1),
                 patches=[(2, 5), (3, 6), (4, 6)])          # RC on PD 5, CQ 6
    progs = {
        "pd": opdev + pd,
        "cq": opdev + cq,
        "mr": opdev + pd + mr,
        "mr-of-b": opdev + ctl_req(12, struct.pack("<QQQQQII", 0, 0x10000, 4096, 0x10000, 0, 0, 1),
                                   patches=[(10, 1)], fd=b"\x04\x01"),
        "qp": opdev + pd + cq + qp,
        "qp-modify": opdev + pd + cq + qp + ctl_req(21, u32(0) + u32(1) + u32(1), patches=[(0, 7)]),
        "channel": opdev + ctl_req(15) + cq,
        "srq": opdev + pd + ctl_req(24, u32(0) * 2 + u32(0) + u32(16) + u32(1), patches=[(2, 5)]),
        "ah": opdev + pd + ctl_req(28, u32(0) * 2 + u32(0), patches=[(2, 5)]),
        "query": opdev + ctl_req(3) + ctl_req(4, u32(1)) + ctl_req(5, u32(1)) + ctl_req(1),
        "defer": opdev + b"\x0d" + pd + b"\x06" + b"\x05" + cq + b"\x06",
        "reopen": opdev + pd + cq + b"\x07" + opdev + pd,
    }
    for name, prog in progs.items():
        write(out, "ctl-" + name, prog)
    return len(progs)


def main():
    target, pcaps, out = sys.argv[1], sys.argv[2], sys.argv[3]
    src = sys.argv[4] if len(sys.argv) > 4 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(out, exist_ok=True)
    n = globals()["seed_" + target](pcaps, out, src)
    print("fuzz: %d seeds for %s" % (n, target))


if __name__ == "__main__":
    main()
