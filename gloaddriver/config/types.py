"""Value types for flags (argparse ``type=``), shared by the common flags and the
flag groups of each backend."""
from __future__ import absolute_import, division, print_function

import argparse
from collections import namedtuple


def _number(text, cast, what, minimum, rule):
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not %s' % (text, what))
    if value < minimum:
        raise argparse.ArgumentTypeError('%s, got %s' % (rule, text))
    return value


def positive_int(text):
    return _number(text, int, 'a whole number', 1, 'must be at least 1')


def count(text):
    return _number(text, int, 'a whole number', 0, 'must not be negative')


def seconds(text):
    return _number(text, float, 'a number of seconds', 0, 'must not be negative')


# --fault: what may be done to a spawned server, and whether it takes a duration.
FAULT_ACTIONS = {
    'kill': 'crash it: SIGKILL, every process of the server',
    'start': 'start it again after a kill, on the same port and data',
    'stop': 'pause it (SIGSTOP); with :DURATION it resumes by itself',
    'cont': 'resume a paused server (SIGCONT)',
    'restart': 'kill it and start it again at once (or after :DURATION)',
}
Fault = namedtuple('Fault', 'action at duration')


def duration(text):
    """'10s', '500ms', '1.5', '2m' -> seconds (a bare number is seconds)."""
    t = text.strip().lower()
    for suffix, scale in (('ms', 0.001), ('s', 1.0), ('m', 60.0)):
        if t.endswith(suffix):
            t, factor = t[:-len(suffix)], scale
            break
    else:
        factor = 1.0
    try:
        value = float(t) * factor
    except ValueError:
        raise ValueError('%r is not a time (say 10s, 500ms or 2m)' % text)
    if value < 0:
        raise ValueError('%r: a time must not be negative' % text)
    return value


def faults(text):
    """'kill@5s,start@8s,stop@12s:3s' -> Faults in time order, checked as a sequence: a
    start needs a killed server, a cont a paused one, and so on."""
    out = []
    for part in text.split(','):
        part = part.strip()
        if not part:
            continue
        action, sep, when = part.partition('@')
        action = action.strip().lower()
        if not sep or action not in FAULT_ACTIONS:
            raise ValueError('--fault takes ACTION@TIME[:DURATION], comma-separated, with '
                             'ACTION one of %s; got %r' % (', '.join(sorted(FAULT_ACTIONS)), part))
        at, _colon, length = when.partition(':')
        length = duration(length) if length else None
        if length is not None and action not in ('stop', 'restart'):
            raise ValueError('--fault %s: only stop and restart take a :DURATION' % part)
        out.append(Fault(action, duration(at), length))
    if not out:
        raise ValueError('--fault needs at least one ACTION@TIME, e.g. kill@5s,start@8s')
    out.sort(key=lambda f: f.at)
    state = 'up'
    for f in _with_automatic(out):
        need = {'kill': ('up',), 'start': ('down',), 'stop': ('up',), 'cont': ('paused',),
                'restart': ('up',)}[f.action]
        if state not in need:
            raise ValueError('--fault %s@%gs: the server is %s then (%s)'
                             % (f.action, f.at, state, FAULT_ACTIONS[f.action]))
        state = {'kill': 'down', 'start': 'up', 'stop': 'paused', 'cont': 'up',
                 'restart': 'up'}[f.action]
    return tuple(out)


def _with_automatic(faults):
    """The sequence with the resumes that stop@T:D implies (for the state check)."""
    seq = []
    for f in faults:
        seq.append(f)
        if f.action == 'stop' and f.duration is not None:
            seq.append(Fault('cont', f.at + f.duration, None))
    seq.sort(key=lambda f: f.at)
    return seq
