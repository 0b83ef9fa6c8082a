"""The files that keep a run while it goes (--hlog, --journal): made from the config,
given to the run's phases as listeners, and told of the run's start and end by the
session. A run without them gets none of this."""
from __future__ import absolute_import, division, print_function


class Kept(object):
    """--hlog's and --journal's listeners of one run (none when neither is asked for)."""

    def __init__(self, config):
        self.config = config
        self.hlog = self.journal = None
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

    def close(self):
        if self.journal is not None:
            self.journal.close()
