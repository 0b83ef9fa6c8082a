"""An in-memory server kind for the unit tests: a dict behind the backend contract.

A new backend is one folder (this package, with ``KIND``) and one registry line::

    gloaddriver.backends.register('memory', 'tests.fakebackend')

Its ops behave like a real server's: an insert of an existing key is a server
error (code 3, as Tarantool's duplicate key), a read of a missing key returns
[] (a miss). Every op yields to the hub, as an op on a socket would. Two flags
of its own: ``--fail-every N`` (every Nth op of a phase raises ``Injected``)
and ``--op-sleep SECONDS`` (each op takes that long: a slow server).
"""
from __future__ import absolute_import, division, print_function

from collections import namedtuple

import gevent

from gloaddriver import errors, workload
from gloaddriver.backends import base
from gloaddriver.converters import positive_int, seconds

Options = namedtuple('Options', 'fail_every op_sleep')


class Injected(errors.OpError):
    """A failure the backend was told to make."""
    kind = 'injected'


class Memory(base.Kind):
    name = 'memory'
    title = 'in-memory dict'
    flags = (
        (('--fail-every',), dict(type=positive_int, metavar='N',
                                 help='memory: every Nth op of a phase fails')),
        (('--op-sleep',), dict(type=seconds, metavar='SECONDS',
                               help='memory: each op takes this long')),
    )

    def options(self, args):
        return Options(fail_every=args.fail_every, op_sleep=args.op_sleep or 0)

    def backend(self, config, counter):
        return MemoryBackend(config)


class MemoryBackend(base.Backend):
    connector = 'dict'

    def __init__(self, config):
        base.Backend.__init__(self, config)
        self.data = {}
        self.log = []        # (op, key) of every op that reached the dict, in order
        self.calls = 0       # ops of the current phase, failed ones included
        self.values = workload.values(config.load.value_size)

    def address(self):
        return 'in-process'

    def phase_started(self):
        self.calls = 0

    def client(self, worker):
        """A workload file's db: the dict's ops by name (insert, select, ...)."""
        return self

    def worker_ops(self, worker):
        ops = dict((name, getattr(self, name)) for name in workload.OPS)
        return dict((name, self._op(name, fn)) for name, fn in ops.items())

    def _op(self, name, fn):
        fail_every, op_sleep = self.config.opts

        def op(key):
            self.calls += 1
            n = self.calls
            gevent.sleep(op_sleep)
            if fail_every and n % fail_every == 0:
                raise Injected('injected failure of op %d (%s %d)' % (n, name, key))
            self.log.append((name, key))
            return fn(key)
        return op

    # -- the ops: fn(key) -> rows; [] is a miss --------------------------------------

    def insert(self, key):
        if key in self.data:
            raise errors.ServerError(3, 'duplicate key')
        self.data[key] = self.values[key % 100]
        return [key, self.data[key]]

    def select(self, key):
        return [key, self.data[key]] if key in self.data else []

    def update(self, key):
        if key not in self.data:
            return []
        self.data[key] = self.values[(key + 1) % 100]
        return [key, self.data[key]]

    def delete(self, key):
        return [key, self.data.pop(key)] if key in self.data else []

    def scan(self, key):
        found = sorted(k for k in self.data if k >= key)[:workload.scan_length(key)]
        return [[k, self.data[k]] for k in found]

    def rmw(self, key):
        return self.select(key) and self.update(key)


KIND = Memory()
