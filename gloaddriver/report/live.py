"""Live metrics out, each interval, to the tools a user already watches.

``open(config)`` gives the run's sink, or None when no live output was asked for;
the ticker calls ``sink.interval(phase, row, ops, server)`` as each timeline row
closes and ``close()`` at the end.

Each interval becomes one set of figures (``figures``): for the phase as a whole
and, in a mix, for each op: ops/s, ok/s, errors/s and the interval's counts,
latency percentiles, syscalls per op and errors by kind; beside them the server's
rates and gauges of the same interval. The same figures go out three ways:

* Graphite plaintext lines, ``PREFIX[.shard_I].PHASE.client.OP.METRIC VALUE TIME``
  (``graphite_lines``), over TCP or UDP;
* StatsD lines, ``PREFIX[.shard_I].PHASE.client.OP.METRIC:VALUE|g`` (counts as
  ``|c``) over UDP (``statsd_lines``);
* a Prometheus/OpenMetrics endpoint whose gauges are the last closed interval and
  whose counters are the phase's totals so far (``prometheus_families``), and the
  same families pushed to a Pushgateway each interval (``--prometheus-push``).

The op of a one-op phase is its op (``insert``); a mix has ``all`` for the whole
phase and one block per op, as in the CSV stats file. Formatting is pure and
cheap (once per interval); sending is done by ``live_send``, never by the ticker,
so a dead or slow collector costs a counted drop and nothing else.
"""
from __future__ import absolute_import, division, print_function

import numbers
import re
import time

from gloaddriver import errors
from gloaddriver.py23 import clock
from gloaddriver.measure import client_bound, procfs, stats
from gloaddriver.measure.window import cpu_seconds


def _quantiles():
    """(latency key, Prometheus quantile label) of every percentile the latency blocks
    hold (today's and --percentiles'), then max as quantile 1."""
    return [(key, '%g' % (pct / 100.0)) for key, pct in stats.measured_percentiles()] + \
        [('max', '1')]


_NOT_GAUGES = ('rps', 'counts', 'late', 'server_restarted', 'leader_changed')


def open(config):   # noqa: A001 (the module's one entry point)
    live = config.output.live
    if live is None:
        return None
    from gloaddriver.report import live_send
    return Sink(live, config.load.shard, live_send)


# -- one interval as plain numbers -------------------------------------------------


def _rate(n, seconds):
    return round(n / seconds, 1) if seconds > 0 else None


def _block(op, counts, latency, seconds):
    b = {'op': op, 'attempted': counts['attempted'], 'ok': counts['ok'],
         'errors': counts['errors'], 'latency_us': latency}
    for k in ('attempted', 'ok', 'errors'):
        b[('ops' if k == 'attempted' else k) + '_per_sec'] = _rate(counts[k], seconds)
    return b


def _op_latency(st):
    """An op's latencies of the interval just closed: the timeline drained them into
    ``st.interval`` (under --rate, from the intended start: ``interval_co``, as the
    row's own)."""
    hist = st.interval_co if st.interval_co is not None else st.interval
    out = stats.latency_summary(hist, 0)
    out.pop('mean')
    return out


def figures(phase, row, ops, server):
    """{phase, t, seconds, blocks, server} of one interval.

    ``blocks``: the phase as a whole first (op ``all`` in a mix), then each op of a
    mix, each with its counts, rates and ``latency_us``; the first also has
    ``syscalls_per_op`` and ``errors_by_kind``. ``server``: None, or ``per_sec``
    (the server's rates), ``gauges`` and the flags ``late`` and ``restarted``.
    """
    seconds = row['seconds']
    first = _block(ops[0].name if len(ops) == 1 else 'all', row, row['latency_us'], seconds)
    n = row['attempted']
    first['syscalls_per_op'] = round(row['syscalls'] / n, 4) \
        if row.get('syscalls') is not None and n else None
    first['errors_by_kind'] = dict(row.get('errors_by_kind') or {})
    blocks = [first]
    by_op = row.get('by_op')
    if by_op:
        for st in ops:
            if st.name in by_op:
                blocks.append(_block(st.name, by_op[st.name], _op_latency(st), seconds))
    out = {'phase': phase, 't': row['t'], 'seconds': seconds, 'blocks': blocks,
           'server': None}
    if server is not None:
        gauges = dict((k, v) for k, v in server.items()
                      if k not in _NOT_GAUGES and isinstance(v, numbers.Number) and
                      not isinstance(v, bool))
        out['server'] = {'per_sec': dict(server.get('rps') or {}), 'gauges': gauges,
                         'late': bool(server.get('late')),
                         'restarted': bool(server.get('server_restarted'))}
    return out


class Totals(object):
    """The phase's counts so far, from the rows sent (counters for Prometheus, and the
    error kinds a phase has shown, sent as 0 in its later clean intervals)."""

    def __init__(self):
        self.ops = None
        self.by_block = {}
        self.kinds = {}

    def add(self, fig, ops):
        if ops is not self.ops:   # a new phase (even one of the same name): from zero
            self.ops, self.by_block, self.kinds = ops, {}, {}
        for b in fig['blocks']:
            t = self.by_block.setdefault(b['op'], {'attempted': 0, 'ok': 0, 'errors': 0})
            for k in t:
                t[k] += b[k]
            b['total'] = dict(t)
        first = fig['blocks'][0]
        for kind, n in first['errors_by_kind'].items():
            self.kinds[kind] = self.kinds.get(kind, 0) + n
        for kind in self.kinds:
            first['errors_by_kind'].setdefault(kind, 0)
        first['total']['errors_by_kind'] = dict(self.kinds)
        return fig


# -- formats -----------------------------------------------------------------------

_UNSAFE = re.compile(r'[^A-Za-z0-9_-]')


def element(text):
    """A name as one element of a dotted metric path (``server:3`` -> ``server_3``)."""
    return _UNSAFE.sub('_', u'%s' % text) or '_'


def number(v):
    """A value as Graphite and StatsD read it: integers whole, others to 4 decimals
    (the shortest text of the rounded float, the same on 2.7 and 3.x)."""
    if isinstance(v, bool):
        return '1' if v else '0'
    if isinstance(v, numbers.Integral):
        return '%d' % v
    text = repr(round(float(v), 4))
    return text[:-2] if text.endswith('.0') else text


def base_path(prefix, shard):
    """PREFIX, or PREFIX.shard_I for shard I of a --shard or --processes run."""
    return prefix if not shard else '%s.shard_%d' % (prefix, shard[0])


def _metrics(fig):
    """(path under PREFIX.PHASE, value, is a count) of every figure that has a value."""
    out = []
    for b in fig['blocks']:
        op = 'client.%s.' % element(b['op'])
        for k in ('ops_per_sec', 'ok_per_sec', 'errors_per_sec'):
            if b[k] is not None:
                out.append((op + k, b[k], False))
        for k in ('attempted', 'ok', 'errors'):
            out.append((op + k, b[k], True))
        for p, _q in _quantiles():
            if b['latency_us'].get(p) is not None:
                out.append((op + 'latency_us.' + p, b['latency_us'][p], False))
        if b.get('syscalls_per_op') is not None:
            out.append((op + 'syscalls_per_op', b['syscalls_per_op'], False))
        for kind, n in sorted((b.get('errors_by_kind') or {}).items()):
            out.append((op + 'errors_by_kind.' + element(kind), n, True))
    for k, v in sorted((fig.get('driver') or {}).items()):
        if v is not None:
            out.append(('driver.' + k, v, False))
    s = fig['server']
    if s is not None:
        for name, v in sorted(s['per_sec'].items()):
            out.append(('server.per_sec.' + element(name), v, False))
        for name, v in sorted(s['gauges'].items()):
            out.append(('server.' + element(name), v, False))
        out.append(('server.sample_late', s['late'], False))
        out.append(('server.restarted', s['restarted'], False))
    return out


def graphite_lines(fig, base, timestamp):
    """Carbon plaintext: one ``path value timestamp`` line per figure."""
    head = '%s.%s.' % (base, element(fig['phase']))
    ts = int(timestamp)
    return ''.join('%s%s %s %d\n' % (head, path, number(v), ts) for path, v, _c in _metrics(fig))


def statsd_lines(fig, base):
    """StatsD: counts of the interval as counters (``|c``), everything else as gauges."""
    head = '%s.%s.' % (base, element(fig['phase']))
    return ''.join('%s%s:%s|%s\n' % (head, path, number(v), 'c' if count else 'g')
                   for path, v, count in _metrics(fig))


def prometheus_name(prefix):
    return re.sub(r'[^A-Za-z0-9_]', '_', prefix)


def prometheus_families(fig, prefix, shard):
    """prometheus_client metric families of one interval (gauges) and of the phase so
    far (counters). Labels: phase and op (plus shard); latency in seconds, with the
    quantile as a label (``1`` is the interval's max)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    name = prometheus_name(prefix) + '_'
    extra = [('shard', '%d' % shard[0])] if shard else []
    phase = fig['phase']
    fams = []

    def family(cls, metric, text, labels, samples):
        f = cls(name + metric, text, labels=[k for k, _v in extra] + labels)
        for values, v in samples:
            f.add_metric([v2 for _k, v2 in extra] + list(values), v)
        fams.append(f)

    blocks = fig['blocks']
    per_op = ['phase', 'op']
    for key, metric, what in (('ops_per_sec', 'client_ops_per_second', 'attempted'),
                              ('ok_per_sec', 'client_ok_per_second', 'successful'),
                              ('errors_per_sec', 'client_errors_per_second',
                               'failed or timed-out')):
        family(GaugeMetricFamily, metric, 'ops %s per second in the last interval' % what,
               per_op, [((phase, b['op']), b[key]) for b in blocks if b[key] is not None])
    family(GaugeMetricFamily, 'client_latency_seconds',
           'latency of the successful ops of the last interval (quantile 1: the max)',
           per_op + ['quantile'],
           [((phase, b['op'], q), b['latency_us'][p] / 1e6) for b in blocks
            for p, q in _quantiles() if b['latency_us'].get(p) is not None])
    family(GaugeMetricFamily, 'client_syscalls_per_op',
           'system calls of the driver process per op in the last interval', per_op,
           [((phase, b['op']), b['syscalls_per_op']) for b in blocks
            if b.get('syscalls_per_op') is not None])
    driver = fig.get('driver') or {}
    for key, text in (('busy', 'CPU time plus time waiting for a CPU'), ('cpu', 'CPU time')):
        family(GaugeMetricFamily, 'driver_%s_cores' % key, "the driver process's %s in the "
               "last interval, in cores" % text, ['phase'],
               [((phase,), driver[key])] if driver.get(key) is not None else [])
    family(GaugeMetricFamily, 'driver_client_bound', '1 when the driver was busy more than '
           '%.0f%% of one core in the last interval: its figures are the client\'s limit'
           % (client_bound.CPU_LIMIT * 100), ['phase'],
           [((phase,), driver['client_bound'])] if 'client_bound' in driver else [])
    family(GaugeMetricFamily, 'interval_seconds', 'length of the last interval', ['phase'],
           [((phase,), fig['seconds'])])
    family(GaugeMetricFamily, 'phase_elapsed_seconds',
           'seconds from the phase start to the end of the last interval', ['phase'],
           [((phase,), fig['t'])])
    for key, metric, what in (('attempted', 'client_ops', 'attempted'),
                              ('ok', 'client_ok', 'successful'),
                              ('errors', 'client_errors', 'failed or timed-out')):
        family(CounterMetricFamily, metric, 'ops %s in the phase so far' % what, per_op,
               [((phase, b['op']), b['total'][key]) for b in blocks if 'total' in b])
    kinds = blocks[0].get('total', {}).get('errors_by_kind') or {}
    family(CounterMetricFamily, 'client_errors_by_kind', 'failed or timed-out ops by kind '
           'in the phase so far', per_op + ['kind'],
           [((phase, blocks[0]['op'], k), n) for k, n in sorted(kinds.items())])
    s = fig['server']
    if s is not None:
        family(GaugeMetricFamily, 'server_per_second',
               "the server's own counters per second in the last interval", ['phase', 'counter'],
               [((phase, k), v) for k, v in sorted(s['per_sec'].items())])
        for k, v in sorted(s['gauges'].items()):
            family(GaugeMetricFamily, 'server_' + prometheus_name(k),
                   "the server's %s at the end of the last interval" % k, ['phase'],
                   [((phase,), v)])
        family(GaugeMetricFamily, 'server_sample_late',
               '1 when the server did not answer the last sample in time', ['phase'],
               [((phase,), int(s['late']))])
        family(GaugeMetricFamily, 'server_restarted',
               '1 when a server counter went backwards in the last interval', ['phase'],
               [((phase,), int(s['restarted']))])
    return fams


# -- the sink ----------------------------------------------------------------------


class Sink(object):
    """Fans each interval out to the collectors asked for; never blocks, never raises
    into the ticker (which also watches for outages)."""

    def __init__(self, live, shard, send):
        self.prefix = live.prefix
        self.shard = shard
        self.base = base_path(live.prefix, shard)
        self.totals = Totals()
        self.latest = None
        self.failures = 0
        self.first_failure = None
        # (clock, CPU seconds, run-queue seconds) at the last interval
        self._load = (clock(), cpu_seconds(), procfs.run_delay())
        self.outputs = []
        try:
            if live.graphite is not None:
                self.graphite = send.Sender('graphite', live.graphite)
                self.outputs.append(self.graphite)
            else:
                self.graphite = None
            if live.statsd is not None:
                self.statsd = send.Sender('statsd', live.statsd)
                self.outputs.append(self.statsd)
            else:
                self.statsd = None
            if live.prometheus is not None:
                self.prometheus = send.PrometheusEndpoint(live.prometheus, self._families)
                self.outputs.append(self.prometheus)
            else:
                self.prometheus = None
            self.push = None
            if live.push is not None:
                import socket
                grouping = {'instance': socket.gethostname()}
                if shard:
                    grouping['shard'] = '%d' % shard[0]
                self.push = send.PrometheusPush(live.push, prometheus_name(live.prefix),
                                                grouping)
                self.outputs.append(self.push)
        except BaseException:
            self.close(quiet=True)
            raise
        for o in self.outputs:
            why = o.connect_now() if hasattr(o, 'connect_now') else None
            if why:
                errors.say('note: %s: %s; the run goes on, and what cannot be sent is '
                           'counted' % (o, why))

    def _families(self):
        fig = self.latest
        return prometheus_families(fig, self.prefix, self.shard) if fig is not None else []

    def interval(self, phase, row, ops, server):
        try:
            fig = self.totals.add(figures(phase, row, ops, server), ops)
            fig['driver'] = self._driver_load()
            self.latest = fig
            now = time.time()
            if self.graphite is not None:
                self.graphite.put(graphite_lines(fig, self.base, now).encode('utf-8'))
            if self.statsd is not None:
                self.statsd.put(statsd_lines(fig, self.base).encode('utf-8'))
            if self.push is not None:
                self.push.put(fig['phase'], prometheus_families(fig, self.prefix, self.shard))
        except Exception as e:   # a bug here must not stop the ticker: counted, said at the end
            self.failures += 1
            if self.first_failure is None:
                self.first_failure = '%s: %s' % (e.__class__.__name__, e)

    def _driver_load(self):
        """This process's load since the last interval, in cores (as client_bound judges
        a phase): ``busy``, ``cpu``, ``waiting`` and ``client_bound`` (0 or 1)."""
        now = (clock(), cpu_seconds(), procfs.run_delay())
        prev, self._load = self._load, now
        if prev is None or now[0] <= prev[0]:
            return {}
        span = now[0] - prev[0]
        cpu = (now[1] - prev[1]) / span
        waiting = (now[2] - prev[2]) / span if now[2] is not None and prev[2] is not None \
            else None
        busy = cpu + (waiting or 0)
        return {'cpu': round(cpu, 3), 'waiting': round(waiting, 3) if waiting is not None
                else None, 'busy': round(busy, 3),
                'client_bound': int(busy > client_bound.CPU_LIMIT)}

    def step(self, find_max):
        """--find-max steps are in the rows already sent (each step is a phase)."""

    def close(self, quiet=False):
        notes = [o.close() for o in self.outputs]
        if self.failures:
            notes.append('live metrics: %d interval(s) not formatted (a bug: %s)'
                         % (self.failures, self.first_failure))
        if not quiet:
            for n in notes:
                if n:
                    errors.say('note: ' + n)
        return [n for n in notes if n]
