"""Is the client the bottleneck? The warnings a phase raises when its figures may
measure the driver rather than the server.

Two signs, each judged over a whole phase:

- ``client_cpu``: the driver was busy for more than CPU_LIMIT of one core over the
  phase's wall time. Busy is its CPU time plus the time its main thread waited on
  the run queue for a CPU (the machine's other work): either way it was not
  waiting for the server. A gevent driver runs on one core, so near 100 % its
  ops/s and latencies are its own limit (add ``--processes``).
- ``schedule_lag``: an open loop (``--rate``) did less than LAG_LIMIT of its target
  rate: the greenlets or the CPU could not keep the schedule (as wrk2 and
  ``pgbench -R`` report their lag).

A warning is ``{kind, phase, value, limit, message}``; the phase keeps its own in
``warnings`` and the run's result lists them all in ``warnings``.
"""
from __future__ import absolute_import, division, print_function

CPU_LIMIT = 0.9
LAG_LIMIT = 0.9


def _warning(kind, phase, value, limit, message):
    return {'kind': kind, 'phase': phase, 'value': value, 'limit': limit, 'message': message}


def phase_warnings(phase):
    """The warnings of one phase result (it has ``client`` and, open loop, ``rate``)."""
    out = []
    name = phase.get('name')
    load = phase.get('client') or {}
    busy = load.get('busy')
    if busy is not None and busy > CPU_LIMIT:
        waiting = load.get('waiting')
        out.append(_warning(
            'client_cpu', name, busy, CPU_LIMIT,
            '%s: the driver was busy %.0f%% of one core (CPU %.0f%%%s): these figures are '
            'the client\'s limit, not the server\'s; add --processes or greenlets elsewhere'
            % (name, busy * 100, (load.get('cpu') or 0) * 100,
               ', waiting for a CPU %.0f%%: other work on this machine' % (waiting * 100)
               if waiting and waiting >= 0.1 else
               ', waiting for a CPU %.0f%%' % (waiting * 100) if waiting else '')))
    rate = phase.get('rate')
    if rate and rate.get('target') and rate.get('achieved') is not None and \
            not phase.get('stages'):   # under --stages the target moves: no one figure
        share = rate['achieved'] / rate['target']
        if share < LAG_LIMIT:
            out.append(_warning(
                'schedule_lag', name, round(share, 3), LAG_LIMIT,
                '%s: the open loop fell behind its schedule: %d of %d ops/s (%.0f%%), %d ops '
                'started late; the greenlets (--greenlets) or the driver\'s CPU could not '
                'keep up' % (name, rate['achieved'], rate['target'], share * 100,
                             rate.get('late') or 0)))
    return out


def collect(phases):
    """All the phases' warnings, in phase order: the run's ``warnings``."""
    return [w for p in phases for w in (p.get('warnings') or ())]
