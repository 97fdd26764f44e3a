#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarise one testbed run (bench/congestion/testbed.sh), or plot them.

  analyze.py --mode M --rate MBPS --kmax BYTES --senders N --macs FILE SWITCH.csv CLIENT.csv...
      per-flow rate over the last half of the traffic, Jain's fairness index
      (of those averages, and the mean and minimum over 100 ms windows; and
      over the second half of the time every sender ran, *_overlap_*),
      goodput (perftest's, and bytes through the bottleneck), queue depth
      (mean, max, share of samples below K_max), marks and drops; written to
      stdout and to M.summary.json beside SWITCH.csv
  analyze.py --plot DIR MODE...
      DIR/congestion-MODE.png: per-flow rate and queue depth over time
      (needs python3-matplotlib; says so and exits 0 without it)
"""
import argparse
import csv
import json
import os
import sys


def read_switch(path):
    """Rows of the switch CSV as dicts; the header repeats when a MAC is learnt."""
    rows, header = [], None
    with open(path) as f:
        for line in f:
            cells = line.strip().split(',')
            if cells[0] == 'time_ms':
                header = cells
                continue
            if header is None or len(cells) != len(header):
                continue
            row = {}
            for k, v in zip(header, cells):
                row[k] = float(v)
            rows.append(row)
    return rows


def jain(xs):
    s, q = sum(xs), sum(x * x for x in xs)
    return (s * s) / (len(xs) * q) if q > 0 else 0.0


def flows(rows, macs):
    """Per-sender rate series in Mb/s (bytes per sample interval)."""
    series = {m: [] for m in macs}
    times = []
    for i, r in enumerate(rows):
        dt = (r['time_ms'] - rows[i - 1]['time_ms']) / 1000 if i else None
        if not dt:
            continue
        times.append(r['time_ms'] / 1000)
        for m in macs:
            series[m].append(r.get(m, 0.0) * 8 / dt / 1e6)
    return times, series


def overlap(times, series, macs, floor):
    """Jain and the total over the second half of the time every sender ran
    (from the latest first to the earliest last 10 ms sample above @floor Mb/s,
    a tenth of the fair share: the TCP exchange before a run stays below):
    perftest's setup can start the senders seconds apart on a loaded host,
    and the last half of the whole run then holds a sender alone."""
    firsts, lasts = [], []
    for m in macs:
        nz = [i for i, x in enumerate(series[m]) if x > floor]
        if not nz:
            return {}
        firsts.append(nz[0])
        lasts.append(nz[-1])
    lo, hi = max(firsts), min(lasts)
    if hi - lo < 20:
        return {}
    half = range((lo + hi) // 2, hi + 1)
    per_flow = [sum(series[m][i] for i in half) / len(half) for m in macs]
    return {'jain_overlap_last_half': round(jain(per_flow), 3),
            'bottleneck_mbps_overlap_last_half': round(sum(per_flow), 1),
            'overlap_s': round(times[hi] - times[lo], 1)}


def summarise(a):
    rows = read_switch(a.switch)
    with open(a.macs) as f:
        macs = [line.split()[1] for line in f if line.strip()]
    times, series = flows(rows, macs)
    total = [sum(series[m][i] for m in macs) for i in range(len(times))]
    active = [i for i, t in enumerate(total) if t > 0.1 * a.rate]
    out = {'mode': a.mode, 'senders': a.senders, 'bottleneck_mbps': a.rate}
    if not active:
        out['error'] = 'no traffic through the bottleneck'
    else:
        first, last = active[0], active[-1]
        half = range((first + last) // 2, last + 1)
        per_flow = [sum(series[m][i] for i in half) / len(half) for m in macs]
        q = [rows[i + 1]['queue_bytes'] for i in range(first, last + 1)]
        # fairness over 100 ms windows (10 samples): the long average hides
        # flows that take turns
        win = [list(half)[k:k + 10] for k in range(0, len(half) - 9, 10)]
        jw = [jain([sum(series[m][i] for i in w) for m in macs]) for w in win]
        out.update({
            'flow_mbps_last_half': [round(x, 1) for x in per_flow],
            'jain_last_half': round(jain(per_flow), 3),
            'jain_100ms_mean': round(sum(jw) / len(jw), 3) if jw else None,
            'jain_100ms_min': round(min(jw), 3) if jw else None,
            'bottleneck_mbps_last_half': round(sum(per_flow), 1),
            'queue_mean_bytes': round(sum(q) / len(q)),
            'queue_max_bytes': max(q),
            'queue_below_kmax_share': round(sum(1 for x in q if x < a.kmax) / len(q), 3),
            'marks': rows[-1]['marks'],
            **overlap(times, series, macs, 0.1 * a.rate / len(macs)),
            'drops': rows[-1]['drops'],
        })
    goodput = 0.0
    for c in a.clients:
        with open(c) as f:
            for r in csv.DictReader(f):
                if r.get('role') == 'client' and r.get('bw_avg'):
                    bw = float(r['bw_avg'])
                    goodput += bw * 8 * 1.048576 if r['bw_unit'] == 'MiB/sec' else bw * 1000
    out['perftest_goodput_mbps'] = round(goodput, 1)
    out['goodput_share'] = round(goodput / a.rate, 3)
    path = os.path.join(os.path.dirname(a.switch), a.mode + '.summary.json')
    with open(path, 'w') as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))


def plot(d, modes):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('analyze.py: no matplotlib (apt-get install python3-matplotlib): no plots')
        return
    for m in modes:
        sw = os.path.join(d, m + '.switch.csv')
        if not os.path.exists(sw):
            continue
        with open(os.path.join(d, m + '.macs')) as f:
            names = [line.split() for line in f if line.strip()]
        rows = read_switch(sw)
        times, series = flows(rows, [n[1] for n in names])
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        for host, mac in names:
            ax1.plot(times, series[mac], label=host, linewidth=0.8)
        ax1.set_ylabel('rate through the bottleneck (Mb/s)')
        ax1.legend(loc='upper right')
        ax1.set_title('cc = %s' % m)
        ax2.plot([r['time_ms'] / 1000 for r in rows], [r['queue_bytes'] / 1000 for r in rows],
                 linewidth=0.8)
        ax2.set_ylabel('queue (KB)')
        ax2.set_xlabel('time (s)')
        fig.tight_layout()
        out = os.path.join(d, 'congestion-%s.png' % m)
        fig.savefig(out, dpi=80)
        print('analyze.py: wrote', out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--mode')
    p.add_argument('--rate', type=float)
    p.add_argument('--kmax', type=float)
    p.add_argument('--senders', type=int)
    p.add_argument('--macs')
    p.add_argument('--plot', metavar='DIR')
    p.add_argument('files', nargs='*')
    a = p.parse_args()
    if a.plot:
        plot(a.plot, a.files)
        return 0
    a.switch, a.clients = a.files[0], a.files[1:]
    summarise(a)
    return 0


if __name__ == '__main__':
    sys.exit(main())
