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
# --repeat: each round's fresh keys start 2**32 after the round before's (below the
# next shard's 2**40 for the first 256 rounds), so a round inserts keys no round made.
ROUND_SPAN = 32


class KeySpace(object):
    """The keys of a run's phases (``load``: config.Load)."""

    def __init__(self, load, user_workload=False):
        self.load = load
        self.user_workload = user_workload
        # Keys known to exist after a time-bounded insert phase; None: --keys.
        self.count = None
        self.first = 0
        # --repeat: where this round's fresh keys begin (0 in the first round), and
        # whether the run's own inserts make the keys its phases read (then the whole
        # key space moves with the round; else only the inserts of a mix do).
        self.offset = 0
        self.moves = any(self._makes_keys(spec) for spec in load.phases)

    def _makes_keys(self, spec):
        return not self.user_workload and len(spec.weights) == 1 and \
            spec.weights[0][0] == 'insert'

    def new_round(self, i):
        """--repeat: round ``i`` (1 for the first) inserts keys no round before made, so
        that each round begins where the first did: ``--repeat 3 --phases insert`` is
        three equal rounds, not one and two of duplicate keys. A run that only reads
        (selects on your own data) reads the same keys every round."""
        if self.user_workload:
            return
        self.offset = (i - 1) << ROUND_SPAN
        self.count = None    # a time-bounded insert of this round says again what it made

    def shard_range(self):
        """(first key, number of keys) of this shard's part of [0, --keys), or of the keys
        a time-bounded insert phase made."""
        if self.count is not None:
            return self.first, max(self.count, 1)
        cfg = self.load
        base = self.offset if self.moves else 0
        if not cfg.shard:
            return base, cfg.keys
        i, n = cfg.shard
        lo, hi = i * cfg.keys // n, (i + 1) * cfg.keys // n
        return base + lo, max(hi - lo, 1)

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
        shard_base = (cfg.shard[0] << SHARD_SPAN if cfg.shard else 0) + self.space.offset
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
