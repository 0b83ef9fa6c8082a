"""The files that keep a run while it goes (--hlog, --journal): made from the config,
given to the run's phases as listeners, and told of the run's start and end by the
session; and the history store (--store) the finished run is recorded in, and judged
against (--baseline history). A run without them gets none of this."""
from __future__ import absolute_import, division, print_function


class Kept(object):
    """--hlog's and --journal's listeners of one run (none when neither is asked for)."""

    def __init__(self, config):
        self.config = config
        self.hlog = self.journal = self.store = None
        if config.output.hlog:
            from gloaddriver.run.hlog import HistogramLog
            self.hlog = HistogramLog(config.output.hlog)

    def listeners(self):
        """Those the run takes after its own (the hlog: the order does not matter to it)."""
        return [self.hlog] if self.hlog is not None else []

    def attach(self, the_run, manifest, injector=None):
        """The journal opened with the run's manifest (a callable: made only when asked
        for) and made the run's first listener: a row is in the file before its progress
        line, a phase's result after every other listener's section."""
        path = self.config.output.journal
        if not path:
            return
        from gloaddriver.run.journal import Journal
        if self.config.output.journal_default:
            from gloaddriver import errors
            errors.say('journal: %s, written as the run goes (a run of over a minute, with '
                       '--json; gloaddriver report %s rebuilds its result if the run dies; '
                       '--no-journal for none)' % (path, path))
        self.journal = Journal(path, self.config.load.repeat, self.config.output.interval,
                               injector).open(manifest())
        the_run.hooks.first(self.journal)

    def finish(self, result):
        if self.journal is not None:
            self.journal.finish(result)

    def open_store(self):
        """The --store opened (its tables made) before the first op: a store that cannot
        be had is said then, not after the load."""
        if self.config.output.store:
            from gloaddriver.measure import store
            self.store = store.open_store(self.config.output.store)

    def baseline(self):
        """--baseline history:N: (the baseline report.baseline judges with, the line that
        says what it is), or (None, None)."""
        n = self.config.output.baseline
        if self.store is None or not n:
            return None, None
        from gloaddriver.report import baseline
        key = self.config.output.scenario[0]
        try:
            runs = self.store.runs(scenario=key, last=n, ok_only=True,
                                   columns=('id', 'started'))
            rows = self.store.phases([r['id'] for r in runs])
        except Exception as e:   # the store's own errors (sqlite3, psycopg2) vary
            # Judged as failed, never as "no baseline yet": a gate that cannot see its
            # baseline does not pass the run. Its transaction ended, so the run can still
            # be recorded (a PostgreSQL store refuses anything in an aborted one).
            try:
                self.store.conn.rollback()
            except Exception:    # a store gone: recording says so, in one line
                pass
            found = baseline.build([], [], n, key, self.store.where)
            found['error'] = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
            return found, baseline.line(found)
        found = baseline.build(runs, rows, n, key, self.store.where)
        return found, baseline.line(found)

    def record(self, result, code):
        """The finished run written to the --store: its exit code, or 1 for a run that
        was otherwise clean when the store could not take it (as a file not written)."""
        if self.store is None:
            return code
        from gloaddriver import errors
        from gloaddriver.measure import run_record
        out = self.config.output
        try:
            run_id = self.store.write(*run_record.rows(
                result, out.scenario, out.label, out.tags, code, run_record.git_commit()))
        except Exception as e:   # the store's own errors (sqlite3, psycopg2) vary
            errors.say('--store %s: the run was not recorded: %s' % (
                self.store.where, str(e).strip().splitlines()[0] if str(e).strip() else repr(e)))
            return errors.EXIT_OPS_FAILED if code == errors.EXIT_OK else code
        errors.say('stored as run %d of scenario %s in %s' % (run_id, out.scenario[0],
                                                              self.store.where))
        return code

    def close(self):
        if self.journal is not None:
            self.journal.close()
        if self.store is not None:
            self.store.close()
            self.store = None
