"""``--find-max`` and its --find-max-* flags checked into a FindMax, or ConfigError in
one line before the first op. The objective is parsed by ``config/fail_if.py``, the
search runs in ``run/find_max.py``.
"""
from __future__ import absolute_import, division, print_function

from collections import namedtuple

from gloaddriver import errors, workload
from gloaddriver.config import fail_if
from gloaddriver.config.flags import (FIND_MAX_RESOLUTION, FIND_MAX_START, FIND_MAX_STEP,
                                      FIND_MAX_STEPS, FIND_MAX_WARMUP)

# conditions: fail_if's dicts; resolution: a fraction (0.05); step, warmup: seconds.
DEFAULT_KEYS = 100000   # --keys when neither it nor --ops is given (--find-max sets no --ops)
FindMax = namedtuple('FindMax', 'conditions start step warmup resolution max_steps')

_OWN = (('find_max_start', '--find-max-start'), ('find_max_step', '--find-max-step'),
        ('find_max_warmup', '--find-max-warmup'),
        ('find_max_resolution', '--find-max-resolution'), ('find_max_steps', '--find-max-steps'))


def check_flags(args):
    """The flags --find-max excludes or needs, judged before the phases are made. It
    sets --ops to no limit: each step's window ends it."""
    if args.find_max is None:
        for dest, flag in _OWN:
            if getattr(args, dest) is not None:
                raise errors.ConfigError('%s goes with --find-max CONDITIONS' % flag)
        return
    for bad, flag, why in (
            (args.rate is not None, '--rate', 'the search sets the rate of each step'),
            (args.stages is not None, '--stages', 'the search sets the rate of each step'),
            (args.duration, '--duration', 'each step lasts --find-max-step'),
            (args.ops is not None, '--ops', 'each step lasts --find-max-step'),
            (args.repeat > 1, '--repeat', 'run the search again instead'),
            (args.verify, '--verify', 'the steps\' warm-ups write what no ledger records'),
            (args.fail_if is not None, '--fail-if', 'the search judges each step by its '
                                                    'own conditions')):
        if bad:
            raise errors.ConfigError('--find-max and %s exclude each other: %s' % (flag, why))
    args.ops = 0


def searched(args, kind, opts, percentiles):
    """A --find-max run in which no phase was named (no --phases, no --mix) of a workload
    of several phases is searched on one a user would mean, said on stderr, rather than
    refused. The built-in ops' insert, select, update, delete: its read, select, after a
    load phase of the keys of --keys (what the default phases would have inserted;
    --no-load leaves it out, for a server that has the keys). Another workload of
    several phases (toolbench's queries): a mix of them, equal weights. Sets
    ``args.phases`` or ``args.mix`` to the choice and returns the phases to run before
    it: (the load phase,) or (). The objective is parsed first, so a malformed one is
    what is said.

    --processes' children are given the parent's argv and, when it loads first,
    --load: they make the same choice, --load saying to load (it goes with --mix
    otherwise, and is taken here)."""
    if args.find_max is None or args.phases or args.mix or args.workload_file:
        return ()
    _conditions(args, percentiles)
    defaults = kind.phases(opts, None, None, False)
    judged = kind.judged_phases(opts, defaults)
    if judged is None or len(judged) < 2:
        return ()
    ops = [op for p in defaults for op, _w in p.weights]
    if 'select' in ops and set(ops) <= set(workload.OPS):
        load = args.load or not args.no_load
        args.phases, args.load = 'select', False
        errors.say('note: --find-max searches one phase and none was named: it searches the '
                   "workload's read, select%s; --phases OP or --mix OP=W,... searches another"
                   % (', after a load phase inserting the %d keys of --keys (--no-load: the '
                      'server has them)' % (args.keys or DEFAULT_KEYS) if load else ''))
        return (workload.Phase('load', (('insert', 1),)),) if load else ()
    args.mix = ','.join('%s=1' % p.name for p in defaults)
    errors.say('note: --find-max searches one phase and none was named: it searches the '
               "workload's phases as one mix, %s; --phases OP or --mix OP=W,... searches "
               'another' % args.mix)
    return ()


def mixed(args, phases):
    """A workload file's phases (its PHASES, or its ops in turn), several and none named,
    under --find-max: searched as one mix of their ops, equal weights, said on stderr
    (a file with WEIGHTS is one mix already)."""
    if args.find_max is None or args.phases or args.mix or len(phases) < 2 or \
            any(len(p.weights) != 1 for p in phases):
        return phases
    ops = []
    for p in phases:
        if p.weights[0][0] not in ops:
            ops.append(p.weights[0][0])
    errors.say('note: --find-max searches one phase and none was named: it searches the '
               "workload file's ops as one mix, %s; --phases OP or --mix OP=W,... searches "
               'another' % ','.join('%s=1' % op for op in ops))
    return (workload.Phase('mix', tuple((op, 1) for op in ops)),)


def _conditions(args, percentiles):
    """--find-max's objective, parsed as --fail-if's conditions; a malformed one is
    said as --find-max's."""
    try:
        return fail_if.parse(args.find_max, percentiles)
    except errors.ConfigError as e:
        raise errors.ConfigError(str(e).replace('--fail-if', '--find-max', 1))


def build(args, judged, percentiles):
    """The FindMax of --find-max (None without it); ``judged``: the phases the runner
    drives (None when the workload drives itself), whose last is searched."""
    if args.find_max is None:
        return None
    conditions = _conditions(args, percentiles)   # a malformed objective is said first
    if judged is None:
        raise errors.ConfigError('--find-max searches a phase the runner drives; this '
                                 'workload drives itself')
    if any(p.name != 'load' for p in judged[:-1]):
        raise errors.ConfigError('--find-max searches one phase or mix; got phases %s: give '
                                 'one op to --phases, or a --mix'
                                 % ', '.join(p.name for p in judged))
    if any(c['abort'] for c in conditions):
        raise errors.ConfigError('--find-max judges each step whole: leave @abort out')
    fail_if.check_names(conditions, judged[-1:])
    start = FIND_MAX_START if args.find_max_start is None else args.find_max_start
    step = FIND_MAX_STEP if args.find_max_step is None else args.find_max_step
    warmup = FIND_MAX_WARMUP if args.find_max_warmup is None else args.find_max_warmup
    if start <= 0:
        raise errors.ConfigError('--find-max-start must be above 0 ops/s')
    if step <= 0:
        raise errors.ConfigError('--find-max-step must be above 0 seconds')
    if warmup < 0:
        raise errors.ConfigError('--find-max-warmup must be 0 or more seconds')
    return FindMax(tuple(conditions), float(start), float(step), float(warmup),
                   _resolution(args.find_max_resolution),
                   args.find_max_steps or FIND_MAX_STEPS)


def _resolution(text):
    """--find-max-resolution 5% (or 5) -> 0.05."""
    if text is None:
        return FIND_MAX_RESOLUTION / 100.0
    try:
        value = float(text.strip().rstrip('%'))
    except ValueError:
        value = None
    if value is None or not 0 < value < 100:
        raise errors.ConfigError('--find-max-resolution %r: write a percentage above 0 and '
                                 'below 100, e.g. 5%%' % text)
    return value / 100.0
