"""A process and the processes it started, read from Linux's /proc.

One scan for the two uses: a spawned server's CPU time over a phase (its children
included: PostgreSQL's backends) and the processes a --fault signals.
"""
from __future__ import absolute_import, division, print_function

import os


def family(pid):
    """{pid: stat fields after the command name} of ``pid`` and its live children;
    {} when /proc cannot be read. Field 1 is the parent's pid, 11 and 12 utime and
    stime in clock ticks."""
    out = {}
    try:
        names = [p for p in os.listdir('/proc') if p.isdigit()]
    except OSError:
        return out
    want = str(pid)
    for p in names:
        try:
            with open('/proc/%s/stat' % p) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (IOError, OSError, IndexError):
            continue
        if p == want or fields[1] == want:
            out[int(p)] = fields
    return out


def run_delay():
    """Seconds this process's main thread has been runnable but waiting for a CPU
    (the scheduler's run queue), or None where /proc/self/schedstat is missing.

    The driver's work runs on its main thread (the gevent hub), so this is the time
    the machine's other work took from it."""
    try:
        with open('/proc/self/schedstat') as f:
            return int(f.read().split()[1]) / 1e9
    except (IOError, OSError, IndexError, ValueError):
        return None
