#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Cross-check lib/roce against tools nobody here wrote, in both directions.

Our builder -> external tools. roce_gen_frames (lib/roce) writes a frame for
every valid opcode over IPv4 and IPv6, each untagged and 802.1Q-tagged. Then:
  * scapy.contrib.roce recomputes each IPv4 ICRC; it must equal ours. scapy
    2.5 (Debian 12) has no IPv6 ICRC ("TODO support IPv6"), so icrc() below
    applies the IPv6 masks of Annex A17.3.3 to scapy's IPv6 layer and CRCs
    it with zlib as scapy does for IPv4; on every IPv4 frame icrc() must
    agree with scapy's own compute_icrc(), and it must not move when a masked
    field changes but must when a covered one does. scapy's dissection must
    show the BTH, AETH, CNP and IP fields we built;
  * tshark decodes each as InfiniBand with every BTH and extension header
    field as built, its Invariant CRC equal to scapy's, the IPv4 header and
    UDP checksums verified, no malformed packet and no expert info.
scapy -> our parser. Frames that scapy builds (IPv4 and IPv6, some tagged,
several opcodes with their extension headers, scapy computing the IPv4 ICRC
and the UDP checksums) are parsed by roce_parse() (roce_parse_frames); every
field of struct roce_pkt must be what scapy was told to build.

Negative controls show that each leg can fail: corrupted frames must make
scapy's ICRC disagree, make tshark flag them (truncated, bad IPv4 header
checksum, bad UDP checksum) or make the field comparison catch them (QPN,
ICRC), and make roce_parse() drop them with the right reason.

Every external tool's exit status counts. usage:
  crosscheck.py ROCE_GEN_FRAMES ROCE_PARSE_FRAMES
Exit 0 on success, 1 on a mismatch; if scapy or tshark is missing: 1 when
CI=true is in the environment (CI must not pass without its references),
77 (skip) otherwise.
"""
import importlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
TOOL_TIMEOUT = 60
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


# IBTA Vol. 1 table 39 and Annex A17.9.3 (CNP), written out here apart from
# lib/roce/roce_opcode.h: opcode -> (extension headers after the BTH in wire
# order, payload). Payload 'full': FIRST/MIDDLE (roce_gen_frames: 1024 bytes,
# no pad); 'last': LAST/ONLY (255 bytes + 1 pad byte); None: no payload.
_RC_UC = {
    0x00: ((), 'full'), 0x01: ((), 'full'), 0x02: ((), 'last'),
    0x03: (('IMMDT',), 'last'), 0x04: ((), 'last'), 0x05: (('IMMDT',), 'last'),
    0x06: (('RETH',), 'full'), 0x07: ((), 'full'), 0x08: ((), 'last'),
    0x09: (('IMMDT',), 'last'), 0x0a: (('RETH',), 'last'), 0x0b: (('RETH', 'IMMDT'), 'last'),
}
OPCODES = dict(_RC_UC)
OPCODES.update({0x20 | op: v for op, v in _RC_UC.items()})
OPCODES.update({
    0x0c: (('RETH',), None),
    0x0d: (('AETH',), 'full'), 0x0e: ((), 'full'),
    0x0f: (('AETH',), 'last'), 0x10: (('AETH',), 'last'),
    0x11: (('AETH',), None), 0x12: (('AETH', 'ATMACK'), None),
    0x13: (('ATMETH',), None), 0x14: (('ATMETH',), None),
    0x16: (('IETH',), 'last'), 0x17: (('IETH',), 'last'),
    0x64: (('DETH',), 'last'), 0x65: (('DETH', 'IMMDT'), 'last'),
    0x81: (('CNP',), None),
})
# The order roce_parse_frames prints header names in (enum roce_hdr_bit).
HDR_ORDER = ('RDETH', 'DETH', 'RETH', 'ATMETH', 'AETH', 'ATMACK', 'IMMDT', 'IETH', 'CNP')
CNP = 0x81


def built(op):
    """What roce_gen_frames puts into the frame of opcode op (see gen_frames.c)."""
    hdrs, pay = OPCODES[op]
    return {
        'hdrs': hdrs, 'dqpn': 0x11 + op, 'psn': (0xfffff0 + op % 32) & 0xffffff,  # wraps
        'pkey': 0xffff, 'ackreq': int(pay != 'full' and op != CNP), 'becn': int(op == CNP),
        'pad': 1 if pay == 'last' else 0,
        'payload_len': {'full': 1024, 'last': 255, None: 0}[pay],
        'reth': (0x00005651467bc000 + op, 0x34a, 4096), 'aeth': (0x1f, 7),
        'atmeth': (0x00005651467bc000, 0x34a, 1, 0), 'atmack': 0x1122334455667788,
        'deth': (0x11111111, 0x1a), 'imm': '12345678', 'ieth': 0x486,
        'tc': 0x02, 'hlim': 64, 'fl6': 0x5a5a0 + op, 'vlan': 100,
        'src4': '198.18.0.2', 'dst4': '198.18.0.1', 'src6': '2001:db8::2', 'dst6': '2001:db8::1',
    }


def have_scapy():
    try:
        for mod in ('scapy.contrib.roce', 'scapy.layers.inet6', 'scapy.utils'):
            importlib.import_module(mod)
    except ImportError as e:
        print("scapy not available:", e)
        return False
    return True


# ---------------------------------------------------------------------------
# ICRC


def icrc(p):
    """ICRC (4 wire bytes) of scapy packet p: Ether/[Dot1Q]/IP or IPv6/UDP/BTH.

    IBTA Annex A17.3.3 the way scapy.contrib.roce computes it for IPv4 (8
    bytes of 0xff for the LRH, then the IP packet up to the ICRC with the
    variant fields set to ones), extended to IPv6: traffic class, flow label
    and hop limit masked."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.contrib.roce import BTH
    l3 = (p[IPv6] if IPv6 in p else p[IP]).copy()
    if isinstance(l3, IPv6):
        l3.tc, l3.fl, l3.hlim = 0xff, 0xfffff, 0xff
    else:
        l3.tos, l3.ttl, l3.chksum = 0xff, 0xff, 0xffff
    l3[UDP].chksum = 0xffff
    l3[BTH].fecn, l3[BTH].becn, l3[BTH].resv6 = 1, 1, 0x3f
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(l3)[:-4]))


def reference_icrc(raw):
    """(scapy's IPv4 ICRC or None, icrc()) of frame raw."""
    from scapy.layers.l2 import Ether
    from scapy.layers.inet import IP
    from scapy.contrib.roce import BTH
    p = Ether(raw)
    return (p[BTH].compute_icrc(None) if IP in p else None), icrc(p)


def check_icrc_controls(raw, what):
    """Negative and masking controls of the ICRC references on frame raw."""
    from scapy.layers.l2 import Ether
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.contrib.roce import BTH
    base = reference_icrc(raw)
    # A flipped payload bit must change both references.
    bad = bytearray(raw)
    bad[-5] ^= 1
    for ref, got in zip(base, reference_icrc(bytes(bad))):
        if ref is not None and ref == got:
            fail(f"ICRC negative control ({what}): a flipped payload bit left the ICRC {ref.hex()}")
    # Variant fields are masked: changing them must not change the ICRC.
    q = Ether(raw)
    if IPv6 in q:
        q[IPv6].tc ^= 0x5c
        q[IPv6].fl ^= 0x12345
        q[IPv6].hlim ^= 0x3f
    else:
        q[IP].tos ^= 0x5c
        q[IP].ttl ^= 0x3f
        q[IP].chksum ^= 0x1234
    q[UDP].chksum ^= 0x4321
    q[BTH].fecn ^= 1
    q[BTH].becn ^= 1
    q[BTH].resv6 ^= 0x2a
    if reference_icrc(bytes(q)) != base:
        fail(f"ICRC masking control ({what}): a variant field changed the ICRC")
    # A covered header field (PSN) must change it.
    q = Ether(raw)
    q[BTH].psn ^= 1
    for ref, got in zip(base, reference_icrc(bytes(q))):
        if ref is not None and ref == got:
            fail(f"ICRC control ({what}): a changed PSN left the ICRC {ref.hex()}")


# ---------------------------------------------------------------------------
# Our frames, checked by scapy


def check_scapy(frames):
    from scapy.layers.l2 import Ether, Dot1Q
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.contrib.roce import BTH, AETH, CNPPadding
    seen = {}
    n_ok = 0
    for i, raw in enumerate(frames, 1):
        p = Ether(raw)
        if BTH not in p or UDP not in p:
            fail(f"scapy: frame {i} has no UDP/BTH")
            continue
        bth = p[BTH]
        v6 = IPv6 in p
        key = (bth.opcode, v6, Dot1Q in p)
        seen[key] = seen.get(key, 0) + 1
        if bth.opcode not in OPCODES:
            fail(f"scapy: frame {i}: opcode {bth.opcode:#x} is not valid")
            continue
        tag = f"frame {i} opcode {bth.opcode:#04x} {'IPv6' if v6 else 'IPv4'}"
        scapy_icrc, our_ref = reference_icrc(raw)
        if scapy_icrc is not None and scapy_icrc != our_ref:
            fail(f"scapy: {tag}: icrc() {our_ref.hex()} disagrees with scapy's {scapy_icrc.hex()}")
        want = scapy_icrc if scapy_icrc is not None else our_ref
        if want != raw[-4:]:
            fail(f"scapy: {tag}: ICRC {want.hex()}, ours {raw[-4:].hex()}")
            continue
        exp = built(bth.opcode)
        got = {'dqpn': bth.dqpn, 'psn': bth.psn, 'pkey': bth.pkey, 'ackreq': bth.ackreq,
               'becn': bth.becn, 'pad': bth.padcount}
        for k, v in got.items():
            if v != exp[k]:
                fail(f"scapy: {tag}: {k} {v:#x}, built {exp[k]:#x}")
        if (bth.version, bth.fecn, bth.solicited, bth.migreq, bth.resv6, bth.resv7) != (0,) * 6:
            fail(f"scapy: {tag}: BTH version/FECN/SE/M/reserved not zero")
        if v6:
            ip = p[IPv6]
            l3 = (ip.src, ip.dst, ip.tc, ip.fl, ip.hlim)
            want3 = (exp['src6'], exp['dst6'], exp['tc'], exp['fl6'], exp['hlim'])
        else:
            ip = p[IP]
            l3 = (ip.src, ip.dst, ip.tos, ip.ttl, ip.flags.value, ip.id)
            want3 = (exp['src4'], exp['dst4'], exp['tc'], exp['hlim'], 2, bth.opcode)  # DF
        if l3 != want3:
            fail(f"scapy: {tag}: IP fields {l3}, built {want3}")
        if p[UDP].dport != 4791 or not 0xc000 <= p[UDP].sport <= 0xffff:
            fail(f"scapy: {tag}: UDP ports {p[UDP].sport} -> {p[UDP].dport}")
        if Dot1Q in p and p[Dot1Q].vlan != exp['vlan']:
            fail(f"scapy: {tag}: VLAN {p[Dot1Q].vlan}")
        if 'AETH' in exp['hdrs'] and AETH in p and \
                (p[AETH].syndrome, p[AETH].msn) != exp['aeth']:
            fail(f"scapy: {tag}: AETH {p[AETH].syndrome:#x}/{p[AETH].msn}, built {exp['aeth']}")
        if bth.opcode == 0x11 and AETH not in p:
            fail(f"scapy: {tag}: no AETH in an ACK")
        if bth.opcode == CNP and (CNPPadding not in p or p[CNPPadding].reserved1 or
                                  p[CNPPadding].reserved2):
            fail(f"scapy: {tag}: CNP without 16 zero reserved bytes")
        n_ok += 1
    for op in OPCODES:
        for v6 in (False, True):
            for vlan in (False, True):
                n = seen.get((op, v6, vlan), 0)
                if n != 1:
                    fail(f"scapy: opcode {op:#04x} {'IPv6' if v6 else 'IPv4'}"
                         f"{' 802.1Q' if vlan else ''}: {n} frames, want 1")
    print(f"scapy: {n_ok}/{len(frames)} frames: ICRC and fields match")
    # The references must be able to disagree (IPv4 and IPv6, tagged too).
    for i, raw in enumerate(frames[:4], 1):
        check_icrc_controls(raw, f"frame {i}")


# ---------------------------------------------------------------------------
# Our frames, checked by tshark

TSHARK_FIELDS = [
    'frame.number', 'frame.protocols', 'vlan.id', 'ip.src', 'ip.dst', 'ipv6.src', 'ipv6.dst',
    'ip.checksum.status', 'udp.dstport', 'udp.checksum', 'udp.checksum.status',
    'infiniband.bth.opcode', 'infiniband.bth.se', 'infiniband.bth.m', 'infiniband.bth.padcnt',
    'infiniband.bth.tver', 'infiniband.bth.p_key', 'infiniband.bth.destqp', 'infiniband.bth.a',
    'infiniband.bth.psn', 'infiniband.reth.va', 'infiniband.reth.r_key', 'infiniband.reth.dmalen',
    'infiniband.aeth.syndrome', 'infiniband.aeth.msn', 'infiniband.atomiceth.swapdt',
    'infiniband.atomiceth.cmpdt', 'infiniband.atomicacketh.origremdt', 'infiniband.deth.q_key',
    'infiniband.deth.srcqp', 'infiniband.immdt', 'infiniband.ieth', 'infiniband.invariant.crc',
    'data.len', '_ws.malformed', '_ws.expert.message',
]
CHECKSUM_GOOD, CHECKSUM_NOT_PRESENT = '1', '3'  # proto_checksum_enum_e


def run_tshark(pcap):
    """tshark's fields of every frame of pcap, as dicts; None if tshark failed."""
    # Verify the IPv4 header and UDP checksums; RoCEv2 sends a zero UDP
    # checksum on IPv6 too (rxe does), which tshark flags unless told.
    cmd = [shutil.which('tshark'), '-n', '-r', pcap, '-d', 'udp.port==4791,infiniband',
           '-o', 'ip.check_checksum:TRUE', '-o', 'udp.check_checksum:TRUE',
           '-o', 'udp.ignore_ipv6_zero_checksum:TRUE',
           '-T', 'fields', '-E', 'separator=/t', '-E', 'occurrence=a', '-E', 'aggregator=,']
    for f in TSHARK_FIELDS:
        cmd += ['-e', f]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    except subprocess.TimeoutExpired:
        fail(f"tshark timed out on {pcap}")
        return None
    if out.returncode != 0:
        fail(f"tshark exit {out.returncode} on {pcap}: {out.stderr.strip()}")
        return None
    rows = []
    for line in out.stdout.splitlines():
        cols = line.split('\t')
        if len(cols) != len(TSHARK_FIELDS):
            fail(f"tshark: {len(cols)} columns, want {len(TSHARK_FIELDS)}: {line[:200]}")
            return None
        rows.append(dict(zip(TSHARK_FIELDS, cols)))
    return rows


def tshark_problems(row, raw):
    """What is wrong with tshark's view of the frame that roce_gen_frames built
    (raw, possibly corrupted by a negative control)."""
    bad = []
    if row['_ws.malformed'] or row['_ws.expert.message']:
        bad.append(f"malformed/expert: {row['_ws.malformed']} {row['_ws.expert.message']}")
    if 'infiniband' not in row['frame.protocols'].split(':'):
        return bad + [f"not InfiniBand: {row['frame.protocols']}"]
    op = int(row['infiniband.bth.opcode'], 0)
    if op not in OPCODES:
        return bad + [f"opcode {op:#x}"]
    exp = built(op)
    v6 = bool(row['ipv6.src'])
    if v6 and (row['ipv6.src'], row['ipv6.dst']) != (exp['src6'], exp['dst6']) or \
            not v6 and (row['ip.src'], row['ip.dst']) != (exp['src4'], exp['dst4']):
        bad.append("IP addresses not as built")
    if not v6 and row['ip.checksum.status'] != CHECKSUM_GOOD:
        bad.append(f"IPv4 header checksum status {row['ip.checksum.status']}")
    tagged = bool(row['vlan.id'])
    if tagged and int(row['vlan.id']) != exp['vlan']:
        bad.append(f"VLAN {row['vlan.id']}")
    # Tagged frames carry a UDP checksum (gen_frames.c), untagged ones 0.
    want_udp = CHECKSUM_GOOD if tagged else CHECKSUM_NOT_PRESENT
    if row['udp.dstport'] != '4791' or row['udp.checksum.status'] != want_udp:
        bad.append(f"UDP port {row['udp.dstport']} checksum {row['udp.checksum']} "
                   f"status {row['udp.checksum.status']}, want {want_udp}")

    def num(field, base=0):
        return [int(v, base) for v in row[field].split(',')] if row[field] else []

    got = {'destqp': num('infiniband.bth.destqp'), 'psn': num('infiniband.bth.psn'),
           'p_key': num('infiniband.bth.p_key'), 'a': num('infiniband.bth.a'),
           'padcnt': num('infiniband.bth.padcnt'),
           'se/m/tver': num('infiniband.bth.se') + num('infiniband.bth.m') +
           num('infiniband.bth.tver')}
    want = {'destqp': [exp['dqpn']], 'psn': [exp['psn']], 'p_key': [exp['pkey']],
            'a': [exp['ackreq']], 'padcnt': [exp['pad']], 'se/m/tver': [0, 0, 0]}
    hdrs = exp['hdrs']
    # AtomicETH's VA and R_Key are dissected as the RETH fields.
    got['reth/atomiceth va, r_key'] = num('infiniband.reth.va') + num('infiniband.reth.r_key')
    want['reth/atomiceth va, r_key'] = (
        [exp['reth'][0], exp['reth'][1]] if 'RETH' in hdrs else
        [exp['atmeth'][0], exp['atmeth'][1]] if 'ATMETH' in hdrs else [])
    got['dmalen'] = num('infiniband.reth.dmalen')
    want['dmalen'] = [exp['reth'][2]] if 'RETH' in hdrs else []
    got['aeth'] = num('infiniband.aeth.syndrome') + num('infiniband.aeth.msn')
    want['aeth'] = list(exp['aeth']) if 'AETH' in hdrs else []
    got['atomiceth'] = num('infiniband.atomiceth.swapdt') + num('infiniband.atomiceth.cmpdt')
    want['atomiceth'] = list(exp['atmeth'][2:]) if 'ATMETH' in hdrs else []
    got['atomicacketh'] = num('infiniband.atomicacketh.origremdt')
    want['atomicacketh'] = [exp['atmack']] if 'ATMACK' in hdrs else []
    got['deth'] = num('infiniband.deth.q_key') + num('infiniband.deth.srcqp')
    want['deth'] = list(exp['deth']) if 'DETH' in hdrs else []
    # ImmDt and IETH: the header and its one field share a name (2 occurrences).
    got['immdt'] = row['infiniband.immdt']
    want['immdt'] = f"{exp['imm']},{exp['imm']}" if 'IMMDT' in hdrs else ''
    got['ieth'] = row['infiniband.ieth']
    want['ieth'] = f"{exp['ieth']:08x},{exp['ieth']:08x}" if 'IETH' in hdrs else ''
    # Payload + pad, as tshark hands it to the data dissector.
    got['data.len'] = num('data.len')
    want['data.len'] = [exp['payload_len'] + exp['pad']] if exp['payload_len'] else []
    # tshark 4.0 has no CNP dissector: it shows the 16 reserved bytes and the
    # ICRC as vendor data, so there is no Invariant CRC to compare.
    if op != CNP:
        got['icrc'] = num('infiniband.invariant.crc')
        want['icrc'] = [int.from_bytes(reference_icrc(raw)[1], 'big')]
    for k in got:
        if got[k] != want[k]:
            bad.append(f"{k} {got[k]}, want {want[k]}")
    return bad


def check_tshark(pcap, frames):
    rows = run_tshark(pcap)
    if rows is None:
        return
    if len(rows) != len(frames):
        fail(f"tshark: {len(rows)} frames, want {len(frames)}")
        return
    for row, raw in zip(rows, frames):
        for b in tshark_problems(row, raw):
            fail(f"tshark: frame {row['frame.number']}: {b}")
    print(f"tshark: {len(rows)} frames decoded as InfiniBand as built")


def tshark_negative_controls(frames, tmp):
    """Corrupted copies of our frames: tshark (or the comparison of its
    dissection with what was built) must catch every one."""
    from scapy.layers.l2 import Ether, Dot1Q
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.utils import wrpcap

    def first(v6, vlan, op=0x04):
        for raw in frames:
            p = Ether(raw)
            if (IPv6 in p) == v6 and (Dot1Q in p) == vlan and raw[bth_offset(p)] == op:
                return raw
        raise LookupError(f"no frame opcode {op:#x} v6={v6} vlan={vlan}")

    def bth_offset(p):
        return 14 + (4 if Dot1Q in p else 0) + (40 if IPv6 in p else 20) + 8

    def flip(raw, off, mask=1):
        b = bytearray(raw)
        b[off] ^= mask
        return bytes(b)

    v4, v4t, v6t = first(False, False), first(False, True), first(True, True)
    p4 = Ether(v4)
    controls = [
        ("IPv4 frame truncated by 100 bytes", v4[:-100]),
        ("IPv6 802.1Q frame truncated by 100 bytes", v6t[:-100]),
        ("IPv4 header checksum wrong", flip(v4, 14 + 10)),
        ("UDP checksum wrong (IPv4 802.1Q, payload bit flipped)", flip(v4t, len(v4t) - 5)),
        ("UDP checksum wrong (IPv6 802.1Q, payload bit flipped)", flip(v6t, len(v6t) - 5)),
        ("destination QPN changed", flip(v4, bth_offset(p4) + 7, 0x40)),
        ("ICRC changed", flip(v4, len(v4) - 1)),
    ]
    assert IP in p4
    pcap = os.path.join(tmp, 'tshark_negative.pcap')
    wrpcap(pcap, [Ether(raw) for _, raw in controls])
    rows = run_tshark(pcap)
    if rows is None:
        return
    if len(rows) != len(controls):
        fail(f"tshark negative controls: {len(rows)} frames, want {len(controls)}")
        return
    for (what, raw), row in zip(controls, rows):
        caught = tshark_problems(row, raw)
        if not caught:
            fail(f"tshark negative control not caught: {what}")
        else:
            print(f"tshark negative control caught: {what}: {caught[0]}")


# ---------------------------------------------------------------------------
# Frames built by scapy, parsed by roce_parse()

def scapy_layers():
    """Extension headers scapy 2.5 lacks (IBTA 9.3; its AETH and CNP are used
    as they are)."""
    from scapy.packet import Packet
    from scapy.fields import XByteField, XIntField, XLongField, X3BytesField, IntField

    class RETH(Packet):
        name = "RETH"
        fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dlen", 0)]

    class AtomicETH(Packet):
        name = "AtomicETH"
        fields_desc = [XLongField("va", 0), XIntField("rkey", 0), XLongField("swap", 0),
                       XLongField("cmp", 0)]

    class AtomicAckETH(Packet):
        name = "AtomicAckETH"
        fields_desc = [XLongField("orig", 0)]

    class DETH(Packet):
        name = "DETH"
        fields_desc = [XIntField("qkey", 0), XByteField("resv", 0), X3BytesField("srcqp", 0)]

    class ImmDt(Packet):
        name = "ImmDt"
        fields_desc = [XIntField("imm", 0)]

    class IETH(Packet):
        name = "IETH"
        fields_desc = [XIntField("rkey", 0)]

    return {'RETH': RETH, 'ATMETH': AtomicETH, 'ATMACK': AtomicAckETH, 'DETH': DETH,
            'IMMDT': ImmDt, 'IETH': IETH}


# name, IP version, VLAN (id, priority), opcode, BTH fields, extension headers
# (field values in wire order), payload bytes (before pad), UDP checksum.
SCAPY_CASES = [
    ('RC SEND_ONLY, IPv4, UDP checksum', 4, None, 0x04,
     dict(solicited=1, dqpn=0xabcdef, psn=0xffffff, ackreq=1), {}, 13, True),
    ('RC RDMA_WRITE_ONLY_WITH_IMMEDIATE, IPv4 802.1Q', 4, (7, 3), 0x0b,
     dict(migreq=1, pkey=0x8001, dqpn=0x000012, psn=0), {'RETH': (0x7f0012345678, 0x1234, 64),
                                                          'IMMDT': (0xdeadbeef,)}, 64, False),
    ('RC RDMA_READ_REQUEST, IPv4, FECN and reserved bits', 4, None, 0x0c,
     dict(fecn=1, resv7=0x2a, dqpn=0x800001, psn=0x7fffff, ackreq=1),
     {'RETH': (0x1000, 0xabcd0001, 0x10000)}, 0, False),
    ('RC ACKNOWLEDGE (NAK remote access), IPv4', 4, None, 0x11,
     dict(dqpn=0x42, psn=0x123), {'AETH': (0x62, 0xbeef)}, 0, True),
    ('RC COMPARE_SWAP, IPv4 802.1Q', 4, (4094, 0), 0x13,
     dict(dqpn=0x43, psn=0x5, ackreq=1),
     {'ATMETH': (0x7f0000001000, 0x55, 0x1111222233334444, 0x5555666677778888)}, 0, True),
    ('RC FETCH_ADD, IPv4', 4, None, 0x14,
     dict(dqpn=0x44, psn=0x6, ackreq=1), {'ATMETH': (0x7f0000001008, 0x56, 1, 0)}, 0, False),
    ('CNP (scapy cnp()), IPv4', 4, None, CNP, dict(dqpn=0x000321), {}, 0, False),
    ('RC ATOMIC_ACKNOWLEDGE, IPv6', 6, None, 0x12,
     dict(dqpn=0x45, psn=0x6), {'AETH': (0x1f, 0x10), 'ATMACK': (0x0123456789abcdef,)}, 0, False),
    ('UD SEND_ONLY_WITH_IMMEDIATE, IPv6 802.1Q, UDP checksum', 6, (100, 5), 0x65,
     dict(dqpn=0x000001, psn=0x10, pkey=0xffff), {'DETH': (0x80010000, 0, 0x000002),
                                                  'IMMDT': (0x01020304,)}, 250, True),
    ('RC RDMA_READ_RESPONSE_FIRST, IPv6, BECN and resv6a', 6, None, 0x0d,
     dict(becn=1, resv6=0x15, dqpn=0x46, psn=0x20), {'AETH': (0x1f, 0x11)}, 256, False),
    ('RC SEND_LAST_WITH_INVALIDATE, IPv6 802.1Q', 6, (9, 0), 0x16,
     dict(dqpn=0x47, psn=0x21, ackreq=1), {'IETH': (0x00c0ffee,)}, 1, False),
    ('UC RDMA_WRITE_FIRST, IPv6, UDP checksum', 6, None, 0x26,
     dict(dqpn=0x48, psn=0x22), {'RETH': (0x2000, 0x99, 4096)}, 1024, True),
]
SCAPY_MACS = ('52:54:00:c6:12:0b', '52:54:00:c6:12:0c')   # dst, src
SCAPY_IP4 = ('198.18.0.11', '198.18.0.12')
SCAPY_IP6 = ('2001:db8::11', '2001:db8::12')


def scapy_frame(case):
    """The frame scapy builds for case, and what roce_parse() must report."""
    from scapy.layers.l2 import Ether, Dot1Q
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.packet import Raw
    from scapy.contrib.roce import BTH, AETH, cnp
    import ipaddress
    name, ipver, vlan, op, bth_kw, ext, paylen, udp_csum = case
    hdrs, _ = OPCODES[op]
    if tuple(h for h in hdrs if h != 'CNP') != tuple(ext):
        raise ValueError(f"{name}: extension headers {tuple(ext)} are not {hdrs}")
    layers = scapy_layers()
    pad = -paylen % 4
    payload = bytes((i * 13 + op) & 0xff for i in range(paylen))
    sport = 0xc000 | (op * 0x101 & 0x3fff)

    def build(icrc_value, chksum):
        l2 = Ether(dst=SCAPY_MACS[0], src=SCAPY_MACS[1])
        if vlan:
            l2 = l2 / Dot1Q(vlan=vlan[0], prio=vlan[1])
        if ipver == 4:
            l3 = IP(src=SCAPY_IP4[1], dst=SCAPY_IP4[0], tos=0x02 + op % 3, ttl=63,
                    id=0x1000 + op, flags='DF' if op % 2 else 0)
        else:
            l3 = IPv6(src=SCAPY_IP6[1], dst=SCAPY_IP6[0], tc=0x0a, fl=0x10000 + op, hlim=200)
        if op == CNP:
            roce = cnp(bth_kw['dqpn'])     # scapy's own CNP: BTH(becn=1) / 16 zero bytes
            roce.icrc = icrc_value
        else:
            roce = BTH(opcode=op, padcount=pad, icrc=icrc_value, **bth_kw)
            for h, vals in ext.items():
                cls = AETH if h == 'AETH' else layers[h]
                roce = roce / cls(**dict(zip([f.name for f in cls.fields_desc], vals)))
            if paylen:
                roce = roce / Raw(payload + bytes(pad))
        return l2 / l3 / UDP(sport=sport, dport=4791, chksum=chksum) / roce

    csum = None if udp_csum else 0
    if ipver == 4:
        raw = bytes(build(None, csum))     # scapy computes the ICRC
    else:
        # scapy 2.5 has no IPv6 ICRC: take icrc() of the frame, then let scapy
        # build it again with that ICRC (and the UDP checksum over it).
        w = icrc(Ether(bytes(build(0, 0))))
        raw = bytes(build(int.from_bytes(w, 'big'), csum))

    def gid(addr):
        a = ipaddress.ip_address(addr)
        return (a.packed if a.version == 6 else b'\0' * 10 + b'\xff\xff' + a.packed).hex()

    l3_off = 18 if vlan else 14
    bth_off = l3_off + (20 if ipver == 4 else 40) + 8
    vals = dict(ext)
    z = {'RETH': (0, 0, 0), 'AETH': (0, 0), 'ATMETH': (0, 0, 0, 0), 'ATMACK': (0,),
         'DETH': (0, 0, 0), 'IMMDT': (0,), 'IETH': (0,)}
    z.update(vals)
    exp = {
        'drop': 'NONE',
        'dmac': SCAPY_MACS[0].replace(':', ''), 'smac': SCAPY_MACS[1].replace(':', ''),
        'vlan_present': int(bool(vlan)), 'vlan_tci': vlan[1] << 13 | vlan[0] if vlan else 0,
        'ipv6': int(ipver == 6),
        'sgid': gid((SCAPY_IP4 if ipver == 4 else SCAPY_IP6)[1]),
        'dgid': gid((SCAPY_IP4 if ipver == 4 else SCAPY_IP6)[0]),
        'traffic_class': 0x02 + op % 3 if ipver == 4 else 0x0a,
        'hop_limit': 63 if ipver == 4 else 200,
        'flow_label': 0 if ipver == 4 else 0x10000 + op,
        'ip_id': 0x1000 + op if ipver == 4 else 0,
        'ipv4_df_clear': int(ipver == 4 and not op % 2),
        'udp_sport': sport, 'udp_csum': int(udp_csum),
        'opcode': op, 'se': bth_kw.get('solicited', 0), 'migreq': bth_kw.get('migreq', 0),
        'pad': pad, 'tver': 0, 'pkey': bth_kw.get('pkey', 0xffff),
        'fecn': bth_kw.get('fecn', 0), 'becn': int(op == CNP or bth_kw.get('becn', 0)),
        'resv6a': bth_kw.get('resv6', 0), 'dest_qpn': bth_kw['dqpn'],
        'ack_req': bth_kw.get('ackreq', 0), 'resv7': bth_kw.get('resv7', 0),
        'psn': bth_kw.get('psn', 0),
        'hdrs': '|'.join(h for h in HDR_ORDER if h in hdrs) or '-',
        'reth.va': z['RETH'][0], 'reth.rkey': z['RETH'][1], 'reth.length': z['RETH'][2],
        'aeth.syndrome': z['AETH'][0], 'aeth.msn': z['AETH'][1],
        'atmeth.va': z['ATMETH'][0], 'atmeth.rkey': z['ATMETH'][1],
        'atmeth.swap_add': z['ATMETH'][2], 'atmeth.compare': z['ATMETH'][3],
        'atmack_orig': z['ATMACK'][0],
        'deth.qkey': z['DETH'][0], 'deth.resv': z['DETH'][1], 'deth.src_qpn': z['DETH'][2],
        'imm': f"{z['IMMDT'][0]:08x}", 'ieth_rkey': z['IETH'][0],
        'payload': payload.hex() or '-', 'payload_len': paylen,
        'icrc': int.from_bytes(raw[-4:], 'little'),
        'l3_offset': l3_off, 'bth_offset': bth_off, 'frame_len': len(raw),
    }
    return raw, exp


HEX_KEYS = ('dmac', 'smac', 'sgid', 'dgid', 'imm', 'payload', 'hdrs', 'drop')


def run_parser(parse_frames, pcap, n):
    """roce_parse_frames' records of the n frames of pcap, or None."""
    try:
        out = subprocess.run([parse_frames, pcap], capture_output=True, text=True,
                             timeout=TOOL_TIMEOUT)
    except subprocess.TimeoutExpired:
        fail(f"roce_parse_frames timed out on {pcap}")
        return None
    if out.returncode != 0:
        fail(f"roce_parse_frames exit {out.returncode}: {out.stderr.strip()}")
        return None
    recs = []
    for line in out.stdout.splitlines():
        rec = dict(tok.split('=', 1) for tok in line.split())
        for k, v in rec.items():
            if k not in HEX_KEYS:
                rec[k] = int(v, 16)
        recs.append(rec)
    if len(recs) != n:
        fail(f"roce_parse_frames: {len(recs)} records for {n} frames")
        return None
    return recs


def check_parser(parse_frames, tmp):
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    frames, exps = zip(*(scapy_frame(c) for c in SCAPY_CASES))
    names = [c[0] for c in SCAPY_CASES]

    def flip(raw, off):
        b = bytearray(raw)
        b[off] ^= 1
        return bytes(b)

    # Negative controls: corrupted scapy frames roce_parse() must drop.
    by_name = dict(zip(names, frames))
    controls = [
        ("ICRC flipped (IPv4)", flip(by_name['RC RDMA_READ_REQUEST, IPv4, FECN and reserved bits'],
                                     -1), 'ICRC'),
        ("payload bit flipped (IPv6, no UDP checksum)",
         flip(by_name['RC RDMA_READ_RESPONSE_FIRST, IPv6, BECN and resv6a'], -5), 'ICRC'),
        ("payload bit flipped (IPv6, UDP checksum)",
         flip(by_name['UC RDMA_WRITE_FIRST, IPv6, UDP checksum'], -5), 'UDP_CHECKSUM'),
        ("covered BTH bit flipped (IPv4 CNP, P_Key)",
         flip(by_name['CNP (scapy cnp()), IPv4'], 14 + 20 + 8 + 3), 'ICRC'),
    ]
    pcap = os.path.join(tmp, 'scapy.pcap')
    wrpcap(pcap, [Ether(f) for f in frames] + [Ether(raw) for _, raw, _ in controls])
    recs = run_parser(parse_frames, pcap, len(frames) + len(controls))
    if recs is None:
        return
    n_ok = 0
    for name, exp, rec in zip(names, exps, recs):
        if rec['drop'] != 'NONE':
            bad = [f"dropped: {rec['drop']}"]
        else:
            bad = [f"{k} {rec.get(k)!r}, scapy built {v!r}" for k, v in exp.items()
                   if rec.get(k) != v]
            bad += [f"unexpected field {k}" for k in rec if k not in exp and k != 'frame']
        for b in bad:
            fail(f"roce_parse on scapy's {name}: {b}")
        n_ok += not bad
    print(f"roce_parse: {n_ok}/{len(frames)} frames built by scapy parsed, every field as built")
    for (what, _, reason), rec in zip(controls, recs[len(frames):]):
        if rec['drop'] != reason:
            fail(f"roce_parse negative control {what}: drop {rec['drop']}, want {reason}")
        else:
            print(f"roce_parse negative control dropped: {what}: {reason}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gen_frames, parse_frames = sys.argv[1:]
    missing = [] if have_scapy() else ['scapy (python3-scapy)']
    if not shutil.which('tshark'):
        print("tshark not available")
        missing.append('tshark')
    if missing:
        if os.environ.get('CI') == 'true':
            print(f"crosscheck: FAIL: CI=true and {', '.join(missing)} missing "
                  "(scripts/setup.sh installs them)")
            return 1
        print(f"crosscheck: skipped: {', '.join(missing)} missing")
        return SKIP
    from scapy.utils import rdpcap
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, 'ours.pcap')
        gen = subprocess.run([gen_frames, pcap], capture_output=True, text=True,
                             timeout=TOOL_TIMEOUT)
        print(gen.stdout.strip(), gen.stderr.strip())
        if gen.returncode != 0:
            fail(f"roce_gen_frames exit {gen.returncode}")
            return 1
        frames = [bytes(f) for f in rdpcap(pcap)]
        if len(frames) != 4 * len(OPCODES):
            fail(f"roce_gen_frames wrote {len(frames)} frames, want {4 * len(OPCODES)}")
        check_scapy(frames)
        check_tshark(pcap, frames)
        tshark_negative_controls(frames, tmp)
        check_parser(parse_frames, tmp)
    if failures:
        print(f"crosscheck: {len(failures)} failures")
        return 1
    print("crosscheck: our frames agree with scapy and tshark, scapy's with roce_parse()")
    return 0


if __name__ == "__main__":
    sys.exit(main())
