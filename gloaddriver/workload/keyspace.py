"""The key space of a run: which keys each phase works on, and how many ops it may take.

The runner asks; it never shapes keys itself. ``KeySpace`` is the run's view: this
shard's part of ``[0, --keys)``, or, after a time-bounded insert phase, the keys that
phase made (it grows the key space with the run instead of wrapping around --keys).
``PhaseKeys`` is one phase's: the key source of each worker's op, shared where the
keys must be (inserts, sequential), and the range the phase covered.
"""
from __future__ import absolute_import, division, print_function

import sys

from gloaddriver.workload import keys as keygen

UNLIMITED = sys.maxsize
SHARD_SPAN = 40     # unbounded inserts: each shard's fresh keys start 2**40 apart


class KeySpace(object):
    """The keys of a run's phases (``load``: config.Load)."""

    def __init__(self, load, user_workload=False):
        self.load = load
        self.user_workload = user_workload
        # Keys known to exist after a time-bounded insert phase; None: --keys.
        self.count = None
        self.first = 0

    def shard_range(self):
        """(first key, number of keys) of this shard's part of [0, --keys), or of the keys
        a time-bounded insert phase made."""
        if self.count is not None:
            return self.first, max(self.count, 1)
        cfg = self.load
        if not cfg.shard:
            return 0, cfg.keys
        i, n = cfg.shard
        lo, hi = i * cfg.keys // n, (i + 1) * cfg.keys // n
        return lo, max(hi - lo, 1)

    def time_bounded_insert(self, spec):
        """An insert phase of its own with no op limit: it takes fresh keys for as long as
        it runs, and the phases after it work on the keys it made."""
        return self.load.ops == 0 and spec.name != 'load' and len(spec.weights) == 1 and \
            spec.weights[0][0] == 'insert' and not self.user_workload

    def limit(self, spec):
        """The ops a phase may take. A load phase inserts the whole key space once; others
        run --ops. Without an op limit a sequential delete phase ends when it has deleted
        every key there is."""
        cfg = self.load
        if spec.name == 'load' or (cfg.ops == 0 and spec.weights == (('delete', 1),) and
                                   cfg.distribution == 'sequential'):
            return self.shard_range()[1]
        return cfg.ops or UNLIMITED

    def warmup_source(self, worker):
        """The keys of the unrecorded warmup: uniform over --keys."""
        cfg = self.load
        return keygen.generator('uniform', cfg.keys, cfg.seed, 'warmup', worker)

    def phase(self, spec):
        return PhaseKeys(self, spec)


class PhaseKeys(object):
    """One phase's keys: ``source(op, worker)`` for each worker's op, ``covered()`` at
    the end. Made before the phase starts, so its range is the one of that moment."""

    def __init__(self, space, spec):
        self.space = space
        self.spec = spec
        self.first, self.size = space.shard_range()
        self._shared = {}

    def _inserts(self):
        """The phase's one insert generator: fresh sequential keys. In a phase of their
        own, this shard's keys from its first (the load); in a mix, keys above the key
        space, a separate range per shard."""
        cfg, spec = self.space.load, self.spec
        shard_base = cfg.shard[0] << SHARD_SPAN if cfg.shard else 0
        if len(spec.weights) > 1:
            return keygen.sequential(UNLIMITED, cfg.keys + shard_base)
        if self.space.time_bounded_insert(spec):
            # Growing without bound: each shard from a range of its own, or one shard's
            # keys would run into the next one's.
            return keygen.sequential(UNLIMITED, shard_base)
        return keygen.sequential(self.size, self.first)

    def source(self, op, worker):
        """next_key() for ``op`` of ``worker``."""
        cfg, shared = self.space.load, self._shared
        if 'insert' in dict(self.spec.weights) and 'insert' not in shared:
            shared['insert'] = self._inserts()
        if op == 'insert':
            return shared['insert']
        if cfg.distribution == 'sequential' and 'seq' not in shared:
            shared['seq'] = keygen.sequential(self.size, self.first)
        return keygen.generator(cfg.distribution, self.size, cfg.seed, self.spec.name, worker,
                                start=self.first, shared=shared.get('seq'),
                                inserts=shared.get('insert'))

    def covered(self):
        """The key range the phase worked on, {'first', 'count'}; a time-bounded insert
        phase also sets the key space of the phases after it."""
        inserts = self._shared.get('insert')
        if inserts is not None and len(self.spec.weights) == 1:
            made = inserts.issued[0]
            if self.space.time_bounded_insert(self.spec):
                self.space.count, self.space.first = made, inserts.start
            else:
                made = min(made, self.size)
            return {'first': inserts.start, 'count': made}
        return {'first': self.first, 'count': self.size}
