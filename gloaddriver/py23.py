"""The few helpers that let one source run on CPython 2.7 and 3.x.

Kept deliberately tiny (no six): text/bytes types, a monotonic clock, named
greenlets. Everything else is written in the common subset of both languages.
"""
from __future__ import absolute_import, division, print_function

import sys
import time

PY2 = sys.version_info[0] == 2

if PY2:  # pragma: no cover - exercised by the 2.7 test run
    text_type = unicode  # noqa: F821
    binary_type = str
    # 2.7 has no monotonic clock in the stdlib; time.time() is a vDSO
    # gettimeofday, as cheap as it gets, and a run is too short for NTP steps
    # to matter much. The manifest names the clock so nobody is misled.
    clock = time.time
    CLOCK_NAME = 'time.time'
else:
    text_type = str
    binary_type = bytes
    clock = time.perf_counter
    CLOCK_NAME = 'time.perf_counter'


def to_text(value, encoding='utf-8'):
    """Decode bytes to text; text passes through unchanged."""
    if isinstance(value, binary_type):
        return value.decode(encoding)
    return value


def spawn_named(name, fn, *args):
    """gevent.spawn with a name, so profiles and tracebacks say what runs.

    Names look like ``worker-7`` or ``tarantool-0-sweeper``.
    """
    import gevent
    g = gevent.Greenlet(fn, *args)
    g.name = name
    g.start()
    return g
