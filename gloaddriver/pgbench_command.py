"""``gloaddriver pgbench``: pgbench 15's command line (config/pgbench_args.py maps its
flags). -i makes pgbench's tables and exits; a run vacuums as pgbench does (unless -n),
runs the mapped flags as any run, then prints pgbench's summary
(report/pgbench_summary.py), so that scripts that read pgbench's output keep working,
and gloaddriver's table after it.
"""
from __future__ import absolute_import, division, print_function

import sys

from gloaddriver import errors


def main(argv):
    from gloaddriver.config import pgbench_args
    plan = pgbench_args.parse(argv)
    tables = _tables(pgbench_args.BACKEND)
    if plan.mode == 'init':
        return _init(plan, tables)
    return _run(plan, tables, pgbench_args.VERSION_LINE)


def _tables(kind):
    """The module of pgbench's tables, beside its kind's package (reached through the
    registry: nothing here imports a server kind by name)."""
    import importlib
    from gloaddriver import backends
    return importlib.import_module(backends.REGISTRY[kind] + '.pgbench_tables')


def _say(text):
    sys.stderr.write(text + '\n')
    sys.stderr.flush()


def _init(plan, tables):
    """pgbench -i: drop, create and fill the tables on the database the flags name."""
    conn = tables.connect(plan.dsn, plan.password)
    try:
        i = plan.init
        tables.create(conn.cursor(), i.scale, steps=i.steps, fillfactor=i.fillfactor,
                      unlogged=i.unlogged, say=_say, quiet=i.quiet)
    finally:
        conn.close()
    return errors.EXIT_OK


def _vacuum(plan, tables):
    """What pgbench does before a run: its errors said, the run goes on (as pgbench's)."""
    conn = tables.connect(plan.dsn, plan.password)
    sys.stderr.write('starting vacuum...')
    sys.stderr.flush()
    try:
        failed = tables.vacuum_before_run(conn.cursor(), all_tables=plan.vacuum == 'all')
    finally:
        conn.close()
    for line in failed:
        sys.stderr.write('\ngloaddriver pgbench: %s (the run goes on, as pgbench\'s does)'
                         % line)
    _say('%send.' % ('\n' if failed else ''))


def _stamp(path):
    """(mtime, size) of a file, None when there is none."""
    import os
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime, st.st_size


def _result(path):
    import io
    import json
    try:
        with io.open(path, encoding='utf-8') as f:
            return json.load(f)
    except (IOError, OSError, ValueError):
        return None


class _Collected(object):
    """The run's own table, held back to print after pgbench's summary."""

    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)

    def flush(self):
        pass


def _run(plan, tables, version_line):
    import os
    import shutil
    import tempfile
    from gloaddriver import config as configuration
    from gloaddriver.report import pgbench_summary
    folder = None
    argv, path = plan.argv, plan.json
    if path is None:    # the summary is made from the result: a file of our own
        folder = tempfile.mkdtemp(prefix='gloaddriver-pgbench-')
        path = os.path.join(folder, 'result.json')
        argv = argv + ['--json', path]
    before = _stamp(path)     # a --json FILE of an earlier run is not this run's
    try:
        config = configuration.parse(argv)     # bad flags: one line, before anything runs
        sys.stdout.write(version_line + '\n')
        sys.stdout.flush()
        if plan.vacuum and not plan.spawn:     # a spawned server's tables are new
            _vacuum(plan, tables)
        table = _Collected()
        if config.load.processes > 1:
            from gloaddriver.run import processes
            code = processes.run(config, argv, out=table)
        else:
            from gloaddriver.run import session
            code = session.run(config, out=table)
        result = _result(path) if _stamp(path) != before else None
        if result is not None:     # (None: the run did not start, and it said why)
            for line in pgbench_summary.lines(result, plan.settings):
                sys.stdout.write(line + '\n')
        for part in table.parts:
            sys.stdout.write(part)
        sys.stdout.flush()
        return code
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
