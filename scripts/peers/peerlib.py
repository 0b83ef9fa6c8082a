"""What every peer adapter shares: its arguments, the workload's keys and values,
the per-phase measurement (wall time, client CPU, network syscalls, and each op's
latency: median, p95, p99) and the IPROTO login scramble.

Standard library only (and gloaddriver's list of the syscalls it counts, itself
standard library only), one source for 2.7 and 3.x, so the gevent peers on 2.7 and
the asyncio peers on 3.x measure alike. Syscalls are counted the way gloaddriver
counts its own, on the same tracepoints: perf_event_open on the kernel's syscall
tracepoints, for this process (or another one, by pid: pgbench), exact.
"""
from __future__ import absolute_import, division, print_function

import base64
import ctypes
import hashlib
import json
import os
import platform
import resource
import string
import struct
import sys
import time

NETWORK = ('sendto', 'recvfrom', 'sendmsg', 'recvmsg', 'read', 'write', 'readv', 'writev')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from gloaddriver.measure.syscalls import NAMES as DRIVER_NAMES  # noqa: E402  (stdlib only)
_NR = {'x86_64': 298, 'aarch64': 241}
_U64 = struct.Struct('Q')
OPS = ('insert', 'select', 'update', 'delete')
# False (bench-peers --no-syscalls, told to each adapter by its arguments): no counters.
# A counter on the syscall tracepoints puts every syscall of the process on the kernel's
# slow path, a cost per syscall: it weighs on a client making one or two per op
# (asynctnt's 1.1 at 100 tasks) more than on one making 0.05 (gloaddriver's).
COUNT_SYSCALLS = True
# The clock an adapter times each op with: monotonic and cheap (a vDSO call on 3.x;
# 2.7, for gtarantool alone, has only time.time, microseconds, fine for a phase).
now = getattr(time, 'perf_counter', time.time)


class _Attr(ctypes.Structure):
    _fields_ = [('type', ctypes.c_uint32), ('size', ctypes.c_uint32),
                ('config', ctypes.c_uint64), ('sample_period', ctypes.c_uint64),
                ('sample_type', ctypes.c_uint64), ('read_format', ctypes.c_uint64),
                ('flags', ctypes.c_uint64), ('wakeup_events', ctypes.c_uint32),
                ('bp_type', ctypes.c_uint32), ('config1', ctypes.c_uint64)]


def _tracefs():
    for root in ('/sys/kernel/tracing', '/sys/kernel/debug/tracing'):
        if os.path.isdir(os.path.join(root, 'events', 'raw_syscalls')):
            return root
    return None


class Syscalls(object):
    """Counters of all syscalls and of the network ones, for ``pid`` (0: this process)
    and the threads it starts. ``snapshot()`` is None where they cannot be opened.

    read/write/readv/writev are counted with the network calls because uvloop's
    streams use them for socket I/O where gevent and asyncio use recv/send: in a
    load driver's phase nearly all of them are socket I/O.
    """

    def __init__(self, pid=0):
        self.fds = {}
        root = _tracefs()
        nr = _NR.get(platform.machine())
        if root is None or nr is None or not COUNT_SYSCALLS:
            return
        syscall = ctypes.CDLL(None, use_errno=True).syscall
        syscall.restype = ctypes.c_long
        # The events gloaddriver opens for itself, and the network ones it does not:
        # a counter costs each syscall it counts and each context switch something, so
        # every client carries the same instrument, or the one that counts more pays
        # more (about 3 us per op at one request in flight here).
        names = DRIVER_NAMES + tuple(n for n in NETWORK if n not in DRIVER_NAMES)
        events = [('total', 'raw_syscalls/sys_enter')] + [
            (n, 'syscalls/sys_enter_' + n) for n in names]
        for name, path in events:
            try:
                with open(os.path.join(root, 'events', path, 'id')) as f:
                    eid = int(f.read())
            except (IOError, OSError, ValueError):
                continue
            attr = _Attr(type=2, size=ctypes.sizeof(_Attr), config=eid, flags=1 << 1)
            fd = syscall(nr, ctypes.byref(attr), ctypes.c_int(pid), ctypes.c_int(-1),
                         ctypes.c_int(-1), ctypes.c_ulong(0))
            if fd >= 0:
                self.fds[name] = fd

    def snapshot(self):
        if 'total' not in self.fds:
            return None
        return dict((n, _U64.unpack(os.read(fd, 8))[0]) for n, fd in self.fds.items())

    def delta(self, a, b):
        if a is None or b is None:
            return None
        # Reading the counters is itself len(fds) read() calls per snapshot.
        out = dict((n, b[n] - a[n]) for n in a)
        out['read'] = out.get('read', 0) - len(self.fds)
        out['total'] -= len(self.fds)
        return out


def values(size):
    """gloaddriver's values: key k gets values[k % 100], text."""
    chars = u'' + string.printable if sys.version_info[0] > 2 else string.printable.decode('ascii')
    return [chars[i % 100] * size for i in range(100)]


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)   # microseconds, where os.times() has 10 ms
    return r.ru_utime + r.ru_stime


def latency_us(samples):
    """Median, p95 and p99 of op times (seconds), in microseconds; None when none."""
    if not samples:
        return None
    xs = sorted(samples)
    n = len(xs)

    def q(f):
        return xs[min(n - 1, int(f * n))] * 1e6
    return {'p50': q(0.5), 'p95': q(0.95), 'p99': q(0.99)}


def chap_sha1(greeting, password):
    """The chap-sha1 scramble of ``password`` for the salt in Tarantool's greeting."""
    salt = base64.b64decode(greeting[64:108])[:20]
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(h1).digest()
    return bytes(bytearray(a ^ b for a, b in zip(
        bytearray(h1), bytearray(hashlib.sha1(salt + h2).digest()))))


class Phase(object):
    """Measures one phase: ``start()``, run the ops, ``stop(ops, errors)`` -> a result dict."""

    def __init__(self, name, counter):
        self.name = name
        self.counter = counter

    def start(self):
        self.s0 = self.counter.snapshot()
        self.c0 = cpu()
        self.t0 = time.time()

    def stop(self, ops, errors=0, latencies=None):
        """``latencies``: each op's time in seconds (``now()`` before and after)."""
        seconds = time.time() - self.t0
        cpu_s = cpu() - self.c0
        counts = self.counter.delta(self.s0, self.counter.snapshot())
        net = None if counts is None else sum(counts.get(n, 0) for n in NETWORK)
        return {'name': self.name, 'ops': ops, 'errors': errors, 'seconds': seconds,
                'ops_per_sec': ops / seconds if seconds else 0.0,
                'cpu_us_per_op': cpu_s * 1e6 / ops if ops else None,
                'network_per_op': None if net is None else net / ops,
                'syscalls_per_op': None if counts is None else counts['total'] / ops,
                'syscalls': counts, 'latency_us': latency_us(latencies)}


def args():
    """The adapter's arguments: one JSON object in argv[1]."""
    global COUNT_SYSCALLS
    a = json.loads(sys.argv[1])
    COUNT_SYSCALLS = a.get('syscalls', True)
    return a


def emit(phases, **extra):
    out = dict(extra, phases=phases)
    sys.stdout.write(json.dumps(out) + '\n')
    sys.stdout.flush()
