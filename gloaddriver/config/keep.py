"""The flags that keep a run's figures as it goes (--hlog, --journal), checked before
the first op: one line and exit 2 for what they cannot do.

The journal is on by default beside --json (``FILE.journal``) for a run that will last
over a minute by its flags (--duration per phase, or --stages), in one process driven
by the runner: the run that would lose most when it dies, and the one whose result is
asked for in a file. A run bounded by --ops cannot tell its length before it starts,
and gets none unless asked."""
from __future__ import absolute_import, division, print_function

import os

from gloaddriver import errors

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
