"""The command line: ``gloaddriver [flags]`` runs a workload; ``gloaddriver compat``,
``compare``, ``merge``, ``html`` and ``schema`` are the subcommands.

The exit codes (0, 1, 2, 3, 4, 130) are defined once, with what each means, as the
``EXIT_*`` constants of ``gloaddriver.errors``; docs/report.md lists them for users.
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
