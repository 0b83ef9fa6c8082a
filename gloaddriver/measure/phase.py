"""The one place a phase's result block is shaped (and the window it is measured in).

A phase result is the same dict whoever made it: the runner from its per-op
stats, a self-driving backend (the bulk loader) from its own counts, and
``gloaddriver merge`` / ``--processes`` from the parts of shards that ran
together. The JSON contract is report/result.schema.json (docs/result.md).
"""
from __future__ import absolute_import, division, print_function

import resource

from gloaddriver.py23 import clock
from gloaddriver.measure import client_bound, procfs, stats, syscalls

LATE_AFTER = 0.001   # an open-loop op that starts more than 1 ms behind schedule is late
CONNECTION_KEYS = ('reconnects', 'late', 'outage_seconds', 'requests', 'schema_fetches')


def cpu_seconds():
    """user+sys CPU of this process; getrusage has microsecond resolution, os.times()
    ticks in 10 ms."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Window(object):
    """The measured window of a phase: clock, CPU, syscall and connector counters,
    read at ``open()`` and ``close()`` in the order that keeps each reading out of
    the others' figures."""

    def __init__(self, counter, io_counts=None):
        self.counter = counter
        self._io = io_counts or (lambda: None)

    def open(self):
        self.sys0 = self.counter.snapshot()
        self.io0 = self._io()
        self.cpu0 = cpu_seconds()
        self.wait0 = procfs.run_delay()
        self.t0 = clock()
        return self

    def close(self):
        self.t1 = clock()
        self.cpu = cpu_seconds() - self.cpu0
        wait1 = procfs.run_delay()
        self.waited = wait1 - self.wait0 if wait1 is not None and self.wait0 is not None \
            else None
        self.sys1 = self.counter.snapshot()
        self.io = _delta(self.io0, self._io())
        self.seconds = self.t1 - self.t0
        self.syscalls = self.counter.delta(self.sys0, self.sys1)
        return self


def counts(attempted, ok, failed, timed_out, samples, misses, seconds, hist, sum_us,
           checksum=0, origins=None):
    """Counts, rates and latencies: the block every phase and every op of a mix has.

    ``failed`` is {error kind: count}; ``hist`` the HdrHistogram of the ok ops;
    ``origins`` {error kind: FILE:LINE} where the first of a client error was raised."""
    errors = dict(failed)
    if timed_out:
        errors['timeout'] = timed_out
    return {
        'attempted': attempted, 'ok': ok, 'failed': sum(failed.values()),
        'timed_out': timed_out, 'errors': errors, 'error_samples': samples,
        'error_origins': dict(origins or {}),
        'misses': misses, 'seconds': round(seconds, 4),
        'ops_per_sec': round(attempted / seconds, 1) if seconds > 0 else None,
        'ok_per_sec': round(ok / seconds, 1) if seconds > 0 else None,
        'latency_us': stats.latency_summary(hist, sum_us),
        'histogram': text(hist.encode()),
        'checksum': '%016x' % (checksum % (1 << 64)),
    }


def _ops_counts(ops, seconds, hist, sum_us):
    samples, origins = {}, {}
    for st in ops:
        for k, v in st.samples.items():
            samples.setdefault(k, v)
        for k, v in st.origins.items():
            origins.setdefault(k, v)
    return counts(sum(st.attempted for st in ops), hist.get_total_count(),
                  stats.merge_counts(st.failed for st in ops), sum(st.timed_out for st in ops),
                  samples, sum(st.misses for st in ops), seconds, hist, sum_us,
                  sum(st.checksum for st in ops), origins)


def from_ops(name, ops, window, reason, rate=None, excluded=()):
    """A phase's result from its per-op stats (gloaddriver.measure.stats.OpStats).

    ``rate`` is (target, arrival, latency_limit) of an open-loop phase; ``excluded``
    names syscalls that are not the client's (a profiler's clock reads)."""
    hist = stats.new_histogram()
    for st in ops:
        hist.add(st.hist)
    res = _ops_counts(ops, window.seconds, hist, sum(st.sum_us for st in ops))
    res['name'] = name
    res['cpu_us_per_op'] = per_op_us(window.cpu, res['attempted'])
    res['client'] = client_load(window)
    res['syscalls'] = syscall_block(window.syscalls, window.io, res['attempted'], reason,
                                    excluded)
    res['batching'] = batching(window.syscalls, window.io, res['attempted'])
    if len(ops) > 1:
        res['ops'] = dict((st.name, _ops_counts([st], window.seconds, st.hist, st.sum_us))
                          for st in ops)
    if rate is not None:
        _open_loop(res, ops, window.seconds, rate)
    if window.io:
        res['connection'] = dict((k, window.io[k]) for k in CONNECTION_KEYS if k in window.io)
    res['warnings'] = client_bound.phase_warnings(res)
    return res


def client_load(window):
    """How busy the driver was over a window, in fractions of one core: ``cpu``
    (user+sys of the whole process), ``waiting`` (its main thread runnable, waiting
    for a CPU; None where the kernel does not say) and ``busy``, their sum."""
    if window.seconds <= 0:
        return {'cpu': None, 'waiting': None, 'busy': None}
    cpu = window.cpu / window.seconds
    waited = getattr(window, 'waited', None)   # a window of parts (merge tests) has none
    waiting = waited / window.seconds if waited is not None else None
    return {'cpu': round(cpu, 3), 'waiting': round(waiting, 3) if waiting is not None else None,
            'busy': round(cpu + (waiting or 0), 3)}


def per_op_us(cpu, attempted):
    return round(cpu * 1e6 / attempted, 2) if attempted else None


def _open_loop(res, ops, seconds, rate):
    """With --rate: latency_us/histogram become CO-corrected; service time kept apart."""
    target, arrival, latency_limit = rate
    co = stats.new_histogram()
    for st in ops:
        co.add(st.hist_co)
    res['service_time_us'] = res['latency_us']
    res['service_histogram'] = res['histogram']
    res['latency_us'] = stats.latency_summary(co, sum(st.sum_co for st in ops))
    res['histogram'] = text(co.encode())
    dropped = sum(st.dropped for st in ops)
    res['rate'] = {
        'target': target, 'arrival': arrival,
        'achieved': round(res['attempted'] / seconds, 1) if seconds > 0 else None,
        'late': sum(st.late for st in ops), 'late_after_ms': LATE_AFTER * 1000,
        'dropped': dropped, 'scheduled': res['attempted'] + dropped,
        'latency_limit_ms': latency_limit * 1000 if latency_limit else None,
    }
    if 'ops' in res:
        for st in ops:
            sub = res['ops'][st.name]
            sub['service_time_us'] = sub['latency_us']
            sub['service_histogram'] = sub['histogram']
            sub['latency_us'] = stats.latency_summary(st.hist_co, st.sum_co)
            sub['histogram'] = text(st.hist_co.encode())


def syscall_block(sysd, iod, attempted, reason, excluded=()):
    """Syscalls per op: exact perf_event counts, else the connector's socket calls
    (a lower bound), else None with the reason."""
    if sysd is not None:
        dropped = {}
        if excluded:
            sysd = dict(sysd)
            for name in excluded:
                dropped[name] = sysd.pop(name, 0)
            sysd[syscalls.TOTAL] = max(sysd.get(syscalls.TOTAL, 0) - sum(dropped.values()), 0)
        block = syscalls.per_op(sysd, attempted) or {'per_op': None, 'by_name': {}}
        block['source'] = 'perf_event'
        block['counts'] = sysd
        if dropped:
            block['excluded'] = dropped
        return block
    if iod and attempted:
        calls = iod['sends'] + iod['recvs']
        return {'source': 'io_calls', 'lower_bound': True, 'reason': reason,
                'per_op': round(calls / attempted, 4),
                'network_per_op': round(calls / attempted, 4),
                'by_name': {'send': round(iod['sends'] / attempted, 4),
                            'recv': round(iod['recvs'] / attempted, 4)}}
    return {'source': None, 'reason': reason, 'per_op': None, 'by_name': {}}


def batching(sysd, iod, attempted):
    """Requests per send and responses per receive: the connector's own counts, else
    the send/recv syscalls."""
    if iod and iod.get('sends'):
        return {'source': 'connector',
                'requests_per_send': round(iod['requests'] / iod['sends'], 2),
                'responses_per_recv': round(iod['responses'] / iod['recvs'], 2)
                if iod.get('recvs') else None}
    if sysd and attempted:
        sends = sum(sysd.get(k, 0) for k in ('sendto', 'sendmsg'))
        recvs = sum(sysd.get(k, 0) for k in ('recvfrom', 'recvmsg'))
        return {'source': 'perf_event',
                'requests_per_send': round(attempted / sends, 2) if sends else None,
                'responses_per_recv': round(attempted / recvs, 2) if recvs else None}
    return {'source': None, 'requests_per_send': None, 'responses_per_recv': None}


def _delta(a, b):
    if a is None or b is None:
        return None
    return dict((k, b[k] - a[k]) for k in b)


def text(value):
    """An encoded histogram as text (bytes on 3.x)."""
    return value.decode('ascii') if isinstance(value, bytes) else value
