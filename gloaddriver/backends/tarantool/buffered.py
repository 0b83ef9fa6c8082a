"""The Tarantool workload on the buffered connector: insert/select/update/delete, scan
and read-modify-write of tuples shaped by the space (``layout``).

Gives the runner one callable per op and worker, ``fn(key)``, returning the
result rows (empty = the key was not there). The buffered connector shares
``--connections`` sockets among all workers; the sync baseline lives in
``sync.py``, and what both share (``TarantoolBackend``) in ``backend_base.py``.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import workload
from gloaddriver.backends import base
from gloaddriver.backends.shared_socket import summed_stats
from gloaddriver.backends.tarantool import packed
from gloaddriver.backends.tarantool import requests
from gloaddriver.backends.tarantool.backend_base import TarantoolBackend, check_space
from gloaddriver.backends.tarantool.layout import Layout
from gloaddriver.backends.tarantool.layout import make_ops as make_layout_ops
from gloaddriver.workload import keys as keygen


def make_ops(conn, space_id, values, space_name=None, layout=None):
    """The built-in ops on one buffered connection, for the space's layout
    (gloaddriver's own (id, value) space when none is given).

    ``values[k % 100]`` is inserted for key k and ``values[(k + 1) % 100]`` written
    by update, so a read can tell which write it sees. Insert, select, update and
    delete send bodies made from pre-packed parts (``packed``) straight to
    ``conn.rows_frame``, one call per op, and get their rows undecoded
    (``protocol.Rows``). With ``space_name`` (--by-name) the ops call the public
    methods instead and name the space on every call, as an application would: a
    schema cache that misses (keyed by bytes on py3, say) shows up as schema
    fetches and two requests per op.
    """
    layout = layout or Layout.classic(space_id)
    if space_name is not None:
        return make_layout_ops(layout, 'method', values, space_name, methods=conn)
    return packed.make_ops(conn, layout, values)


class BufferedBackend(TarantoolBackend):
    connector = 'buffered'

    def __init__(self, config):
        base.Backend.__init__(self, config)
        self.conns = []
        self.space_id = None
        self.values = workload.values(config.load.value_size, config.load.seed)
        self._ops = []
        self.read_conns = []      # --read-from replica|any: the reads' own connections
        self._targets = []        # per connection: the --sql statement's id, or the request
        self._request_note = ''

    def describe(self):
        n = self.config.opts.connections
        reads = ', reads from %s (%s)' % (self.config.target.read_from, ', '.join(
            c.address for c in self.read_conns)) if self.read_conns else ''
        return 'buffered connector, %d greenlets on %d connection%s%s%s' % (
            self.config.load.greenlets, n, '' if n == 1 else 's', self._request_note, reads)

    def _open(self):
        c = self.config
        opts = c.opts
        for i in range(opts.connections):
            self.conns.append(self.connection('tarantool-%d' % i, max_pending=opts.max_pending,
                                              overlap=opts.overlap).connect())
        if opts.request is not None:
            self._open_request(opts.request)
        elif not c.load.workload_file:   # the built-in ops need their space
            self.space_id = check_space(self.conns[0], opts.space)
            layout = Layout.read(self.conns[0], self.space_id, opts.index)
            name = opts.space if opts.by_name else None
            self._ops = [make_ops(conn, self.space_id, self.values, name, layout)
                         for conn in self.conns]
            read_from = c.target.read_from
            if read_from != 'leader':
                # The reads on connections of their own, to a replica (or any member):
                # each worker's select and scan go there, its writes to the leader.
                for i, ops in enumerate(self._ops):
                    conn = self.connection('tarantool-read-%d' % i, want=read_from,
                                           max_pending=opts.max_pending,
                                           overlap=opts.overlap).connect()
                    self.read_conns.append(conn)
                    reads = make_ops(conn, self.space_id, self.values, name, layout)
                    ops.update((op, reads[op]) for op in workload.READ_OPS)

    def _open_request(self, request):
        kind, target = request
        if kind == 'sql':   # preparing proves it; a server that cannot is asked to explain
            self._targets = [requests.prepare(conn, target) for conn in self.conns]
            prepared = self._targets[0].__class__ is int
            if not prepared:
                requests.explain(self.conns[0], target)
            self._request_note = ', --sql %s' % ('prepared' if prepared else 'as text (the '
                                                 'server cannot prepare)')
        else:
            requests.check(self.conns[0], kind, target)
            self._targets = [target] * len(self.conns)
            self._request_note = ', --%s %s' % (kind, target)

    def worker_ops(self, worker):
        request = self.config.opts.request
        if request is None:
            return self._ops[worker % len(self._ops)]
        i = worker % len(self.conns)
        rnd = keygen.make_rng(self.config.load.seed, 'args', self.config.load.shard, worker)
        return {request[0]: requests.buffered_op(self.conns[i], request[0], self._targets[i],
                                                 self.config.opts.fill, rnd, worker,
                                                 sql=request[1])}

    def client(self, worker):
        """The buffered connection itself: select, insert, replace, update, upsert, delete,
        call, eval, execute, by space and index names or ids."""
        return self.conns[worker % len(self.conns)]

    def io_counts(self):
        return summed_stats(self.conns + self.read_conns)

    def reconnects(self):
        return sum(conn.reconnects for conn in self.conns + self.read_conns)

    def member(self):
        if len(self.config.opts.addresses) > 1 and self.conns:
            return self.conns[0].address
        return None

    def server_version(self):
        return self.conns[0].server_version if self.conns else None

    def close(self):
        for conn in self.conns + self.read_conns:
            conn.close()
        self.conns, self.read_conns = [], []
