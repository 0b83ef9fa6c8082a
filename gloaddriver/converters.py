"""argparse converters (``type=``): a flag's text to its value, or one clear error.

A leaf module: the common flags (``config.flags``) and each backend's flag group use
the same converters, so neither reaches into the other for them."""
from __future__ import absolute_import, division, print_function

import argparse
from collections import namedtuple


class WholeFlags(object):
    """An argparse parser mixin that refuses abbreviated long flags (``--green 3`` for
    ``--greenlets 3``) on every interpreter. Flags are typed into scripts and CI files:
    a prefix that matches one flag today matches two, or another one, when a flag is
    added. Python 3.5's ``allow_abbrev=False`` does this, but 2.7's argparse has no such
    switch, so the prefix matches argparse finds are dropped here instead, the same way
    on every interpreter. A short flag with its value attached (``-c8``) is not an
    abbreviation and still parses."""

    def _get_option_tuples(self, option_string):
        found = argparse.ArgumentParser._get_option_tuples(self, option_string)
        chars = self.prefix_chars
        # (The tuples are (action, flag, value) up to 3.12 and (action, flag, sep, value)
        # after: the flag is the second item in both.)
        kept = [t for t in found if len(t[1]) == 2 and t[1][1] not in chars and
                option_string.startswith(t[1])]
        if found and not kept:
            given = option_string.split('=', 1)[0]
            whole = sorted(set(t[1] for t in found))
            named = ' or '.join(whole) if len(whole) <= 3 else '%s, ... (%d flags)' % (
                ', '.join(whole[:3]), len(whole))
            self.error('%s is not a flag: write it whole (%s); abbreviations are refused, '
                       'as a prefix that matches one flag today may match another tomorrow'
                       % (given, named))
        return kept


class WholeFlagsParser(WholeFlags, argparse.ArgumentParser):
    """argparse's parser, refusing abbreviated flags (the subcommands' parsers)."""


def last_value(argv, flag):
    """The text of ``flag`` in a command line as argparse reads it (``--f V`` or
    ``--f=V``; the last one given wins), or None when it is not there."""
    found = None
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            found = argv[i + 1]
        elif a.startswith(flag + '='):
            found = a.split('=', 1)[1]
    return found


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
# With --replicas, an action names its target (kill-leader, stop-replica), and promote
# plays the failover coordinator: the most advanced live replica becomes the leader.
FAULT_TARGETS = ('leader', 'replica')
PROMOTE = 'promote'
# With a private pooler (--pooler), its own target: pooler-restart (or restart-pooler);
# with a private HAProxy (--proxy), proxy-restart.
FAULT_POOLER = 'pooler'
FAULT_PROXY = 'proxy'
FRONTS = (FAULT_POOLER, FAULT_PROXY)
# With --ha patroni: Patroni's switchover, and its DCS (etcd) as a target: dcs-down is
# kill-dcs, dcs-up start-dcs (the backend checks there is a Patroni cluster).
SWITCHOVER = 'switchover'
FAULT_DCS = 'dcs'
_DCS_WORDS = {'dcs-down': 'kill-dcs', 'dcs-up': 'start-dcs'}
Fault = namedtuple('Fault', 'action at duration target')


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


def _fault_action(part, word, replica_set):
    """(action, target) of one ACTION[-TARGET] word (or pooler-ACTION, proxy-ACTION,
    dcs-down, dcs-up, switchover)."""
    word = _DCS_WORDS.get(word, word)
    first, dash, rest = word.partition('-')
    if first in FRONTS and dash:
        word = '%s-%s' % (rest, first)    # pooler-restart is restart-pooler
    action, dash, target = word.partition('-')
    if target in FRONTS + (FAULT_DCS,):
        if action not in FAULT_ACTIONS:
            raise ValueError('--fault %s: the %s takes %s (%s-restart@5s)'
                             % (part, target, ', '.join(sorted(FAULT_ACTIONS)), target))
        return action, target     # whether there is one: the backend's to say
    if word == SWITCHOVER:
        if not replica_set:
            raise ValueError('--fault %s: switchover needs a replica set (--replicas N, '
                             '--ha patroni)' % part)
        return SWITCHOVER, None
    syntax = ('--fault takes ACTION@TIME[:DURATION], comma-separated, with ACTION one of %s%s; '
              'got %r' % (', '.join(sorted(FAULT_ACTIONS)), ' (each may name its target: '
                          'kill-leader, stop-replica), or promote' if replica_set else '', part))
    if word == PROMOTE:
        if not replica_set:
            raise ValueError('--fault %s: promote needs a replica set (--replicas N)' % part)
        return PROMOTE, None
    if action not in FAULT_ACTIONS or (dash and target not in FAULT_TARGETS):
        raise ValueError(syntax)
    if dash and not replica_set:
        raise ValueError('--fault %s: a %s is a member of a replica set (--replicas N); a '
                         'single server is just %s@TIME' % (part, target, action))
    if replica_set:
        return action, target or 'leader'
    return action, None


def faults(text, replica_set=False):
    """'kill@5s,start@8s,stop@12s:3s' -> Faults in time order, checked as a sequence: a
    start needs a killed server, a cont a paused one, and so on. With ``replica_set``
    each action has a target (the leader unless it names one) and promote is one;
    pooler-ACTION acts on a private pooler (``--pooler``: the backend checks there is one)."""
    out = []
    for part in text.split(','):
        part = part.strip()
        if not part:
            continue
        word, sep, when = part.partition('@')
        if not sep:
            raise ValueError('--fault takes ACTION@TIME[:DURATION], comma-separated; got %r'
                             % part)
        action, target = _fault_action(part, word.strip().lower(), replica_set)
        at, _colon, length = when.partition(':')
        length = duration(length) if length else None
        if length is not None and action not in ('stop', 'restart'):
            raise ValueError('--fault %s: only stop and restart take a :DURATION' % part)
        out.append(Fault(action, duration(at), length, target))
    if not out:
        raise ValueError('--fault needs at least one ACTION@TIME, e.g. kill@5s,start@8s')
    out.sort(key=lambda f: f.at)
    _check_sequence(out)
    return tuple(out)


def _check_sequence(faults):
    """Each target's actions make sense in order: a start after a kill, and so on. A
    promotion gives the leader target a live member again; a start-leader after it
    starts the one killed before (as a replica)."""
    state = {}
    for f in _with_automatic(faults):
        if f.action == SWITCHOVER:
            continue
        if f.action == PROMOTE:
            if state.get('leader') == 'down':
                state['leader'] = 'replaced'
            continue
        now = state.get(f.target, 'up')
        need = {'kill': ('up', 'replaced'), 'start': ('down', 'replaced'), 'stop': ('up', 'replaced'),
                'cont': ('paused',), 'restart': ('up', 'replaced')}[f.action]
        if now not in need:
            name = '%s-%s' % (f.action, f.target) if f.target else f.action
            raise ValueError('--fault %s@%gs: the %s is %s then (%s)' % (
                name, f.at, f.target or 'server', 'down' if now == 'replaced' else now,
                FAULT_ACTIONS[f.action]))
        state[f.target] = {'kill': 'down', 'start': 'up', 'stop': 'paused', 'cont': 'up',
                           'restart': 'up'}[f.action]
    return state


def fault_name(f):
    """How --fault names one action: kill-leader, pooler's restart-pooler, promote."""
    return '%s-%s' % (f.action, f.target) if f.target else f.action


def left_down(faults):
    """The faults after which nothing in the schedule brings their target back: a kill
    with no start, a stop with no cont or :DURATION (a promotion brings the writable
    service back, so a leader it replaced is not one)."""
    state = _check_sequence(faults)
    return [f for f in faults if f.action in ('kill', 'stop') and f.duration is None and
            state.get(f.target) in ('down', 'paused') and
            f is [g for g in faults if g.target == f.target][-1]]


def _with_automatic(faults):
    """The sequence with the resumes that stop@T:D implies (for the state check)."""
    seq = []
    for f in faults:
        seq.append(f)
        if f.action == 'stop' and f.duration is not None:
            seq.append(Fault('cont', f.at + f.duration, None, f.target))
    seq.sort(key=lambda f: f.at)
    return seq


# --stages: the load ramps linearly through these, k6 style. ``unit`` says what a target
# counts: 'greenlets' (closed loop) or 'ops/s' (open loop, targets written N/s).
Stage = namedtuple('Stage', 'seconds target')
Stages = namedtuple('Stages', 'unit start stages text')

_STAGES_SYNTAX = ('--stages takes DURATION:TARGET, comma-separated, e.g. 10s:10,30s:100,10s:0 '
                  '(greenlets) or 10s:1000/s,30s:5000/s (ops/s), optionally after a starting '
                  'TARGET (default 0)')


def _target(text, item):
    """'10' -> (10, 'greenlets'); '1500/s' -> (1500.0, 'ops/s')."""
    t = text.strip().lower()
    rate = t.endswith('/s')
    if rate:
        t = t[:-2].strip()
    try:
        value = float(t) if rate else int(t)
    except ValueError:
        raise ValueError('%s; %r is not %s' % (
            _STAGES_SYNTAX, item, 'a rate (N/s)' if rate else 'a whole number of greenlets'))
    if value < 0 or value != value or value == float('inf'):
        raise ValueError('--stages %s: a target must be a number of 0 or more' % item.strip())
    return value, 'ops/s' if rate else 'greenlets'


def stages(text):
    """'10s:10,30s:100,10s:0' -> Stages; an optional first item without a duration is
    the starting target ('5,10s:50' starts at 5). Each stage moves linearly from the
    previous target to its own over its duration."""
    items = [part for part in text.split(',')]
    if not text.strip() or any(not part.strip() for part in items):
        raise ValueError('%s; got %r' % (_STAGES_SYNTAX, text))
    start, units = None, set()
    if ':' not in items[0]:
        start, unit = _target(items[0], items[0])
        units.add(unit)
        items = items[1:]
    out = []
    for item in items:
        length, sep, target = item.partition(':')
        if not sep or not length.strip() or not target.strip():
            raise ValueError('%s; got %r' % (_STAGES_SYNTAX, item.strip()))
        try:
            seconds = duration(length)
        except ValueError as e:
            raise ValueError('--stages %s: %s' % (item.strip(), e))
        if seconds <= 0:
            raise ValueError('--stages %s: a stage must last more than 0 s' % item.strip())
        value, unit = _target(target, item)
        units.add(unit)
        out.append(Stage(seconds, value))
    if not out:
        raise ValueError('%s; got %r: no stage has a duration' % (_STAGES_SYNTAX, text))
    if len(units) > 1:
        raise ValueError('--stages %s: the targets are all greenlets (10) or all rates (1000/s), '
                         'not both' % text)
    unit = units.pop()
    if start is None:
        start = 0.0 if unit == 'ops/s' else 0
    if not start and not any(s.target for s in out):
        raise ValueError('--stages %s: every target is 0, so nothing would run' % text)
    return Stages(unit, start, tuple(out), text.strip())
