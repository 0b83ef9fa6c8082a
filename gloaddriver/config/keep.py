"""The flags that keep a run's figures as it goes (--hlog, --journal), checked before
the first op: one line and exit 2 for what they cannot do."""
from __future__ import absolute_import, division, print_function

import os

from gloaddriver import errors


def check(args, judged, check_output):
    """Refuse what the kept files cannot be: a prefix whose folder cannot take them, a
    run split in processes (each would write the same files), a workload that drives
    itself (no intervals to keep). ``judged`` is the kind's judged_phases (None for
    such a workload); ``check_output`` is config's check of one output file."""
    if not args.hlog:
        return
    if args.processes > 1:
        raise errors.ConfigError('--hlog does not go with --processes yet: run one process '
                                 'with --hlog')
    if judged is None:
        raise errors.ConfigError('--hlog logs the intervals of the phases the runner '
                                 'drives; this workload drives itself')
    if os.path.isdir(args.hlog) or args.hlog.endswith(os.sep):
        raise errors.ConfigError('--hlog %s is a folder; give a prefix, e.g. %s'
                                 % (args.hlog, os.path.join(args.hlog, 'run')))
    check_output('--hlog', args.hlog + '.check.hlog')
