"""The command line: ``gloaddriver [flags]`` runs a workload; the subcommands
(``compat``, ``compare``, ``merge``, ``html``, ``schema``, ``report``, ``history``, ``trend``,
``pgbench``) are listed once,
with their help lines, in ``gloaddriver.config.flags.SUBCOMMANDS`` and run by
``DISPATCH`` here.

``gloaddriver pgbench ...`` takes pgbench 15's flags and prints pgbench's summary first
(gloaddriver.pgbench_command).

The exit codes (0, 1, 2, 3, 4, 130) are defined once, with what each means, as
``gloaddriver.errors.EXIT_CODES``; --help, docs/cli.md, README.md and docs/report.md
show that list.
"""
from __future__ import absolute_import, division, print_function

import sys

from gloaddriver import errors


def _compat(argv):
    from gloaddriver.compat import check
    return check.main(argv)


def _schema(argv):
    from gloaddriver.report import schema
    return schema.main(argv)


def _report(argv):
    from gloaddriver.report import from_journal
    return from_journal.main(argv)


def _history(argv):
    from gloaddriver.report import history
    return history.main(argv)


def _trend(argv):
    from gloaddriver.report import trend
    return trend.main(argv)


def _pgbench(argv):
    from gloaddriver import pgbench_command
    return pgbench_command.main(argv)


def _results(command):
    def run(argv):
        from gloaddriver.report import results
        return results.main(command, argv)
    return run


# Each subcommand of config.flags.SUBCOMMANDS (the list --help and the docs show) and
# what runs it; tests/unit/test_docs.py checks that the two name the same ones.
DISPATCH = {
    'compat': _compat,
    'compare': _results('compare'),
    'merge': _results('merge'),
    'html': _results('html'),
    'schema': _schema,
    'report': _report,
    'history': _history,
    'trend': _trend,
    'pgbench': _pgbench,
}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    from gloaddriver import config as configuration
    try:
        if argv[:1] and argv[0] in DISPATCH:
            return DISPATCH[argv[0]](argv[1:])
        config = configuration.parse(argv)
        if config.load.processes > 1:
            from gloaddriver.run import processes
            return processes.run(config, argv)
    except (errors.GloadError, KeyboardInterrupt) as e:
        return errors.report_error(e)
    from gloaddriver.run import session   # after monkey-patching (see __main__)
    return session.run(config)
