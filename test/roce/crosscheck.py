#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Cross-check lib/roce's builder with tools nobody here wrote.

Frames for every valid opcode (IPv4, with and without 802.1Q) are built by
roce_gen_frames (lib/roce). Then:
  * scapy.contrib.roce recomputes each ICRC; it must equal ours, and scapy's
    BTH/AETH dissection must show the fields we built;
  * tshark decodes each as InfiniBand (BTH opcode, QPN, PSN as built) with no
    malformed packet and no expert warning.
A negative control (one flipped payload bit) must make scapy disagree.

usage: crosscheck.py ROCE_GEN_FRAMES
Exit 0 on success, 1 on a mismatch, 77 (skip) only if scapy or tshark is absent.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def expected_fields(opcode):
    """What roce_gen_frames puts into each frame (see gen_frames.c)."""
    return {"dqpn": 0x11 + opcode, "psn": (0xfffff0 + opcode % 32) & 0xffffff}  # wraps


def check_scapy(pcap):
    try:
        from scapy.utils import rdpcap
        from scapy.layers.l2 import Ether
        from scapy.contrib.roce import BTH, AETH
    except ImportError as e:
        print("scapy not available:", e)
        return False
    frames = rdpcap(pcap)
    n_ok = 0
    for i, f in enumerate(frames, 1):
        raw = bytes(f)
        p = Ether(raw)
        if BTH not in p:
            fail(f"scapy: frame {i} has no BTH")
            continue
        bth = p[BTH]
        want = bth.compute_icrc(None)
        if want != raw[-4:]:
            fail(f"scapy: frame {i} opcode 0x{bth.opcode:02x}: ICRC scapy {want.hex()} "
                 f"ours {raw[-4:].hex()}")
            continue
        exp = expected_fields(bth.opcode)
        if bth.dqpn != exp["dqpn"] or bth.psn != exp["psn"] or bth.version != 0:
            fail(f"scapy: frame {i}: dqpn {bth.dqpn:#x} psn {bth.psn:#x}, want {exp}")
        if bth.opcode == 0x11 and (AETH not in p or p[AETH].syndrome != 0x1f or p[AETH].msn != 7):
            fail(f"scapy: frame {i}: AETH not as built")
        if bth.opcode == 0x81 and not bth.becn:
            fail(f"scapy: frame {i}: CNP without BECN")
        n_ok += 1
        # Negative control: a flipped payload bit must change scapy's ICRC.
        if i == 1:
            bad = bytearray(raw)
            bad[-5] ^= 1
            if Ether(bytes(bad))[BTH].compute_icrc(None) == bytes(bad[-4:]):
                fail("scapy: negative control not detected")
    print(f"scapy: {n_ok}/{len(frames)} ICRCs match")
    if len(frames) < 70:
        fail(f"scapy: only {len(frames)} frames")
    return True


def check_tshark(pcap):
    tshark = shutil.which("tshark")
    if not tshark:
        print("tshark not available")
        return False
    base = [tshark, "-n", "-r", pcap, "-d", "udp.port==4791,infiniband"]
    out = subprocess.run(base + ["-T", "fields", "-E", "separator=/t", "-e", "frame.number",
                                 "-e", "frame.protocols", "-e", "infiniband.bth.opcode",
                                 "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn",
                                 "-e", "infiniband.invariant.crc"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        fail(f"tshark exit {out.returncode}: {out.stderr.strip()}")
        return True
    rows = [line.split("\t") for line in out.stdout.splitlines() if line]
    for num, protos, opcode, qpn, psn, icrc in rows:
        if "infiniband" not in protos.split(":"):
            fail(f"tshark: frame {num} not InfiniBand: {protos}")
            continue
        op = int(opcode, 0)
        exp = expected_fields(op)
        if int(qpn, 0) != exp["dqpn"] or int(psn, 0) != exp["psn"]:
            fail(f"tshark: frame {num} opcode {op:#x}: qpn {qpn} psn {psn}, want {exp}")
        # tshark 3.6/4.0 has no CNP (0x81) dissector: it shows the 16 reserved
        # bytes and the ICRC as vendor data (scapy checks the CNP ICRC above).
        if not icrc and op != 0x81:
            fail(f"tshark: frame {num} has no Invariant CRC")
    # Anything malformed or flagged by the expert system is a failure.
    bad = subprocess.run(base + ["-Y", "_ws.malformed || _ws.expert.severity >= \"warning\" || "
                                 "_ws.expert",
                                 "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message"],
                         capture_output=True, text=True, timeout=60)
    for line in bad.stdout.splitlines():
        if line.strip():
            fail(f"tshark: malformed/expert: {line}")
    print(f"tshark: {len(rows)} frames decoded as InfiniBand")
    if len(rows) < 70:
        fail(f"tshark: only {len(rows)} frames")
    return True


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "ours.pcap")
        subprocess.run([sys.argv[1], pcap], check=True, timeout=60)
        have_scapy = check_scapy(pcap)
        have_tshark = check_tshark(pcap)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    if not (have_scapy and have_tshark):
        return SKIP
    print("crosscheck: all frames agree with scapy and tshark")
    return 0


if __name__ == "__main__":
    sys.exit(main())
