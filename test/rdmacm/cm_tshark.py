#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 15: our CM exchange, as tshark decodes it, against rxe's.

usage: cm_tshark.py OURS REFERENCE [--need ATTR,...]

OURS is a capture of our CM MADs on the wire (the lab's daemons, or the
interop run); REFERENCE is ../shared/rxe-peer/pcaps/rc_send_rdmacm.pcap
(Linux rxe's rdma_cm exchange). Both are read with `tshark -T pdml`. Every
RoCEv2 frame to QP1 of OURS must:

  * decode as an InfiniBand MAD of the CM class (0x07) with its attribute
    dissected (infiniband.cm.*), and carry no malformed-packet marker and no
    expert info of severity warning or error;
  * have, for its attribute, the same layout as the reference's frames of
    that attribute: the same tshark fields, in the same order, at the same
    offsets from the start of the MAD and with the same sizes (the values
    differ: IDs, QPNs, PSNs, GIDs).

The attributes of --need (default REQ, REP, RTU, DREQ, DREP) must all be in
OURS, and each of them in the reference (so each one really was compared).
Before any of that, a negative control: the reference's first CM frame cut
short must come out malformed, so the detector can fail.

Exit 0 pass, 1 fail, 77 no tshark (unless CI=true).
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

CM_ATTRS = {0x0010: 'REQ', 0x0011: 'MRA', 0x0012: 'REJ', 0x0013: 'REP', 0x0014: 'RTU',
            0x0015: 'DREQ', 0x0016: 'DREP', 0x0017: 'SIDR_REQ', 0x0018: 'SIDR_REP'}
SKIP = 77


def pdml(path):
    """tshark's PDML of the RoCEv2 frames to QP1 in @path: a list of <packet> elements."""
    out = subprocess.run(['tshark', '-r', path, '-o', 'infiniband.dissect_eoib:FALSE',
                          '-Y', 'infiniband.bth.destqp == 1', '-T', 'pdml'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if out.returncode != 0:
        # an unknown preference only: retry without it
        out = subprocess.run(['tshark', '-r', path, '-Y', 'infiniband.bth.destqp == 1',
                              '-T', 'pdml'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             check=False)
    if out.returncode != 0:
        raise RuntimeError(f'tshark -r {path}: exit {out.returncode}: '
                           f'{out.stderr.decode(errors="replace").strip()[:300]}')
    return ET.fromstring(out.stdout).findall('packet')


def fields(pkt):
    """Every field of a packet, depth first (name, pos, size, show, showname)."""
    for f in pkt.iter('field'):
        yield f


def mad_start(pkt):
    for f in fields(pkt):
        if f.get('name') == 'infiniband.mad':
            return int(f.get('pos'))
    return None


def problems_of(pkt):
    """Malformed markers and expert infos (warning or error) of one packet."""
    bad = []
    for p in pkt.iter('proto'):
        if p.get('name') == '_ws.malformed':
            bad.append('malformed: ' + (p.get('showname') or ''))
    for f in fields(pkt):
        name = f.get('name') or ''
        if name.startswith('_ws.malformed'):
            bad.append('malformed: ' + (f.get('showname') or name))
        if name == '_ws.expert.severity':
            sev = int(f.get('show', '0'), 0)
            # 0x00600000 warning, 0x00800000 error (epan/proto.h PI_WARN, PI_ERROR)
            if sev >= 0x00600000:
                bad.append('expert: ' + (f.get('showname') or ''))
        if name == '_ws.expert.message':
            bad.append('expert message: ' + (f.get('show') or ''))
    return bad


def attr_of(pkt):
    for f in fields(pkt):
        if f.get('name') == 'infiniband.mad.attributeid':
            return int(f.get('show'), 0)
    return None


def layout(pkt):
    """(name, offset from the MAD, size) of every MAD/CM field, in tshark's order."""
    base = mad_start(pkt)
    rows = []
    for f in fields(pkt):
        name = f.get('name') or ''
        if name.startswith('infiniband.mad') or name.startswith('infiniband.cm'):
            rows.append((name, int(f.get('pos')) - base, int(f.get('size'))))
    return rows


def analyse(path):
    """{attribute name: [layout, ...]}, [problem, ...] for the QP1 frames of @path."""
    by_attr, bad = {}, []
    pkts = pdml(path)
    if not pkts:
        bad.append(f'{path}: no RoCEv2 frame to QP1')
    for pkt in pkts:
        num = next((f.get('show') for f in fields(pkt) if f.get('name') == 'frame.number'), '?')
        where = f'{os.path.basename(path)} frame {num}'
        for p in problems_of(pkt):
            bad.append(f'{where}: {p}')
        if mad_start(pkt) is None:
            bad.append(f'{where}: not decoded as a MAD')
            continue
        cls = next((int(f.get('show'), 0) for f in fields(pkt)
                    if f.get('name') == 'infiniband.mad.mgmtclass'), None)
        attr = attr_of(pkt)
        if cls != 0x07 or attr not in CM_ATTRS:
            bad.append(f'{where}: MAD class {cls} attribute {attr}: not a CM message')
            continue
        lay = layout(pkt)
        if not any(n.startswith('infiniband.cm.') for n, _, _ in lay):
            bad.append(f'{where}: CM {CM_ATTRS[attr]} not dissected (no infiniband.cm field)')
        by_attr.setdefault(CM_ATTRS[attr], []).append((where, lay))
    return by_attr, bad


def first_diff(a, b):
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            return f'field {i}: ours {x}, reference {y}'
    return 'equal'


def truncated_copy(ref, tmp):
    """The reference's first CM frame cut 40 bytes short, as a classic pcap."""
    dst = os.path.join(tmp, 'truncated.pcap')
    subprocess.run(['editcap', '-F', 'pcap', '-r', ref, os.path.join(tmp, 'one.pcap'), '1'],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(tmp, 'one.pcap'), 'rb') as f:
        data = f.read()
    endian = '<' if data[:4] == b'\xd4\xc3\xb2\xa1' else '>'
    ts_s, ts_us, incl, orig = struct.unpack(endian + 'IIII', data[24:40])
    frame = data[40:40 + incl]
    cut = frame[:incl - 40]
    # keep the IP/UDP lengths claiming the whole frame: a truncated MAD
    with open(dst, 'wb') as f:
        f.write(data[:24])
        f.write(struct.pack(endian + 'IIII', ts_s, ts_us, len(cut), len(cut)))
        f.write(cut)
    return dst


def main():
    args = sys.argv[1:]
    need = ['REQ', 'REP', 'RTU', 'DREQ', 'DREP']
    if '--need' in args:
        i = args.index('--need')
        need = [a for a in args[i + 1].split(',') if a]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    ours, ref = args
    if shutil.which('tshark') is None or shutil.which('editcap') is None:
        print('cm_tshark: no tshark/editcap' + (' (CI: a failure)' if os.environ.get('CI') == 'true' else ''))
        return 1 if os.environ.get('CI') == 'true' else SKIP
    bad = []
    with tempfile.TemporaryDirectory(prefix='cm-tshark-') as tmp:
        _, neg = analyse(truncated_copy(ref, tmp))
        if not any('malformed' in p for p in neg):
            bad.append(f'negative control: a truncated REQ was not reported malformed ({neg})')
        else:
            print(f'cm_tshark: negative control: a truncated REQ is reported ({neg[0]})')
    ref_attrs, ref_bad = analyse(ref)
    bad += [f'reference: {p}' for p in ref_bad]
    our_attrs, our_bad = analyse(ours)
    bad += our_bad
    for attr in need:
        if attr not in our_attrs:
            bad.append(f'no {attr} in our capture')
        if attr not in ref_attrs:
            bad.append(f'no {attr} in the reference: nothing to compare it with')
    for attr, frames in sorted(our_attrs.items()):
        if attr not in ref_attrs:
            print(f'cm_tshark: {attr}: {len(frames)} frame(s), decoded; no reference frame')
            continue
        ref_layouts = {tuple(lay) for _, lay in ref_attrs[attr]}
        ref_where, ref_lay = ref_attrs[attr][0]
        for where, lay in frames:
            if tuple(lay) not in ref_layouts:
                bad.append(f'{where}: {attr} layout differs from {ref_where}: '
                           f'{first_diff(lay, ref_lay)}')
        print(f'cm_tshark: {attr}: {len(frames)} frame(s), {len(ref_lay)} fields each, '
              f'layout as in the reference ({len(ref_attrs[attr])} frame(s))')
    for b in bad:
        print('FAIL: ' + b)
    print(f'cm_tshark: {sum(len(v) for v in our_attrs.values())} CM frames checked, '
          f'{len(bad)} problem(s)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
