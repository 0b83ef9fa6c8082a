"""Exact in-process syscall counts via perf_event_open on syscall tracepoints.

Each counter is a kernel tracepoint (``syscalls:sys_enter_<name>`` or
``raw_syscalls:sys_enter`` for the total) opened for this process with
``inherit`` so threads started later (gevent's resolver pool) are counted.
It costs ~0.3 us per syscall in the kernel and nothing in Python until read.
Inherited counters would also count any process this one starts after they
open: private servers are therefore started by a launcher process that exists
before the counters (``backends/launcher.py``), never by the driver itself.

Where the kernel or its tracefs is not available, ``SyscallCounter.source``
is ``io_calls`` and ``reason`` says why; callers then report the connector's
own send/recv call counts, labelled a lower bound.
"""
from __future__ import absolute_import, division, print_function

import ctypes
import os
import platform
import struct

NETWORK = ('sendto', 'recvfrom', 'sendmsg', 'recvmsg')
NAMES = NETWORK + ('read', 'write', 'epoll_wait', 'epoll_pwait', 'epoll_ctl', 'poll',
                   'getsockopt', 'getpid', 'futex', 'clock_gettime', 'connect', 'brk', 'mmap',
                   'munmap', 'madvise', 'mprotect')
TOTAL = 'total'

_TRACEFS = ('/sys/kernel/tracing', '/sys/kernel/debug/tracing')
_NR_PERF_EVENT_OPEN = {'x86_64': 298, 'aarch64': 241, 'i686': 336, 'i386': 336}
_PERF_TYPE_TRACEPOINT = 2
_FLAG_INHERIT = 1 << 1
_U64 = struct.Struct('Q')


class _Attr(ctypes.Structure):
    # perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): all a counting
    # tracepoint event needs.
    _fields_ = [('type', ctypes.c_uint32), ('size', ctypes.c_uint32),
                ('config', ctypes.c_uint64), ('sample_period', ctypes.c_uint64),
                ('sample_type', ctypes.c_uint64), ('read_format', ctypes.c_uint64),
                ('flags', ctypes.c_uint64), ('wakeup_events', ctypes.c_uint32),
                ('bp_type', ctypes.c_uint32), ('config1', ctypes.c_uint64)]


def tracefs_root():
    for root in _TRACEFS:
        if os.path.exists(os.path.join(root, 'events', 'raw_syscalls')):
            return root
    return None


def _event_id(root, group, name):
    try:
        with open(os.path.join(root, 'events', group, name, 'id')) as f:
            return int(f.read())
    except (IOError, OSError, ValueError):
        return None


class SyscallCounter(object):
    """``snapshot()`` returns {name: count}; ``delta(a, b)`` the counts between two."""

    def __init__(self, enable=True):
        self.fds = {}
        self.source = 'io_calls'
        self.reason = None
        self._snapshots = 0
        if not enable:
            self.reason = 'disabled with --no-syscalls'
            return
        self._open()

    def _open(self):
        nr = _NR_PERF_EVENT_OPEN.get(platform.machine())
        if nr is None:
            self.reason = 'perf_event_open number unknown for %s' % platform.machine()
            return
        root = tracefs_root()
        if root is None:
            self.reason = ('tracefs is not mounted (as root: mount -t tracefs nodev '
                           '/sys/kernel/tracing)')
            return
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
        syscall.restype = ctypes.c_long
        events = [(TOTAL, 'raw_syscalls', 'sys_enter')]
        events += [(n, 'syscalls', 'sys_enter_' + n) for n in NAMES]
        for name, group, event in events:
            eid = _event_id(root, group, event)
            if eid is None:
                continue
            attr = _Attr(type=_PERF_TYPE_TRACEPOINT, size=ctypes.sizeof(_Attr), config=eid,
                         flags=_FLAG_INHERIT)
            fd = syscall(nr, ctypes.byref(attr), ctypes.c_int(0), ctypes.c_int(-1),
                         ctypes.c_int(-1), ctypes.c_ulong(0))
            if fd < 0:
                err = ctypes.get_errno()
                if name == TOTAL:
                    self.reason = 'perf_event_open refused: %s (run as root or lower ' \
                                  'kernel.perf_event_paranoid)' % os.strerror(err)
                    return
                continue
            self.fds[name] = fd
        if TOTAL in self.fds:
            self.source = 'perf_event'

    @property
    def available(self):
        return self.source == 'perf_event'

    def snapshot(self):
        if not self.fds:
            return None
        self._snapshots += 1
        counts = dict((name, _U64.unpack(os.read(fd, 8))[0]) for name, fd in self.fds.items())
        counts['_snapshots'] = self._snapshots
        return counts

    def self_reads(self, before, after):
        """read() calls the counters made from the first snapshot's start to the last's end.

        The counts leave them out; an outside tool (perf stat) enabled just
        before ``before`` sees them: scripts/syscalls adds them back to compare.
        """
        if before is None or after is None:
            return 0
        return len(self.fds) * (after['_snapshots'] - before['_snapshots'] + 1)

    def delta(self, before, after):
        """Counts between two snapshots, minus the reads the snapshots made themselves."""
        if before is None or after is None:
            return None
        # Between reading counter X in one snapshot and in a later one, the
        # snapshots issue exactly len(fds) read() calls per snapshot taken.
        own = len(self.fds) * (after['_snapshots'] - before['_snapshots'])
        out = {}
        for name in self.fds:
            n = after[name] - before[name]
            if name in ('read', TOTAL):
                n -= own
            out[name] = max(n, 0)
        return out

    def close(self):
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}


def per_op(counts, ops):
    """{'per_op': total/op, 'network_per_op': ..., 'by_name': {name: per op}}."""
    if counts is None or not ops:
        return None
    by_name = dict((k, round(v / ops, 4)) for k, v in counts.items() if k != TOTAL and v)
    network = sum(counts.get(k, 0) for k in NETWORK)
    return {'per_op': round(counts.get(TOTAL, 0) / ops, 4),
            'network_per_op': round(network / ops, 4),
            'by_name': by_name}


PERF_CONTROL_ENV = 'GLOADDRIVER_PERF_CTL'


class PerfControl(object):
    """Enables an outside ``perf stat -D -1 --control fifo:CTL,ACK`` per phase.

    Set by scripts/syscalls through $GLOADDRIVER_PERF_CTL="CTL,ACK": perf then
    counts exactly the windows the in-process counters count, so the two can
    be compared number for number. Without the variable, it does nothing.
    """

    def __init__(self, environ=None):
        spec = (environ if environ is not None else os.environ).get(PERF_CONTROL_ENV)
        self.ctl = self.ack = None
        if spec:
            ctl, ack = spec.split(',')
            self.ctl = os.open(ctl, os.O_WRONLY)
            self.ack = os.open(ack, os.O_RDONLY)

    def _say(self, command):
        if self.ctl is not None:
            os.write(self.ctl, command)
            os.read(self.ack, 16)

    def enable(self):
        self._say(b'enable\n')

    def disable(self):
        self._say(b'disable\n')

    def close(self):
        for fd in (self.ctl, self.ack):
            if fd is not None:
                os.close(fd)
        self.ctl = self.ack = None
