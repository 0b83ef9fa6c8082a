"""The flags that keep a run's figures as it goes (--hlog, --journal), checked before
the first op: one line and exit 2 for what they cannot do.

The journal is on by default beside --json (``FILE.journal``) for a run that will last
over a minute by its flags (--duration per phase, or --stages), in one process driven
by the runner: the run that would lose most when it dies, and the one whose result is
asked for in a file. A run bounded by --ops cannot tell its length before it starts,
and gets none unless asked."""
from __future__ import absolute_import, division, print_function

import os
import re

from gloaddriver import errors
from gloaddriver.secrets import mask_dsn

DEFAULT_AFTER = 60.0   # s: a run this long or longer keeps a journal beside its --json


def check(args, judged, check_output, phases=1):
    """Refuse what the kept files cannot be: a prefix whose folder cannot take them, a
    run split in processes (each would write the same files), a workload that drives
    itself (no intervals to keep). ``judged`` is the kind's judged_phases (None for
    such a workload); ``check_output`` is config's check of one output file. Sets
    ``args.journal`` to the default path where the default applies, and
    ``args.journal_default``."""
    args.journal_default = False
    for flag, value in (('--hlog', args.hlog), ('--journal', args.journal)):
        if not value:
            continue
        if args.processes > 1:
            raise errors.ConfigError('%s does not go with --processes yet: run one process '
                                     'with %s' % (flag, flag))
        if judged is None:
            raise errors.ConfigError('%s keeps the intervals of the phases the runner '
                                     'drives; this workload drives itself' % flag)
    if args.hlog:
        if os.path.isdir(args.hlog) or args.hlog.endswith(os.sep):
            raise errors.ConfigError('--hlog %s is a folder; give a prefix, e.g. %s'
                                     % (args.hlog, os.path.join(args.hlog, 'run')))
        check_output('--hlog', args.hlog + '.check.hlog')
    if args.journal:
        if args.json and os.path.abspath(args.journal) == os.path.abspath(args.json):
            raise errors.ConfigError('--journal %s is the --json file; give another'
                                     % args.journal)
        check_output('--journal', args.journal)
    elif args.journal is None and args.json and args.processes == 1 and judged is not None \
            and planned_seconds(args, phases) > DEFAULT_AFTER:
        args.journal, args.journal_default = args.json + '.journal', True
        check_output('--journal', args.journal)


def planned_seconds(args, phases):
    """How long the flags say the run lasts (0 when its ops bound it)."""
    if args.stages:
        from gloaddriver import converters
        return sum(s.seconds for s in converters.stages(args.stages).stages) * args.repeat
    return (args.duration or 0) * phases * args.repeat


# The flag groups and flags that do not shape the load: a run's scenario leaves them out.
_NOT_LOAD_GROUPS = ('output', 'live metrics', 'profiling')
_NOT_LOAD = ('help', 'version', 'profile', 'password', 'start_at', 'tx_log', 'sampling_rate')
_TAG = re.compile(r'^([A-Za-z0-9_.-]+)=(.*)$')


def check_store(args, environ, parser):
    """--store (or $GLOADDRIVER_STORE), --label, --tag, --baseline, checked before the
    first op; sets ``args.store``, ``args.tags`` ((name, value) pairs), ``args.baseline``
    (N runs, or None) and ``args.scenario`` ((key, flags text), with a store)."""
    from gloaddriver.config.flags import BASELINE_RUNS, STORE_ENV
    from gloaddriver.measure import store
    if not args.store and environ.get(STORE_ENV):
        # The default store: a run of --processes is not stored yet (said), and its
        # children, which see the same environment, store nothing of their own.
        from gloaddriver.run.processes import START_ENV
        if args.processes > 1:
            errors.say('note: $%s: a run of --processes is not stored yet' % STORE_ENV)
        elif not environ.get(START_ENV):
            args.store = environ[STORE_ENV]
    args.store = args.store or None
    given = [f for f, v in (('--label', args.label), ('--tag', args.tag),
                            ('--baseline', args.baseline)) if v]
    if not args.store:
        if given:
            raise errors.ConfigError('%s goes with a history store: give --store sqlite:PATH '
                                     '(or postgresql://...) or set $%s' % (given[0], STORE_ENV))
        args.tags, args.scenario = (), None
        return
    store.parse_url(args.store)
    if args.processes > 1:
        raise errors.ConfigError('--store does not go with --processes yet: record runs of '
                                 'one process (--greenlets)')
    args.tags = _tags(args.tag or ())
    args.baseline = _baseline(args.baseline, BASELINE_RUNS)
    args.scenario = scenario(parser, args)


def _tags(texts):
    out = {}
    for text in texts:
        m = _TAG.match(text)
        if not m:
            raise errors.ConfigError('--tag takes NAME=VALUE (letters, digits, _ . - in the '
                                     'name), e.g. --tag branch=main; got %r' % text)
        name, value = m.groups()
        if name in ('label', 'commit'):
            raise errors.ConfigError('--tag %s: %s is kept by the store itself (--label, the '
                                     'git commit); choose another name' % (text, name))
        if name in out and out[name] != value:
            raise errors.ConfigError('--tag %s given twice (%s and %s)' % (name, out[name],
                                                                          value))
        out[name] = value
    return tuple(sorted(out.items()))


def _baseline(text, default):
    """--baseline history[:N] -> N (2 or more), or None."""
    if not text:
        return None
    m = re.match(r'^history(?::([0-9]+))?$', text)
    if not m or (m.group(1) and int(m.group(1)) < 2):
        raise errors.ConfigError('--baseline takes history or history:N (N runs of this '
                                 'scenario, 2 or more: a spread needs two), e.g. history:5; '
                                 'got %r' % text)
    return int(m.group(1)) if m.group(1) else default


def baseline_conditions(conditions, baseline, parse):
    """The --fail-if conditions with --baseline: relative ones need it; without any of
    its own, the default relative ones (flags.BASELINE_DEFAULT) are judged."""
    from gloaddriver.config.flags import BASELINE_DEFAULT
    conditions = list(conditions or ())
    relative = [c for c in conditions if c.get('relative')]
    if relative and not baseline:
        raise errors.ConfigError('--fail-if %r is relative to a baseline: give --baseline '
                                 'history[:N] (and a --store)' % relative[0]['text'])
    if baseline and not relative:
        conditions += parse(BASELINE_DEFAULT)
    return tuple(conditions) or None


def _flag_value(value):
    """A flag's value as the scenario writes it (a parsed value by its own text)."""
    if isinstance(value, (type(u''), str)):
        return mask_dsn(value)     # a --dsn's password is neither stored nor in the key
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_flag_value(v) for v in value]
    return getattr(value, 'text', None) or str(value)


def scenario(parser, args):
    """(key, flags text) of a run's scenario: its server kind and workload, and every flag
    that shapes the load (not those of output, live metrics and profiling, nor the
    password or --start-at), as the parsed values hold them: a flag given at its default
    is the same scenario as one left out. The key is the first 12 hex digits of their
    SHA-1."""
    import hashlib
    import json
    chosen, seen = [('--backend', args.backend)], set(['backend'])
    for group in parser._action_groups:
        if (group.title or '').startswith(_NOT_LOAD_GROUPS):
            continue
        for action in group._group_actions:
            if not action.option_strings or action.dest in _NOT_LOAD or action.dest in seen:
                continue
            seen.add(action.dest)
            value = getattr(args, action.dest, None)
            if value == action.default or str(_flag_value(value)) == str(action.default) \
                    or (value is None and action.default is False):
                continue
            flag = [o for o in action.option_strings if o.startswith('--')][0]
            chosen.append((flag, _flag_value(value)))
    text = ' '.join(flag if v is True else '%s %s' % (flag, v if not isinstance(v, list)
                                                      else ','.join(map(str, v)))
                    for flag, v in chosen)
    key = hashlib.sha1(json.dumps(chosen, sort_keys=True).encode('utf-8')).hexdigest()[:12]
    return key, text
