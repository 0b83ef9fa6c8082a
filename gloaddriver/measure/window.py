"""The measured window of a phase, and the blocks read from it.

``Window`` reads the clock, CPU, syscall and connector counters at a phase's start
and end; ``client_load``, ``syscall_block`` and ``batching`` turn its readings into
the result's ``client``, ``syscalls`` and ``batching`` blocks. The phase's result
itself is recorded, merged and serialized in measure.phase_result.
"""
from __future__ import absolute_import, division, print_function

import resource
import time

from gloaddriver.py23 import clock
from gloaddriver.measure import procfs, syscalls

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
        # Wall time too: shards' windows are compared across hosts (gloaddriver merge).
        self.wall0 = time.time()
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
