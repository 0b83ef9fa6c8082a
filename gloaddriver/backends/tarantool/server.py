"""A private Tarantool for ``--spawn``, the demo and the tests: init.lua, user, space."""
from __future__ import absolute_import, division, print_function

import binascii
import os
import time

from gloaddriver import errors
from gloaddriver.backends.spawn import Server, tail, which

TARANTOOL_USER = 'gloaddriver'

_TARANTOOL_INIT = """
box.cfg{
    listen = '127.0.0.1:%(port)d',
    work_dir = '%(work_dir)s',
    wal_mode = '%(wal_mode)s',
    memtx_memory = %(memtx_memory)d,
    readahead = %(readahead)d,
    net_msg_max = %(net_msg_max)d,
    log = 'tarantool.log',
    pid_file = 'tarantool.pid',
}
box.schema.user.create('%(user)s', {password = os.getenv('GLOADDRIVER_SPAWN_PASSWORD'),
                                    if_not_exists = true})
box.schema.user.grant('%(user)s', 'read,write,execute,create,drop', 'universe', nil,
                      {if_not_exists = true})
%(user_init)s
-- The built-in ops' space, unless the user's own setup made one of that name.
if box.space[%(space)s] == nil then
    local s = box.schema.space.create(%(space)s, {
        format = {{name = 'id', type = 'unsigned'}, {name = 'value', type = 'string'}},
    })
    s:create_index('primary', {type = 'tree', parts = {1, 'unsigned'}})
end
io.stdout:write('gloaddriver: ready\\n')
io.stdout:flush()
"""


def _lua_string(text):
    return "'%s'" % text.replace('\\', '\\\\').replace("'", "\\'")


class TarantoolServer(Server):
    """A private Tarantool: ``start()``, use ``host``/``port``/``user``/``password``, ``stop()``."""

    name = 'tarantool'
    log_name = 'tarantool.log'

    def __init__(self, space='gloaddriver', wal_mode='none', memtx_memory=1 << 30,
                 readahead=1 << 20, net_msg_max=4096, binary=None, init_file=None):
        Server.__init__(self)
        self.init_file = os.path.abspath(init_file) if init_file else None
        self.space = space
        self.wal_mode = wal_mode
        self.memtx_memory = memtx_memory
        self.readahead = readahead
        self.net_msg_max = net_msg_max
        self.binary = binary or which('tarantool')
        self.user = TARANTOOL_USER
        self.password = binascii.hexlify(os.urandom(12)).decode('ascii')

    def settings(self):
        """What the manifest says about this server (never the password)."""
        return {'kind': 'tarantool', 'spawned': True, 'wal_mode': self.wal_mode,
                'memtx_memory': self.memtx_memory, 'readahead': self.readahead,
                'net_msg_max': self.net_msg_max, 'binary': self.binary,
                'init_file': self.init_file}

    def _argv(self):
        return [self.binary, os.path.join(self.work_dir, 'init.lua')]

    def _env(self):
        return dict(os.environ, GLOADDRIVER_SPAWN_PASSWORD=self.password)

    def _check(self):
        if not self.binary:
            raise errors.SetupError('no tarantool binary on PATH; install it '
                                    '(apt-get install -y tarantool) or pass --uri to a running server')

    def _prepare(self):
        with open(os.path.join(self.work_dir, 'init.lua'), 'w') as f:
            f.write(_TARANTOOL_INIT % {
                'port': self.port, 'work_dir': self.work_dir, 'wal_mode': self.wal_mode,
                'memtx_memory': self.memtx_memory, 'readahead': self.readahead,
                'net_msg_max': self.net_msg_max, 'user': self.user,
                'space': _lua_string(self.space),
                # The user's own schema and procedures, run as admin after ours.
                'user_init': 'dofile(%s)' % _lua_string(self.init_file) if self.init_file
                else ''})

    def _ready(self, timeout):
        # The port opens at box.cfg; the user and space exist once init.lua ends.
        path = os.path.join(self.work_dir, 'stdout.log')
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(path) as f:
                if 'gloaddriver: ready' in f.read():
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise errors.SetupError('tarantool did not finish init.lua: %s' % tail(self._log_path()))
