"""The command line: ``gloaddriver [flags]`` runs a workload; ``gloaddriver compat``,
``compare``, ``merge``, ``html`` and ``schema`` are the subcommands.

Exit codes (``gloaddriver.errors``): 0 every op succeeded; 1 some ops failed or
timed out, or the run was aborted; 2 bad flags; 3 the run could not start
(server unreachable, auth, missing space); 4 a --fail-if threshold did not hold;
130 interrupted.
"""
from __future__ import absolute_import, division, print_function

import sys

from gloaddriver import errors



def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    from gloaddriver import config as configuration
    from gloaddriver.config.flags import SUBCOMMANDS
    try:
        if argv[:1] == ['compat']:
            from gloaddriver.compat import check
            return check.main(argv[1:])
        if argv[:1] == ['schema']:
            from gloaddriver.report import schema
            return schema.main(argv[1:])
        if argv[:1] and argv[0] in [name for name, _text in SUBCOMMANDS]:
            from gloaddriver.report import results
            return results.main(argv[0], argv[1:])
        config = configuration.parse(argv)
        if config.load.processes > 1:
            from gloaddriver.run import processes
            return processes.run(config, argv)
    except (errors.GloadError, KeyboardInterrupt) as e:
        return errors.report_error(e)
    from gloaddriver.run import session   # after monkey-patching (see __main__)
    return session.run(config)
