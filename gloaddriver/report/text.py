"""The final table (stdout) and the JSON result file.

The JSON contract is result.schema.json beside this module (docs/result.md); ``to_json``
is the only place that shapes it.
"""
from __future__ import absolute_import, division, print_function

import io
import json
import re

from gloaddriver.measure import libraries, server_metrics, stats
from gloaddriver.report import find_max

_COUNTS = (
    ('phase', '%-{w}s', lambda p: round_name(p)),
    ('attempted', '%10s', lambda p: _n(p['attempted'])),
    ('ok', '%10s', lambda p: _n(p['ok'])),
    ('failed', '%7s', lambda p: _n(p['failed'])),
    ('t/o', '%5s', lambda p: _n(p['timed_out'])),
    ('ops/s', '%9s', lambda p: _n(p['ops_per_sec'])),
)
_REST = (
    ('maxus', '%8s', lambda p: _n(p['latency_us']['max'])),
    ('cpuus/op', '%8s', lambda p: _f(p.get('cpu_us_per_op'), 1)),
    ('sys/op', '%7s', lambda p: _f(p['syscalls'].get('per_op'))),
    ('net/op', '%7s', lambda p: _f(p['syscalls'].get('network_per_op'))),
    ('req/send', '%8s', lambda p: _f(p['batching'].get('requests_per_send'), 1)),
)


def round_name(p):
    """A phase's name; a round of --repeat has its number: ``insert #2``."""
    return p['name'] + (' #%d' % p['repeat'] if p.get('repeat') else '') + \
        (' step %d' % p['step'] if p.get('step') else '')   # --find-max


def repeat_lines(result):
    """--repeat N: per phase, the median of the rates and the chosen percentiles, with the
    best and worst round and the spread between them."""
    rep = result.get('repeat')
    if not rep:
        return []
    pcts = result['manifest'].get('percentiles') or stats.DEFAULT_PERCENTILES
    shown = [('ops_per_sec', 'ops/s')] + [(stats.percentile_key(p), stats.percentile_label(p)
                                           + 'us') for p in pcts] + [('max', 'maxus')]
    lines = ['repeat: %d of %d rounds ran; median (best .. worst, spread as %% of the median):'
             % (rep['ran'], rep['rounds'])]
    for p in rep['phases']:
        figs = p['figures']
        parts = ['%s %s (%s .. %s, %s)' % (
            label, _n(figs[key]['median']), _n(figs[key]['best']), _n(figs[key]['worst']),
            '-' if figs[key]['spread_pct'] is None else '%.1f%%' % figs[key]['spread_pct'])
            for key, label in shown if key in figs]
        lines.append('  %s: %s' % (p['name'], '; '.join(parts)))
        if p.get('failed_rounds'):
            lines.append('  %s: round%s %s had failed ops: %s' % (
                p['name'], 's' if len(p['failed_rounds']) > 1 else '',
                ', '.join('#%d' % i for i in p['failed_rounds']),
                'left out of the figures above' if p['summarised'] < p['rounds']
                else 'every round did, so all are in the figures above'))
    return lines


def _percentile_column(pct):
    key = stats.percentile_key(pct)
    # .get: result files from before p95 was measured have none
    return (stats.percentile_label(pct) + 'us', '%7s', lambda p: _n(p['latency_us'].get(key)))


def columns(result):
    """The table's columns: the counts, the percentiles the run chose (--percentiles, in
    its manifest; today's set for files without it), then max and the per-op costs."""
    pcts = result['manifest'].get('percentiles') or stats.DEFAULT_PERCENTILES
    return _COUNTS + tuple(_percentile_column(p) for p in pcts) + _REST


def _n(v):
    if v is None:
        return '-'
    return '{:,}'.format(int(round(v)))


count = _n     # a count as the table writes it (the page writes its tables the same way)


def _f(v, digits=3):
    return '-' if v is None else ('%.*f' % (digits, v))


def headline(result):
    """What ran against what: the report's first line."""
    m = result['manifest']
    srv = m['server']
    where = '%s %s at %s' % (srv.get('product') or m['backend'], srv.get('version') or '',
                             srv['address'])
    if srv.get('spawned'):
        where += ' (spawned, wal_mode=%s)' % srv.get('wal_mode')
    return 'gloaddriver %s: %s; %s; %s, msgpack %s%s' % (
        m['gloaddriver'], where, m['connector_detail'], m['interpreter'],
        m['dependencies'].get('msgpack'), '' if m['msgpack_c_extension'] else ' (PURE PYTHON)')


def summary_rows(result):
    """(is_op, cells): a row per phase, then one per op of a mix; cells as ``columns``
    shows them."""
    cols = columns(result)
    for p in result['phases']:
        yield False, [get(p) for _name, _fmt, get in cols]
        for op, sub in sorted(p.get('ops', {}).items()):
            sub = dict(sub, name=op, syscalls={}, batching={})
            yield True, [get(sub) for _name, _fmt, get in cols]


def table(result):
    """The human report as a list of lines."""
    m = result['manifest']
    lines = [headline(result)]
    rows = []
    for is_op, cells in summary_rows(result):
        if is_op:
            cells[0] = '  ' + cells[0]
        rows.append(cells)
    # Each column as wide as its widest cell (a long phase or op name, a big count),
    # at least as its format says: the columns stay aligned whatever the names.
    fmts = []
    cols = columns(result)
    for i, (name, fmt, _get) in enumerate(cols):
        width = max([int(re.sub(r'\D', '', fmt) or 7), len(name)] +
                    [len(r[i]) for r in rows])
        fmts.append(('%-' if fmt.startswith('%-') else '%') + str(width) + 's')
    lines.append('  '.join(fmt % name for (name, _f, _g), fmt in zip(cols, fmts)))
    for cells in rows:
        lines.append('  '.join(fmt % cell for fmt, cell in zip(fmts, cells)))
    for p in result['phases']:
        origins = p.get('error_origins') or {}   # absent from older result files
        for kind, count in sorted(p['errors'].items()):
            lines.append('%s: %s x %s%s: %s' % (
                p['name'], _n(count), kind, ' at %s' % origins[kind] if kind in origins else '',
                p['error_samples'].get(kind, '')))
        if p['misses']:
            lines.append('%s: %s ops found no row for their key' % (p['name'], _n(p['misses'])))
        lines.extend(member_lines(p))
    lines += script_batching_lines(result) + [syscall_line(result)]
    if m.get('profiler'):
        lines.append('PROFILED (%s): ops/s and latencies above include the profiler\'s cost; '
                     'they show where time goes, they are not throughput figures' % m['profiler'])
        if 'cpu clock' in m['profiler']:
            lines.append('  (cpu clock: its clock_gettime syscalls are left out of sys/op)')
        else:
            lines.append('  (wall clock: time in _await_reply, _wait_io and sleep is waiting for '
                         'the server or the socket, not work; --profile-clock cpu shows CPU only)')
        for p in result['phases']:
            lines.extend(profile_lines(p))
    for p in result['phases']:
        for key in FLAMEGRAPH_KEYS:
            lines.extend(flamegraph_lines(p, key))
    for p in result['phases']:
        r = p.get('rate')
        if r and not p.get('step'):   # a --find-max step is a row of the search's table
            svc = p['service_time_us']
            lines.append('%s: open loop %s ops/s (%s arrivals), achieved %s; latencies above '
                         'are from the intended start (coordinated omission corrected); service '
                         'time p50 %s p95 %s p99 %s p99.9 %s us; %s late (> %.0f ms behind), '
                         '%s dropped'
                         % (p['name'], ('through its stages, up to %s' if p.get('stages')
                                        else 'at %s') % _n(r['target']), r['arrival'],
                            _n(r['achieved']),
                            _n(svc['p50']), _n(svc.get('p95')), _n(svc['p99']), _n(svc['p999']),
                            _n(r['late']),
                            r['late_after_ms'], _n(r['dropped'])))
        lines.extend(stage_lines(p))
        lines.extend(script_lines(p) + result_size_lines(p))
        for note in p.get('notes', ()):   # what the backend says of its phase
            lines.append('%s: %s' % (p['name'], note))
        lines.extend(outage_lines(p))
    injected = [f for f in result.get('faults') or () if not f.get('source')]
    seen = [f for f in result.get('faults') or () if f.get('source')]
    if injected:
        lines.append('faults injected: ' + ', '.join(fault_text(f) for f in injected))
    if seen:
        lines.append('the HA stack on its own: ' + ', '.join(fault_text(f) for f in seen))
    if result.get('verify'):
        lines.extend(verify_lines(result['verify']))
    lines.extend(repeat_lines(result))
    lines.extend(find_max.lines(result))
    if result.get('aborted'):
        lines.append('ABORTED: %s' % result['aborted'])
    for w in result.get('warnings') or ():
        lines.append('WARNING %s' % w['message'])
    return lines


def member_lines(phase):
    """A replica set's phase: the requests each member served, from the members' own
    counters, so reads sent to replicas (--read-from) show where they went."""
    counts = ((phase.get('server_metrics') or {}).get('phase') or {}).get('counts') or {}
    members = sorted((k.split('@', 1)[1], v) for k, v in counts.items()
                     if k.startswith(server_metrics.MEMBER_REQUESTS))
    if not members:
        return []
    return ['%s: requests served by member (their own counters, the samplers\' included): %s'
            % (phase['name'], ', '.join('%s %s' % (uri, _n(v)) for uri, v in members))]


def syscall_line(result):
    """What the table's sys/op and net/op counted."""
    m = result['manifest']
    if m['syscall_source'] == 'perf_event':
        return ('sys/op: all syscalls per op, net/op: send*/recv* per op; counted in-process '
                'by perf_event tracepoints (exact, this process only)')
    if result['phases'] and result['phases'][0]['syscalls'].get('source') == 'io_calls':
        return ('sys/op, net/op: socket calls counted by the connector, a LOWER BOUND on '
                'syscalls (%s)' % m['syscall_reason'])
    return 'syscalls not counted: %s' % m['syscall_reason']


def result_size_lines(phase):
    """What the queries of a phase returned, where the connector counts it: rows and
    result bytes, in all and per second."""
    if phase.get('rows') is None:
        return []
    seconds = phase.get('seconds') or 0
    size = phase['result_bytes']
    rate = (' (%s rows/s, %.1f MB/s)' % (_n(int(phase['rows'] / seconds)), size / seconds / 1e6)
            if seconds > 0 else '')
    return ['%s: %s rows read, %.1f MB of rows%s' % (phase['name'], _n(phase['rows']), size / 1e6,
                                                     rate)]


def script_lines(phase):
    """A phase of scripts: its retries and failures by class, and with --per-statement a
    row per script command (pgbench -r's figures, in milliseconds)."""
    return retry_lines(phase) + statement_lines(phase)


def retry_lines(phase):
    """The retries and failures by class of a phase of scripts, when there is something
    to say (retries asked for, or failures)."""
    sc = phase.get('script')
    if not sc:
        return []
    f = sc['failures']
    if sc['max_tries'] == 1 and not any(f.values()):
        return []
    return ['%s: %s transactions retried (%s retries in all, up to %s tries each); '
            'failed: %s serialization, %s deadlock, %s other'
            % (phase['name'], _n(sc['retried']), _n(sc['retries']),
               sc['max_tries'] or 'unlimited', _n(f['serialization']), _n(f['deadlock']),
               _n(f['other']))]


def statement_lines(phase):
    """--per-statement: a row per script command."""
    sc = phase.get('script') or {}
    rows = sc.get('statements')
    if not rows:
        return []
    # script:line as wide as its widest cell, so the commands start in one column from
    # tpcb-like:10 on as before it.
    places = ['%s:%d' % (r['script'], r['line']) for r in rows]
    width = max(len(x) for x in places + ['script:line'])
    lines = ['%s: per statement, latency in ms (%s protocol):' % (phase['name'],
                                                                  sc['protocol']),
             '  %10s %9s %9s %9s %8s %8s  %-*s  %s' % ('count', 'mean', 'p50', 'p99',
                                                       'failures', 'retries', width,
                                                       'script:line', 'command')]
    for r, place in zip(rows, places):
        lat = r['latency_us']
        lines.append('  %10s %9s %9s %9s %8s %8s  %-*s  %s' % (
            _n(r['count']), ms(lat['mean']), ms(lat['p50']), ms(lat['p99']),
            _n(r['failures']), _n(r['retries']), width, place,
            r['command'] if len(r['command']) <= 70 else r['command'][:67] + '...'))
    return lines


def script_batching_lines(result):
    """What the table's req/send means for a phase of scripts, whose op is a whole
    transaction (a script run) of several statements: transactions per send call, so
    TPC-B-like's seven statements sent one by one show 0.1. Said rather than left to
    be read as the batching of single requests."""
    out = []
    for p in result['phases']:
        per_send = (p.get('batching') or {}).get('requests_per_send')
        if p.get('script') is None or not per_send:
            continue
        out.append('%s: req/send counts transactions (script runs) per send call: %.2f, '
                   '%.1f sends per transaction' % (p['name'], per_send, 1.0 / per_send))
    return out


def ms(us):
    """Microseconds as milliseconds, three decimals (pgbench's -r figures)."""
    return '-' if us is None else '%.3f' % (us / 1000.0)



def _ha_parts(phase, o):
    """What the HA stack did during an outage (``--ha``: the events with a source, and
    the faults, from a second before it to a second after, and the last fault before
    that), as seconds from its start; '' without any. The events are as the watch saw
    them: up to its period (0.5 s) after they happened."""
    end = o['end'] if not o['open'] else phase.get('seconds') or o['start'] + o['duration']
    faults = phase.get('faults') or ()
    events = [f for f in faults if o['start'] - 1.0 <= f['t'] <= end + 1.0]
    if not any(f.get('source') for f in events):
        return ''
    before = [f for f in faults if not f.get('source') and f['t'] < o['start'] - 1.0]
    events = before[-1:] + events     # the fault that began it, a while before (dcs-down)
    text = ', '.join('%s %s%+.2f s' % (_fault_name(f), ('(%s) ' % f['member'])
                                        if f.get('member') else '', f['t'] - o['start'])
                     for f in events)
    if not o['open']:
        text += ', first success %+.2f s' % (o['end'] - o['start'])
    return text


def _fault_name(f):
    return '%s-%s' % (f['action'], f['target']) if f.get('target') else f['action']


def fault_text(f):
    name = '%s-%s' % (f['action'], f['target']) if f.get('target') else f['action']
    if f.get('member'):
        name += ' (%s)' % f['member']
    elif f.get('to'):
        name += ' %s -> %s' % (f['from'], f['to'])
    text = '%s at %.2f s' % (name, f['t'])
    if f.get('duration') is not None:
        text += ' for %g s' % f['duration']
    took = f.get('took')
    # A promote's time is the failover's own figure, however short (the JSON has it);
    # another action's only when it was slow enough to matter.
    if took is not None and (f['action'] == 'promote' or took >= 0.05):
        text += ' (took %s s)' % ('%.3f' % took if took < 0.05 else '%.2f' % took)
    if f.get('error'):
        text += ' FAILED: %s' % f['error']
    return text


def stage_lines(phase):
    """A line per stage of --stages: its plan, then what it achieved."""
    out = []
    for s in phase.get('stages') or ():
        closed = s['unit'] == 'greenlets'
        text = '%s: stage %d %5.1f-%.1f s, %s %s->%s: ' % (
            phase['name'], s['stage'], s['start'], s['end'], s['unit'], _n(s['target_from']),
            _n(s['target_to']))
        if not s['seconds']:
            out.append(text + 'not reached')
            continue
        if closed:
            text += '%s ops, %s ops/s, mean active %.1f greenlets (target %.1f)' % (
                _n(s['attempted']), _n(s['ops_per_sec']), s.get('mean_active') or 0,
                s['mean_target'])
        else:
            text += '%s ops, achieved %s ops/s (target %s), %s dropped' % (
                _n(s['attempted']), _n(s['achieved_rate']), _n(s['mean_target']),
                _n(s['dropped']))
        text += ', p99 %s us, %s errors' % (_n(s['p99_us']), _n(s['errors']))
        if s['seconds'] < s['end'] - s['start'] - 0.05:
            text += ' (the phase ended %.1f s into it)' % s['seconds']
        out.append(text)
    return out


def outage_lines(phase):
    """A line per outage of a phase: when, how long, what it cost, how it ended."""
    out = []
    for o in phase.get('outages') or ():
        if o['open']:
            when = 'from %.2f s, STILL DOWN when the phase ended (%.2f s so far)' % (
                o['start'], o['duration'])
        else:
            when = '%.2f-%.2f s (%.2f s)' % (o['start'], o['end'], o['duration'])
        text = '%s: OUTAGE %s: %s failed, %s timed out' % (
            phase['name'], when, _n(o['failed']), _n(o['timed_out']))
        if o.get('reconnects') is not None:
            text += ', %d reconnect%s' % (o['reconnects'], '' if o['reconnects'] == 1 else 's')
        if o.get('recovery') is not None:
            text += ', first success %.2f s after the server returned' % o['recovery']
        if o.get('member_after') not in (None, o.get('member_before')):
            text += '; FAILOVER: writes moved from %s to %s' % (o['member_before'],
                                                              o['member_after'])
        out.append(text + '; first error: %s' % o['first_error'])
        parts = _ha_parts(phase, o)
        if parts:
            out.append('%s: the outage at %.2f s, its parts (from its start): %s'
                       % (phase['name'], o['start'], parts))
    for f in phase.get('faults') or ():
        out.append('%s: %s %s' % (phase['name'], 'seen' if f.get('source') else 'fault',
                                  fault_text(f)))
    return out


def verify_lines(v):
    """What --verify found, a line per outcome that matters."""
    if v.get('error'):
        return ['verify: NOT DONE: %s' % v['error']]
    lines = ['verify: %s keys read back: %s intact, %s acknowledged_lost, %s '
             'unacknowledged_applied, %s corrupt, %s unexpected'
             % (_n(v['checked']), _n(v['intact']), _n(v['acknowledged_lost']),
                _n(v['unacknowledged_applied']), _n(v['corrupt']), _n(v['unexpected']))]
    if v['acknowledged_lost']:
        lines.append('verify: ACKNOWLEDGED WRITES LOST, e.g. keys %s'
                     % ', '.join(str(k) for k in v['examples']['acknowledged_lost']))
    for note in v.get('notes', ()):
        lines.append('verify: %s' % note)
    return lines


def to_json(result):
    return json.dumps(result, indent=1, sort_keys=True)


def write_json(result, path):
    text = to_json(result)
    with io.open(path, 'w', encoding='utf-8') as f:
        f.write(text if isinstance(text, type(u'')) else text.decode('utf-8'))


FLAMEGRAPH_KEYS = ('flamegraph', 'server_flamegraph')


def flamegraph_lines(phase, key):
    """A phase's flame graph in a few lines: its samples, the sampler's own CPU (the
    overhead: on another core, not the driver's), the frames most on top, its files."""
    fg = phase.get(key)
    if not fg:
        return []
    side = 'server' if key.startswith('server') else 'client'
    cpu = fg.get('sampler_cpu_share')
    out = ['%s: %s flame graph, %s samples at %s Hz by %s%s' % (
        phase['name'], side, _n(fg['samples']), fg['rate'], fg['sampler'],
        '' if cpu is None else ' (which used %.1f%% of a core)' % (100.0 * cpu))]
    if fg.get('note'):
        out.append('  note: %s' % fg['note'])
    for f in fg['top'][:5]:
        out.append('  %5.1f%% own %5.1f%% incl  %s' % (100.0 * (f['own_share'] or 0),
                                                      100.0 * (f['total_share'] or 0),
                                                      f['frame']))
    if fg.get('libraries'):
        out.append('  own samples by library: ' + libraries.line(fg['libraries']))
    for path in fg['files']:
        out.append('  wrote %s' % path)
    return out


def profile_lines(phase):
    prof = phase.get('profile')
    if not prof:
        return []
    out = ['%s: top functions by own time (%s, %s clock)' % (phase['name'], prof['profiler'],
                                                            prof['clock']),
           '  %9s %6s %10s  %s' % ('own s', 'own %', 'calls', 'function')]
    for f in prof['top']:
        out.append('  %9.4f %5.1f%% %10s  %s  %s:%s' % (
            f['own_seconds'], 100.0 * (f['own_share'] or 0), _n(f['calls']), f['function'],
            f['file'], f['line']))
    if prof.get('libraries'):
        out.append('  own time by library: ' + libraries.line(prof['libraries']))
    if prof.get('greenlets'):
        out.append('  greenlets by time: ' + ', '.join(
            '%s %.3fs%s' % (g['name'], g['seconds'], ' (x%d)' % g['count'] if g['count'] > 1 else '')
            for g in prof['greenlets'][:6]))
    for path in prof['files']:
        out.append('  wrote %s' % path)
    return out
