"""A phase over time: one row per progress interval, as the client saw it.

A row holds counts, not rates: ``t`` (seconds from the phase start to the
row's end), ``seconds`` (its length), ``attempted``, ``ok``, ``errors``
(failed + timed out). All three count the ops that *ended* in the interval, so a
row adds up as the phase does (ok + errors == attempted): an op in flight when a
row closes is in the row where it ends (counting it where it started put ok
above attempted in the next row). Then ``syscalls`` (total, or None without counters),
``latency_us`` (percentiles of the interval's successful ops; with --rate from
the intended start, ``service_time_us`` beside it) and ``histogram``, the
interval's latencies encoded so that rows of processes and shards that ran
together add up exactly. ``ops_per_sec`` is derived. Two more, only where
they say something: ``errors_by_kind`` (``{kind: count}``, in a row with
errors; it sums to ``errors``) and, in a phase of several ops (a mix),
``by_op``: ``{op: {attempted, ok, errors, histogram}}``, whose counts sum to the
row's and whose histogram is the op's latencies of the interval (so that a mix's
latency over time is per op, and still merges exactly; its percentiles are left to
the reports, as an encode is ~10x cheaper than hdrh's percentile walks).
Both are counts, so rows still add up and merge exactly. ``in_flight`` is the ops
begun and not yet finished at the row's end (attempted minus done, read from the
counts the row already takes: nothing is added to the hot loop). Under --stages a row
also has what ``extra(now)`` gives (run.stages: ``target``, ``active``), values as
of the row's end, which a row of two joined neighbours takes from the later one.

The rows of a phase add up to it: the last row closes at the phase's end, so
sum(attempted) and sum(ok) equal the phase's attempted and ok.

A long run does not grow its JSON without bound: past MAX_ROWS rows, each
pair of neighbours becomes one row twice as long, and later ticks fill rows
of that span (the resolution halves; nothing is dropped).
"""
from __future__ import absolute_import, division, print_function

import gevent

from gloaddriver.measure import stats, syscalls
from gloaddriver.measure.window import text

MAX_ROWS = 600
_COUNTS = ('attempted', 'ok', 'errors')
_AT_END = ('target', 'active', 'in_flight')   # values as of a row's end, not counts


class Timeline(object):
    extra = None   # now -> {field: value} more for each row (--stages), or None

    def __init__(self, ops, counter, t0, sys0):
        self.rows = []
        self._ops = ops
        self._counter = counter
        self._span = 1        # ticks per row, doubled at each compaction
        self._filled = 0      # ticks in the last row so far
        self._start = t0
        self._prev = (t0, 0, 0, sys0)   # time, attempted, errors, syscalls at the last row
        self._prev_kinds = {}           # error kind -> count at the last row
        self._prev_ops = dict((st.name, (0, 0)) for st in ops)   # attempted, errors
        self._done_ok = 0     # successful ops so far (rows' ok), for in_flight

    def close_interval(self, now, snapshot):
        """Drain the ops into a new interval ending at ``now``; returns its row.

        ``snapshot`` is a syscall counter snapshot taken at ``now`` (or None).
        """
        t_prev, _att_prev, bad_prev, sys_prev = self._prev
        hist = stats.new_histogram()
        service = None
        by_op = {} if len(self._ops) > 1 else None
        for st in self._ops:
            interval = st.drain()
            hist.add(interval)
            if by_op is not None:
                _a0, e0 = self._prev_ops[st.name]
                a1, e1 = st.attempted, st.failed_total + st.timed_out
                n = interval.get_total_count()
                by_op[st.name] = {'attempted': n + e1 - e0, 'ok': n, 'errors': e1 - e0}
                # Under --rate from the intended start, as the row's own latency.
                _set_histogram(by_op[st.name], st.interval_co if st.interval_co is not None
                               else interval)
                self._prev_ops[st.name] = (a1, e1)
        if self._ops[0].interval_co is not None:
            service, hist = hist, stats.new_histogram()
            for st in self._ops:
                hist.add(st.interval_co)
        att = sum(st.attempted for st in self._ops)
        bad = sum(st.failed_total + st.timed_out for st in self._ops)
        n_ok = (service or hist).get_total_count()
        d = self._counter.delta(sys_prev, snapshot) if snapshot is not None else None
        self._done_ok += n_ok
        # Ended in the interval: those that succeeded (their latencies were just drained)
        # and those that failed or timed out. In flight: started and not yet ended.
        row = {'t': round(now - self._start, 3), 'seconds': round(now - t_prev, 4),
               'attempted': n_ok + bad - bad_prev, 'ok': n_ok, 'errors': bad - bad_prev,
               'syscalls': d[syscalls.TOTAL] if d else None,
               'in_flight': max(att - self._done_ok - bad, 0)}
        if by_op is not None:
            row['by_op'] = by_op
        if bad != bad_prev:
            row['errors_by_kind'] = self._kinds_since_last()
        _set_latency(row, hist, service)
        if self.extra is not None:
            row.update(self.extra(now))
        self._prev = (now, att, bad, snapshot)
        self._append(row)
        return row

    def _kinds_since_last(self):
        now = {}
        for st in self._ops:
            for kind, n in st.failed.items():
                now[kind] = now.get(kind, 0) + n
            if st.timed_out:
                now['timeout'] = now.get('timeout', 0) + st.timed_out
        prev, self._prev_kinds = self._prev_kinds, now
        return dict((k, n - prev.get(k, 0)) for k, n in now.items() if n != prev.get(k, 0))

    def _append(self, row):
        if self.rows and self._filled < self._span:
            self.rows[-1] = combine_consecutive(self.rows[-1], row)
            self._filled += 1
        else:
            self.rows.append(row)
            self._filled = 1
        if len(self.rows) >= MAX_ROWS and self._filled >= self._span:
            rows = []
            for i in range(0, len(self.rows), 2):
                pair = self.rows[i:i + 2]
                # One left over when the count is odd: a compaction cut short (the
                # ticker killed at a yield below as the phase ends) leaves a row more.
                rows.append(combine_consecutive(*pair) if len(pair) == 2 else pair[0])
                # ~1 ms each: let the workers run between them
                gevent.sleep(0)
            self.rows = rows
            self._span *= 2
            self._filled = self._span

    def finish(self, now, snapshot):
        """The last, partial interval; returns the rows."""
        row = self.close_interval(now, snapshot)
        if not (row['attempted'] or row['ok'] or row['errors']) and len(self.rows) > 1 and \
                self.rows[-1] is row:
            # An empty sliver after the last tick, as a row of its own. Once joined into
            # the last row (after a compaction) it only stretches that row to the end.
            self.rows.pop()
        return [with_rate(r) for r in self.rows]


def with_rate(row):
    out = dict(row)
    out['ops_per_sec'] = round(row['attempted'] / row['seconds'], 1) if row['seconds'] > 0 else None
    return out


def _set_latency(row, hist, service=None):
    row['latency_us'] = _summary(hist)
    row['histogram'] = text(hist.encode()) if hist.get_total_count() else None
    if service is not None:
        row['service_time_us'] = _summary(service)
        row['service_histogram'] = text(service.encode()) if service.get_total_count() else None


def _set_histogram(block, hist):
    block['histogram'] = text(hist.encode()) if hist.get_total_count() else None


def _summary(hist):
    out = stats.latency_summary(hist, 0)
    out.pop('mean')   # a row keeps no exact sum; its mean would be the histogram's guess
    return out


def added(encoded):
    """One histogram of several encoded ones (None and empty left out)."""
    hist = stats.new_histogram()
    for e in encoded:
        if e:
            hist.add(stats.decode_histogram(e))
    return hist


def _combine(rows, t, seconds):
    out = {'t': t, 'seconds': seconds}
    for k in _COUNTS:
        out[k] = sum(r[k] for r in rows)
    sc = [r.get('syscalls') for r in rows]
    out['syscalls'] = sum(sc) if all(v is not None for v in sc) else None
    if any('by_op' in r for r in rows):
        out['by_op'] = {}
        for r in rows:
            for name, counts in r.get('by_op', {}).items():
                into = out['by_op'].setdefault(name, dict((k, 0) for k in _COUNTS))
                for k in _COUNTS:
                    into[k] += counts[k]
        for name, into in out['by_op'].items():
            encoded = [r['by_op'][name].get('histogram') for r in rows
                       if name in r.get('by_op', {})]
            if any(encoded):   # rows of older files have counts only
                _set_histogram(into, added(encoded))
    if all('in_flight' in r for r in rows):   # side by side they add; in a row, the last
        out['in_flight'] = sum(r['in_flight'] for r in rows)
    kinds = stats.merge_counts(r.get('errors_by_kind', {}) for r in rows)
    if kinds:
        out['errors_by_kind'] = kinds
    service = None
    if any('service_histogram' in r for r in rows):
        service = added(r.get('service_histogram') for r in rows)
    _set_latency(out, added(r.get('histogram') for r in rows), service)
    return out


def combine_consecutive(a, b):
    """One row for two neighbouring intervals of one run."""
    out = _combine([a, b], b['t'], round(a['seconds'] + b['seconds'], 4))
    for k in _AT_END:
        if k in b:
            out[k] = b[k]
    return out


def merge_concurrent(timelines):
    """Rows of runs that went side by side (processes, shards), matched by position."""
    out = []
    for i in range(max(len(t) for t in timelines) if timelines else 0):
        rows = [t[i] for t in timelines if i < len(t)]
        out.append(with_rate(_combine(rows, max(r['t'] for r in rows),
                                      max(r['seconds'] for r in rows))))
    return out
