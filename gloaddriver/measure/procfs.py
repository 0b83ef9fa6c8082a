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
