"""Check gloaddriver's in-process syscall counts against perf stat.

Runs ``python -m gloaddriver <your flags>`` under ``perf stat -e <the same
tracepoints>`` with perf's events disabled until the driver enables them at
each phase start and disables them at each phase end (perf's --control
fifos), so both tools count the same windows. Prints both counts per syscall
and their difference; exit 1 if any differs by more than --tolerance.

With --spawn in the flags the server is started here, outside perf (a child
of the measured process would be counted too), and the run gets --uri.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from gloaddriver.measure import syscalls  # noqa: E402
from gloaddriver.backends.tarantool.server import TarantoolServer
from gloaddriver.backends.spawn import which  # noqa: E402

# perf's control handshake: the "disable" write is counted (it enters before
# perf acts on it) and an ack read may be: up to this many calls per phase.
HANDSHAKE_SLACK = 3


def perf_events():
    root = syscalls.tracefs_root()
    if root is None:
        return None
    events = ['raw_syscalls:sys_enter']
    for name in syscalls.NAMES:
        if os.path.exists(os.path.join(root, 'events', 'syscalls', 'sys_enter_' + name)):
            events.append('syscalls:sys_enter_' + name)
    return events


def parse_perf(path):
    counts = {}
    with open(path) as f:
        for line in f:
            parts = line.strip().split(',')
            if len(parts) < 3 or not parts[0].strip().isdigit():
                continue
            event = parts[2]
            name = syscalls.TOTAL if event == 'raw_syscalls:sys_enter' else \
                event.split('sys_enter_', 1)[-1]
            counts[name] = int(parts[0])
    return counts


def compare(perf, result, tolerance):
    phases = result['phases']
    inproc = {}
    for p in phases:
        for k, v in (p['syscalls'].get('counts') or {}).items():
            inproc[k] = inproc.get(k, 0) + v
        for k, v in (p['syscalls'].get('excluded') or {}).items():
            inproc[k] = inproc.get(k, 0) + v
            inproc[syscalls.TOTAL] = inproc.get(syscalls.TOTAL, 0) + v
        own = p['syscalls'].get('self_reads', 0)
        inproc['read'] = inproc.get('read', 0) + own
        inproc[syscalls.TOTAL] = inproc.get(syscalls.TOTAL, 0) + own
    rows = []
    ok = True
    slack = HANDSHAKE_SLACK * len(phases)
    for name in [syscalls.TOTAL] + sorted(k for k in perf if k != syscalls.TOTAL):
        a, b = perf.get(name, 0), inproc.get(name, 0)
        diff = b - a
        pct = (100.0 * diff / a) if a else (0.0 if not b else 100.0)
        good = abs(diff) <= max(tolerance / 100.0 * a, slack if name in ('read', 'write', syscalls.TOTAL) else 0)
        ok = ok and good
        rows.append({'syscall': name, 'perf_stat': a, 'in_process': b, 'diff': diff,
                     'diff_pct': round(pct, 3), 'agrees': good})
    return ok, rows


def main(argv):
    tolerance = 2.0
    if argv[:1] == ['--tolerance']:
        tolerance = float(argv[1])
        argv = argv[2:]
    perf = which('perf')
    if not perf:
        sys.stderr.write('syscalls: perf is not installed (apt-get install linux-perf)\n')
        return 2
    events = perf_events()
    if not events:
        sys.stderr.write('syscalls: tracefs is not mounted (mount -t tracefs nodev '
                         '/sys/kernel/tracing)\n')
        return 2
    tmp = tempfile.mkdtemp(prefix='gloaddriver-syscalls-')
    server = None
    try:
        env = dict(os.environ, PYTHONPATH=ROOT)
        args = list(argv)
        if '--spawn' in args:
            args.remove('--spawn')
            server = TarantoolServer().start()
            args += ['--uri', server.uri, '--user', server.user]
            env['GLOADDRIVER_PASSWORD'] = server.password
        ctl, ack = os.path.join(tmp, 'ctl'), os.path.join(tmp, 'ack')
        os.mkfifo(ctl)
        os.mkfifo(ack)
        env[syscalls.PERF_CONTROL_ENV] = '%s,%s' % (ctl, ack)
        out_json = os.path.join(tmp, 'result.json')
        perf_out = os.path.join(tmp, 'perf.csv')
        cmd = [perf, 'stat', '-x', ',', '-o', perf_out, '-D', '-1',
               '--control', 'fifo:%s,%s' % (ctl, ack), '-e', ','.join(events), '--',
               sys.executable, '-m', 'gloaddriver', '--json', out_json] + args
        rc = subprocess.call(cmd, env=env, cwd=ROOT)
        if not os.path.exists(out_json):
            sys.stderr.write('syscalls: the driver wrote no result (exit %d)\n' % rc)
            return 1
        with open(out_json) as f:
            result = json.load(f)
        if result['manifest']['syscall_source'] != 'perf_event':
            sys.stderr.write('syscalls: the driver had no in-process counters (%s)\n'
                             % result['manifest']['syscall_reason'])
            return 1
        ok, rows = compare(parse_perf(perf_out), result, tolerance)
        print('\nsyscalls in the measured phases: perf stat vs gloaddriver in-process '
              '(%d phases, %s ops)' % (len(result['phases']),
                                      '{:,}'.format(sum(p['attempted'] for p in result['phases']))))
        print('%-14s %12s %12s %8s %9s' % ('syscall', 'perf stat', 'in-process', 'diff', 'diff %'))
        for r in rows:
            if r['perf_stat'] or r['in_process']:
                print('%-14s %12s %12s %8d %8.3f%%%s' % (
                    r['syscall'], '{:,}'.format(r['perf_stat']), '{:,}'.format(r['in_process']),
                    r['diff'], r['diff_pct'], '' if r['agrees'] else '  DISAGREES'))
        print('agree within %.1f%%: %s' % (tolerance, 'yes' if ok else 'NO'))
        print(json.dumps({'agree': ok, 'tolerance_pct': tolerance, 'rows': rows}))
        return 0 if ok else 1
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
