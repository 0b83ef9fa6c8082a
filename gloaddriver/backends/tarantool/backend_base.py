"""What both Tarantool connectors' backends share: ``TarantoolBackend``, the base class
of the buffered one (``buffered.py``) and the tarantool-python baseline (``sync.py``),
and ``check_space``, which proves a space usable before the first op.
"""
from __future__ import absolute_import, division, print_function

import gevent.pool

from gloaddriver import errors
from gloaddriver.backends import base
from gloaddriver.backends.shared_socket import connect_when_up
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.tarantool.connection import Connection
from gloaddriver.backends.tarantool.layout import Layout


class TarantoolBackend(base.Backend):
    """What both Tarantool connectors share: the address, the metrics sampler, and
    the hint a refused connection gets."""

    def address(self):
        return ','.join('%s:%s' % a for a in self.config.opts.addresses)

    def connection(self, name, want='leader', **kw):
        """A buffered connection (not yet connected) to the member ``want`` says (the
        writable one by default) of --uri's addresses, with the run's limits."""
        c = self.config
        host, port = c.opts.addresses[0]
        return Connection(host, port, c.target.user, c.target.password,
                          timeout=c.limits.timeout, connect_timeout=c.limits.connect_timeout,
                          outage_limit=c.limits.outage_limit, name=name,
                          addresses=c.opts.addresses, want=want, **kw)

    def server_metrics(self, pid):
        from gloaddriver.backends.tarantool import metrics
        return metrics.sampler(self.connection('metrics'), pid)

    def verify_reader(self):
        """--verify through a buffered connection of its own: a select by primary key per
        key, many in flight at once, each tuple matched against what each write leaves."""
        if self.config.opts.request is not None or self.config.load.workload_file:
            return None
        c = self.config
        conn = connect_when_up(lambda: self.connection('verify').connect(),
                               c.limits.outage_limit)
        space_id = check_space(conn, c.opts.space)
        pk, state = Layout.read(conn, space_id).reader(self.values)
        select = conn.select
        pool = gevent.pool.Pool(100)

        def one(key):
            return state(key, select(space_id, pk(key)))

        def read(keys):
            return pool.map(one, keys)
        read.close = conn.close
        return read

    def open(self):
        try:
            self._open()
        except errors.ConnectError as e:
            raise errors.ConnectError('%s. Start a server there, point --uri at one, or use '
                                      '--spawn for a private one' % e)

    def _open(self):
        raise NotImplementedError


def check_space(conn, space):
    """Resolve the space and prove it has a primary index; SchemaError otherwise."""
    try:
        sid = conn.space_id(space)
        conn.select(sid, [], limit=0, iterator=P.ITERATOR_ALL)
    except errors.ServerError as e:
        if e.code in (35, 36):   # ER_NO_SUCH_INDEX_ID, ER_NO_SUCH_SPACE
            raise errors.SchemaError('space %r on %s has no primary index: %s'
                                     % (space, conn.address, e.message))
        if e.code == 42:         # ER_ACCESS_DENIED
            raise errors.AuthError('user %r may not use space %r on %s: %s; grant it '
                                   'read,write or pass --user/--password'
                                   % (conn.user, space, conn.address, e.message))
        raise errors.SetupError('cannot use space %r on %s: %s' % (space, conn.address, e))
    except errors.OpError as e:
        raise errors.SetupError('cannot read the schema of %s: %s' % (conn.address, e))
    return sid
