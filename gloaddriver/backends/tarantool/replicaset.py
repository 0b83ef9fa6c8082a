"""A private Tarantool replica set (``--spawn --replicas N``): a leader and N replicas on
free loopback ports, each a :class:`TarantoolMember` in a temp dir of its own.

Every member has the same user and password (the password in the environment, never in
a file) and the same settings; ``box.cfg.replication`` of each lists every member of the
mesh (``user:password@127.0.0.1:port``, built in Lua from the environment), so a
promoted replica needs no new links. Replication reads the WAL: ``wal_mode = 'none'``
is raised to ``'write'`` (``settings()`` says so).

- ``async``: plain asynchronous replication.
- ``sync``: the built-in space (and every user space the init file made) is
  ``is_sync``, with a generous ``replication_synchro_timeout`` (a loaded machine must
  not roll back).

The quorum (``replication_synchro_quorum``) is a majority of all members. Before 2.6.1
(Debian packages 2.6.0) a member that acknowledges a transaction already
confirmed, its CONFIRM being written, makes the leader write a second CONFIRM whose
wake-ups hit the fiber of a newer transaction in the middle of its WAL write: that
transaction never commits (it rolls back after the synchro timeout), and with more
members acknowledging than the quorum this happens within a few dozen commits. There
the quorum is every member taking part (in the mesh, neither killed nor paused), and at
least a majority: the set changes it on each member as its faults change who takes
part, counting a member before it can acknowledge again (the leader's commits wait
while it catches up) and no longer once it is killed or paused.

Start: the leader alone (it makes the user, with the ``replication`` role, the space
and the user's init file), then each replica joins it, one after the other; then every
member is given the whole mesh, and ``start()`` returns once every member follows every
other one and every replica has caught up with the leader.

Each boot writes the member's init.lua for its role at that boot: ``box.cfg`` with
``read_only`` (only the leader writes) and the replication it boots with (the leader to
join, or nobody); the mesh is then set by a fiber (``gloaddriver_replicate``, also
called over IPROTO when the mesh changes: ``box.cfg{replication}`` waits for every
peer, so it never runs in the caller). The user's init file runs on every member (on a
read-only one under pcall: its functions are wanted there too, its writes are not; and
again on a replica when it is promoted).

A promotion (Tarantool 2.6 has no ``election_mode``) waits until the chosen replica has
every row the other live replicas have; in sync mode it then empties its synchro queue
with ``box.ctl.clear_synchro_queue()``. 2.6.0's first waits twice the synchro timeout
for the dead leader's CONFIRM (the timeout is lowered for the call), then CONFIRMs the
queue up to the quorum-th highest LSN of the old leader that the members it relays to
have acknowledged to it (its own included, the dead leader's last report too) and
ROLLBACKs the rest: a write acknowledged to a client but not yet acknowledged to the new
leader by the others would be lost. The call is made with a quorum of 1: the whole queue
is confirmed, and the most advanced replica has every acknowledged write. Then
``read_only = false``, and the mesh narrows to the live members: one left out (dead, or
paused, at the promotion) may hold rows the new leader does not have.

A member started again as a replica boots alone. When it was left out of the mesh (as
is one resumed after a promotion), it is compared with the leader: a vclock component
beyond the leader's means its history left the leader's, and it is rebootstrapped
(snapshots and logs removed, joined again with its own instance UUID, so its replica id
stays). Then it is put back in the mesh, and ``start_again`` returns once it has caught
up.

``lag()`` asks the leader and each live replica (a connection each, bounded in time; one
that does not answer is left out): the leader's own LSN minus what the replica has
applied of it, and the replica's upstream lag in seconds.
"""
from __future__ import absolute_import, division, print_function

import os
import shutil
import time

import gevent

from gloaddriver import errors
from gloaddriver.backends import replicaset
from gloaddriver.backends.spawn import tail
from gloaddriver.backends.tarantool.server import TarantoolServer, _lua_string

MODES = ('async', 'sync')
# replication_synchro_quorum: a majority of all members; before 2.6.1, every member
# taking part, and at least a majority (module docstring).
MAJORITY, MEMBERS_UP = 'majority', 'members up'
FIXED_IN = (2, 6, 1)
# A loaded 2-core CI machine must not roll a synchronous transaction back.
SYNCHRO_TIMEOUT = 30.0
# The synchro timeout during box.ctl.clear_synchro_queue(): 2.6.0 waits twice that for
# the old leader's CONFIRM/ROLLBACK, which cannot come (the live replicas' rows are
# already on the promoted one when it is called).
CLEAR_SYNCHRO_TIMEOUT = 0.1
CONNECT_TIMEOUT = 5.0     # replication_connect_timeout: how long a box.cfg{replication} waits
INFO_SECONDS = 3.0        # one look at a member (connect, log in, one eval)
PROMOTE_SECONDS = 30.0
# What a rebootstrap keeps of a member's dir (the rest is its data).
_KEEP = ('init.lua', 'stdout.log', 'tarantool.log', 'tarantool.pid')

_MEMBER_INIT = """
local fiber = require('fiber')
local log = require('log')
local password = os.getenv('GLOADDRIVER_SPAWN_PASSWORD')
local function uris(ports)
    local out = {}
    for _, port in ipairs(ports) do
        table.insert(out, '%(user)s:' .. password .. '@127.0.0.1:' .. port)
    end
    return out
end
box.cfg{
    listen = '127.0.0.1:%(port)d',
    work_dir = %(work_dir)s,
    wal_mode = '%(wal_mode)s',
    memtx_memory = %(memtx_memory)d,
    readahead = %(readahead)d,
    net_msg_max = %(net_msg_max)d,
    log = 'tarantool.log',
    pid_file = 'tarantool.pid',%(uuid)s
    read_only = %(read_only)s,
    replication = uris({%(boot_peers)s}),
    -- 1 to join (a replica that reaches nobody must fail, not found a set of its own);
    -- 0 otherwise: a peer missing from a box.cfg{replication} never makes it an orphan.
    replication_connect_quorum = %(connect_quorum)d,
    replication_connect_timeout = %(connect_timeout)s,
    replication_synchro_quorum = %(synchro_quorum)d,
    replication_synchro_timeout = %(synchro_timeout)s,
}
-- The mesh: one fiber applies the last list asked for (box.cfg{replication} waits for
-- every peer to answer, up to replication_connect_timeout).
local wanted, busy
function gloaddriver_replicate(ports)
    wanted = ports
    if busy then
        return
    end
    busy = true
    fiber.create(function()
        while wanted ~= nil do
            local now = wanted
            wanted = nil
            local ok, err = pcall(box.cfg, {replication_connect_quorum = 0,
                                            replication = uris(now)})
            if not ok then
                log.warn('gloaddriver: replication from %%s: %%s', table.concat(now, ','),
                         tostring(err))
            end
        end
        busy = false
    end)
end
%(mesh)s
%(role)s
io.stdout:write('gloaddriver: ready\\n')
io.stdout:flush()
"""

_LEADER_SETUP = """
box.schema.user.create('%(user)s', {password = password, if_not_exists = true})
box.schema.user.grant('%(user)s', 'read,write,execute,create,drop', 'universe', nil,
                      {if_not_exists = true})
box.schema.user.grant('%(user)s', 'replication', nil, nil, {if_not_exists = true})
%(user_init)s
-- The built-in ops' space, unless the user's own setup made one of that name.
if box.space[%(space)s] == nil then
    local s = box.schema.space.create(%(space)s, {
        format = {{name = 'id', type = 'unsigned'}, {name = 'value', type = 'string'}},
        is_sync = %(sync)s,
    })
    s:create_index('primary', {type = 'tree', parts = {1, 'unsigned'}})
end
"""

# sync: the user's spaces replicate synchronously too (not local or temporary ones).
_MAKE_SYNC = """
local ids = {}
for _, t in box.space._space:pairs(512, {iterator = 'GE'}) do
    table.insert(ids, t[1])
end
for _, id in ipairs(ids) do
    local s = box.space[id]
    if s ~= nil and not s.is_sync and not s.is_local and not s.temporary then
        -- (2.6.0 has no space:alter)
        local opts = {}
        for k, v in pairs(box.space._space:get(id)[6]) do
            opts[k] = v
        end
        opts.is_sync = true
        local ok, err = pcall(box.space._space.update, box.space._space, id,
                              {{'=', 6, opts}})
        if not ok then
            log.warn('gloaddriver: space %s stays asynchronous: %s', s.name, tostring(err))
        end
    end
end
"""

_REPLICA_INIT = """
local ok, err = pcall(dofile, %(path)s)
if not ok then
    log.warn('gloaddriver: the init file on a read-only member: %%s', tostring(err))
end
"""

# One look at a member: id, uuid, ro, status, vclock as {id, lsn} pairs (no component 0,
# the member's local rows), upstreams as {id, status, lag, message}, whether it has the
# space.
_INFO = u"""
local vclock, upstreams = {}, {}
for id, lsn in pairs(box.info.vclock) do
    if id ~= 0 then
        table.insert(vclock, {id, lsn})
    end
end
for id, r in pairs(box.info.replication) do
    local u = r.upstream
    if u ~= nil then
        table.insert(upstreams, {id, u.status, u.lag or box.NULL, u.message or box.NULL})
    end
end
return box.info.id, box.info.uuid, box.info.ro, box.info.status, vclock, upstreams,
       box.space[...] ~= nil
"""


# IPROTO requests the member took from clients: box.stat()'s per-type counters would also
# count the rows a replica applies from its leader.
_REQUESTS = u"return box.stat.net().REQUESTS.total"


class Info(object):
    """What ``_INFO`` saw on a member."""

    def __init__(self, row):
        self.id, self.uuid, self.ro, self.status = row[0], row[1], row[2], row[3]
        self.vclock = dict((int(i), int(lsn)) for i, lsn in row[4])
        self.upstreams = dict((int(u[0]), (u[1], u[2], u[3])) for u in row[5])
        self.has_space = bool(row[6])

    @property
    def position(self):
        return sum(self.vclock.values())

    def follows(self, member_id):
        return self.upstreams.get(member_id, (None,))[0] == 'follow'

    def beyond(self, other):
        """The components where this member has rows ``other`` (a vclock) has not."""
        return dict((i, lsn) for i, lsn in self.vclock.items() if lsn > other.get(i, 0))


def _one_line(e):
    return ' '.join(str(e).split())


class TarantoolMember(TarantoolServer):
    """One member: the role it boots with is set before each boot (``read_only``, whether
    it makes the schema, whom it joins, the mesh it is given)."""

    name = 'tarantool-member'

    def __init__(self, label, space, wal_mode, password, synchro_quorum, sync,
                 init_file=None):
        TarantoolServer.__init__(self, space=space, wal_mode=wal_mode, init_file=init_file)
        self.label = label
        if password is not None:
            self.password = password   # the set's: every member has the same
        self.synchro_quorum = synchro_quorum
        self.sync = sync
        self.read_only = True
        self.boot_peers = []      # ports in box.cfg.replication at boot (whom it joins)
        self.mesh = None          # ports the fiber replicates from after box.cfg, or None
        self.uuid = None          # box.cfg.instance_uuid (a rebootstrap keeps it)
        self.instance_id = None   # box.info.id, once seen
        self.rebootstraps = 0     # times its data was dropped and joined again

    def _prepare(self):
        pass   # the init is written at each boot, for the role of that boot

    def _boot(self, timeout):
        self._write_init()
        TarantoolServer._boot(self, timeout)

    def _write_init(self):
        role = ''
        if not self.read_only:
            role = _LEADER_SETUP % {
                'user': self.user, 'space': _lua_string(self.space),
                'sync': 'true' if self.sync else 'false',
                'user_init': 'dofile(%s)' % _lua_string(self.init_file) if self.init_file
                else ''}
            if self.sync:
                role += _MAKE_SYNC
        elif self.init_file:
            role = _REPLICA_INIT % {'path': _lua_string(self.init_file)}
        text = _MEMBER_INIT % {
            'user': self.user, 'port': self.port, 'work_dir': _lua_string(self.work_dir),
            'wal_mode': self.wal_mode, 'memtx_memory': self.memtx_memory,
            'readahead': self.readahead, 'net_msg_max': self.net_msg_max,
            'uuid': ('\n    instance_uuid = %s,' % _lua_string(self.uuid)) if self.uuid else '',
            'read_only': 'true' if self.read_only else 'false',
            'boot_peers': ', '.join(str(p) for p in self.boot_peers),
            'connect_quorum': 1 if self.boot_peers else 0,
            'connect_timeout': repr(CONNECT_TIMEOUT),
            'synchro_quorum': self.synchro_quorum, 'synchro_timeout': repr(SYNCHRO_TIMEOUT),
            'mesh': ('gloaddriver_replicate({%s})' % ', '.join(str(p) for p in self.mesh)
                     if self.mesh is not None else ''),
            'role': role}
        with open(os.path.join(self.work_dir, 'init.lua'), 'w') as f:
            f.write(text)

    def wipe_data(self):
        """Remove its snapshots, logs and vinyl files (for a rebootstrap; server down)."""
        for name in os.listdir(self.work_dir):
            if name in _KEEP:
                continue
            path = os.path.join(self.work_dir, name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)


class TarantoolReplicaSet(replicaset.ReplicaSet):
    """A Tarantool leader and ``replicas`` replicas in a full mesh (module docstring)."""

    name = 'tarantool replica set'

    def __init__(self, replicas, mode, space='gloaddriver', wal_mode='write', init_file=None):
        replicaset.ReplicaSet.__init__(self, replicas, mode)
        if mode == 'remote_apply':
            raise errors.ConfigError("--replication remote_apply is PostgreSQL's; Tarantool "
                                     "has async and sync")
        if mode not in MODES:
            raise errors.ConfigError('--replication must be one of %s, not %r'
                                     % (', '.join(MODES), mode))
        self.space = space
        self.wal_mode_asked = wal_mode
        self.wal_mode = 'write' if wal_mode == 'none' else wal_mode
        self.init_file = os.path.abspath(init_file) if init_file else None
        self.sync = mode == 'sync'
        self.majority = (replicas + 1) // 2 + 1
        self.quorum_rule = None   # MAJORITY or MEMBERS_UP, by the leader's version
        self.version = None       # box.info.version of the first leader
        self.host = '127.0.0.1'
        self.user = None
        self.password = None
        self._meshed = set()      # members (by index) in every live member's replication

    # -- settings -------------------------------------------------------------------------

    def settings(self):
        s = replicaset.ReplicaSet.settings(self)
        s['wal_mode'] = self.wal_mode
        if self.wal_mode != self.wal_mode_asked:
            s['wal_mode_asked'] = self.wal_mode_asked
            s['wal_mode_note'] = "raised from %r: replication reads the WAL" % self.wal_mode_asked
        s['replication_topology'] = 'full mesh'
        s['tarantool_version'] = self.version
        if self.sync:
            s['replication_synchro_quorum'] = self._quorum()
            s['replication_synchro_quorum_rule'] = (
                'a majority (%d)' % self.majority if self.quorum_rule == MAJORITY else
                'every member up, at least a majority (%d): before 2.6.1 a commit '
                'acknowledged by more members than the quorum can hang' % self.majority)
            s['replication_synchro_timeout'] = SYNCHRO_TIMEOUT
        return s

    # -- looking at members ---------------------------------------------------------------

    def _eval(self, member, lua, args=(), seconds=INFO_SECONDS):
        """``lua`` on ``member`` over a connection of its own, bounded by ``seconds``;
        raises a GloadError (a member that does not answer: RequestTimeout)."""
        from gloaddriver.backends.tarantool.connection import Connection
        timer = gevent.Timeout(seconds + 1.0, errors.RequestTimeout(
            'no answer from %s (%s) within %.0f s' % (member.label, member.uri, seconds)))
        timer.start()
        conn = None
        try:
            conn = Connection(member.host, member.port, member.user, member.password,
                              timeout=seconds, connect_timeout=seconds, reconnect=False,
                              name='tarantool-replicaset').connect()
            return conn.eval(lua, list(args))
        finally:
            if conn is not None:
                conn.close()
            timer.close()

    def _info(self, member, seconds=INFO_SECONDS):
        info = Info(self._eval(member, _INFO, [self.space], seconds))
        member.instance_id = info.id
        member.uuid = info.uuid
        return info

    def _try_info(self, member, seconds=INFO_SECONDS):
        """``_info``, or None when the member does not answer."""
        try:
            return self._info(member, seconds)
        except errors.GloadError:
            return None

    def _wait(self, what, check, deadline, member=None):
        """Poll ``check()`` (a GloadError counts as not yet) until it returns true."""
        last = None
        while True:
            try:
                if check():
                    return
            except errors.GloadError as e:
                last = _one_line(e)
            if time.time() > deadline:
                raise errors.SetupError('tarantool replica set: %s not within the time%s%s' % (
                    what, ': %s' % last if last else '',
                    ' | %s' % tail(member._log_path()) if member is not None else ''))
            gevent.sleep(0.05)

    def _up(self, also=None):
        """The members that take part now: in the mesh, neither down nor paused."""
        return [m for i, m in enumerate(self.members)
                if (i in self._meshed or m is also) and i not in self._down
                and i not in self._paused]

    # -- the mesh and the quorum ----------------------------------------------------------

    def _mesh_ports(self):
        return [m.port for i, m in enumerate(self.members)
                if i in self._meshed and i not in self._down]

    def _set_mesh(self, members):
        """Give ``members`` the mesh now (applied by their fiber: returns at once); those
        that have it already are left alone (a new list reconnects every link)."""
        ports = self._mesh_ports()
        for m in members:
            if m.mesh != ports:
                self._eval(m, u'gloaddriver_replicate(...)', [ports])
                m.mesh = ports

    def _wait_mesh(self, members, deadline):
        """Until each of ``members`` follows every other member of the mesh."""
        meshed = [self.members[i] for i in sorted(self._meshed) if i not in self._down]
        for m in members:
            want = [o for o in meshed if o is not m]

            def check(m=m, want=want):
                info = self._info(m)
                missing = [o.label for o in want if not info.follows(o.instance_id)]
                if missing:
                    raise errors.SetupError('%s does not follow %s: %s' % (
                        m.label, ', '.join(missing), info.upstreams))
                return True
            self._wait('%s (%s) replicating from the mesh' % (m.label, m.uri), check,
                       deadline, m)

    def _wait_caught_up(self, member, deadline):
        """Until ``member`` is read-only, has the space and has the leader's rows of now."""
        leader = self.leader or self.members[0]
        target = self._info(leader).vclock

        def check():
            info = self._info(member)
            return (info.ro and info.has_space and info.follows(leader.instance_id)
                    and not any(info.vclock.get(i, 0) < lsn for i, lsn in target.items()))
        self._wait('%s (%s) caught up with %s' % (member.label, member.uri, leader.label),
                   check, deadline, member)

    def _quorum(self, also=None):
        """replication_synchro_quorum now (module docstring: the quorum)."""
        if self.quorum_rule == MAJORITY:
            return self.majority
        return max(self.majority, len(self._up(also)))

    def _adjust_quorum(self, also=None, skip=None):
        """Give the live members but ``skip`` (still paused) the quorum of now (sync
        mode); one that does not answer gets it at its next boot or promotion."""
        if not self.sync or self.quorum_rule is None:
            return
        q = self._quorum(also)
        for m in self._up(also):
            if m is not skip and m.synchro_quorum != q:
                try:
                    self._eval(m, u'box.cfg{replication_synchro_quorum = ...}', [q])
                except errors.GloadError:
                    continue
                m.synchro_quorum = q

    # -- what ReplicaSet asks -------------------------------------------------------------

    def _member(self, label):
        m = TarantoolMember(label, self.space, self.wal_mode, self.password,
                            self.replica_count + 1, self.sync, init_file=self.init_file)
        self.user, self.password = m.user, m.password
        return m

    def _start_members(self, timeout):
        deadline = time.time() + timeout

        def left():
            return max(deadline - time.time(), 1.0)
        # Every first boot has the quorum of all members: all of them are coming.
        leader = self._member('s0')
        leader.read_only = False
        self.members.append(leader)
        leader.start(left())
        self.version = self._eval(leader, u'return box.info.version')[0]
        self.quorum_rule = MAJORITY if _version(self.version) >= FIXED_IN else MEMBERS_UP
        self._info(leader)
        # One after the other: each joins the leader alone.
        for i in range(1, self.replica_count + 1):
            m = self._member('s%d' % i)
            m.boot_peers = [leader.port]
            self.members.append(m)
            m.start(left())
            self._info(m)
        self._meshed = set(range(len(self.members)))
        self._set_mesh(self.members)
        self._wait_mesh(self.members, deadline)
        for m in self.members[1:]:
            self._wait_caught_up(m, deadline)
        self._adjust_quorum()

    def _position(self, member):
        info = self._try_info(member)
        return -1 if info is None else info.position

    def _promote(self, member, others):
        deadline = time.time() + PROMOTE_SECONDS
        # Every row a live replica has must be on the new leader first (the full mesh
        # brings them): it confirms what it has, and the others follow it.
        def has_all():
            mine = self._info(member)
            late = []
            for o in others:
                theirs = self._try_info(o)
                if theirs is not None and theirs.beyond(mine.vclock):
                    late.append('%s %s' % (o.label, theirs.vclock))
            if late:
                raise errors.SetupError('its vclock %s is behind %s' % (
                    mine.vclock, ', '.join(late)))
            return True
        self._wait('%s (%s) has the rows of the other replicas' % (member.label, member.uri),
                   has_all, deadline, member)
        # The mesh narrows to the live members: one dead or paused now may have rows the
        # new leader has not; it comes back through _rejoin.
        self._meshed = set(self._index(m) for m in [member] + list(others))
        lua = u'box.cfg{read_only = false}'
        if self.sync:
            # 2.6.0's clear_synchro_queue() confirms up to the quorum-th highest of what
            # the members it relays to have acknowledged to it, and rolls back the rest:
            # an acknowledged write that the others have not yet acknowledged to it would
            # go. With a quorum of 1 it confirms its whole queue. (It first waits twice
            # the synchro timeout for the dead leader's CONFIRM.)
            q = self._quorum()
            lua = (u'box.cfg{replication_synchro_quorum = 1, '
                   u'replication_synchro_timeout = %r}\n'
                   u'local ok, err = pcall(box.ctl.clear_synchro_queue)\n'
                   u'box.cfg{replication_synchro_quorum = %d, '
                   u'replication_synchro_timeout = %r}\n'
                   u'if not ok then error(err) end\n' % (CLEAR_SYNCHRO_TIMEOUT, q,
                                                        SYNCHRO_TIMEOUT) + lua)
            member.synchro_quorum = q
        try:
            self._eval(member, lua, seconds=PROMOTE_SECONDS)
        except errors.GloadError as e:
            raise errors.SetupError('promote %s (%s): %s | %s' % (
                member.label, member.uri, _one_line(e), tail(member._log_path())))
        member.read_only = False
        for m in others:
            m.read_only = True
        if self.init_file:
            # What the init file could not do on a read-only member.
            try:
                self._eval(member, u'local ok, err = pcall(dofile, ...) '
                                   u'if not ok then require("log").warn('
                                   u'"gloaddriver: the init file at promotion: %s", '
                                   u'tostring(err)) end', [self.init_file])
            except errors.GloadError:
                pass
        self._wait('%s (%s) writable' % (member.label, member.uri),
                   lambda: not self._info(member).ro, deadline, member)
        self.leader = member   # the base sets it too, after us
        self._adjust_quorum()
        followers = []
        for m in others:
            try:
                self._set_mesh([m])
                followers.append(m)
            except errors.GloadError:
                continue   # not answering: lag() misses it
        try:
            self._set_mesh([member])
        except errors.GloadError:
            pass
        # Return once the others follow it (a synchronous commit waits for them); one
        # that does not is seen missing from lag().
        try:
            self._wait_mesh(followers, deadline)
        except errors.SetupError:
            pass

    def _start_member_again(self, member, as_leader, timeout):
        deadline = time.time() + timeout

        def left():
            return max(deadline - time.time(), 1.0)
        index = self._index(member)
        member.boot_peers = []
        member.read_only = not as_leader
        if as_leader:
            # Its data is the reference: it boots in the mesh (the replicas' acks are
            # there for what its init file writes).
            self._down.discard(index)
            member.mesh = self._mesh_ports()
            member.synchro_quorum = self._quorum()
            try:
                member.start_again(left())
                self._info(member)
            except BaseException:
                member.kill()
                self._down.add(index)
                raise
            self._adjust_quorum()
            return
        member.mesh = None   # alone first: nobody replicates from it, it from nobody
        member.synchro_quorum = self._quorum(also=member)
        try:
            member.start_again(left())
        except BaseException:
            member.kill()
            raise
        self._rejoin(member, deadline)

    def _rejoin(self, member, deadline):
        """Put a live member back in the mesh as a replica of the leader; when its data may
        have left the leader's history (it was left out of the mesh at a promotion), it is
        compared with the leader's first, and rebootstrapped if it did. Killed if that
        fails."""
        def left():
            return max(deadline - time.time(), 1.0)
        index = self._index(member)
        leader = self.leader
        leader_up = self._index(leader) not in self._down
        was_meshed = index in self._meshed
        try:
            if not was_meshed and not leader_up:
                raise errors.SetupError('the leader %s (%s) is down: nothing to compare its '
                                        'data with' % (leader.label, leader.uri))
            # It counts in the quorum before it acknowledges anything (2.6.0: see the
            # module docstring), so the leader's commits wait for it to catch up.
            self._down.discard(index)
            self._meshed.add(index)
            self._adjust_quorum()
            if not was_meshed:
                mine = self._info(member)
                if mine.beyond(self._info(leader).vclock):
                    # Its history left the leader's: join again, as the same instance.
                    member.kill()
                    member.wipe_data()
                    member.uuid = mine.uuid
                    member.boot_peers = [leader.port]
                    member.mesh = None
                    member.start_again(left())
                    member.rebootstraps += 1
            self._set_mesh([member] + [m for m in self._up() if m is not member])
            if leader_up:
                self._wait_mesh([member, leader], deadline)
                self._wait_caught_up(member, deadline)
            else:   # no leader to catch up with (a promotion will choose one)
                self._wait_mesh([member], deadline)
        except BaseException as e:
            member.kill()
            self._down.add(index)
            if not was_meshed:
                self._meshed.discard(index)
            self._adjust_quorum()
            if isinstance(e, errors.GloadError):
                raise errors.SetupError('start %s (%s) as a replica of %s: %s' % (
                    member.label, member.uri, leader.label, _one_line(e)))
            raise

    # -- faults that change who takes part ------------------------------------------------

    def kill(self, target=replicaset.LEADER):
        m = replicaset.ReplicaSet.kill(self, target)
        self._paused.discard(self._index(m))   # a paused member killed is down, not paused
        self._adjust_quorum()
        return m

    def pause(self, target=replicaset.LEADER):
        m = replicaset.ReplicaSet.pause(self, target)
        self._adjust_quorum()
        return m

    def resume(self, target=replicaset.LEADER):
        m = self.member(target, 'cont')
        index = self._index(m)
        if index in self._meshed or self.leader is None:
            # Counted before it runs again (its acknowledgements come at once).
            self._paused.discard(index)
            self._adjust_quorum(skip=m)
            return replicaset.ReplicaSet.resume(self, target)
        # Left out of the mesh at a promotion: it may have rows the new leader has not.
        self._paused.discard(index)
        self._adjust_quorum(also=m, skip=m)
        replicaset.ReplicaSet.resume(self, target)
        self._rejoin(m, time.time() + 60)
        return m

    def _requests(self, member):
        """The IPROTO requests ``member`` has taken from clients (box.stat.net(); the
        samplers' own evals among them)."""
        return self._on_sampling_connection(member, lambda c: c.eval(_REQUESTS)[0])

    def _sampling_connection(self, member):
        from gloaddriver.backends.tarantool.connection import Connection
        return Connection(member.host, member.port, member.user, member.password,
                          timeout=INFO_SECONDS, connect_timeout=INFO_SECONDS,
                          reconnect=False, name='tarantool-replicaset-figures').connect()

    def _look(self, member):
        """What ``_INFO`` sees on ``member`` now, on its connection for the figures, or
        None when it does not answer."""
        try:
            return Info(self._on_sampling_connection(
                member, lambda c: c.eval(_INFO, [self.space]), 'lag'))
        except errors.GloadError:
            return None

    def lag(self):
        leader = self.leader
        if leader is None or self._index(leader) in self._down:
            return {}
        replicas = self._live_replicas()
        looks = [gevent.spawn(self._look, m) for m in [leader] + replicas]
        try:
            gevent.joinall(looks, timeout=INFO_SECONDS + 2.0)
        finally:
            # Killed with this greenlet too (a sample whose time ran out): none is left
            # running on its own, to meet the set's stop() with its connection.
            for g in looks:
                g.kill(block=False)
        infos = [g.value if g.successful() else None for g in looks]
        mine = infos[0]
        if mine is None:
            return {}
        own = mine.vclock.get(mine.id, 0)
        out = {}
        for m, info in zip(replicas, infos[1:]):
            if info is None:
                continue
            seconds = info.upstreams.get(mine.id, (None, None))[1]
            out[m.uri] = {'rows': max(own - info.vclock.get(mine.id, 0), 0),
                          'seconds': None if seconds is None else float(seconds)}
        return out


def _version(text):
    """(major, minor, patch) of a Tarantool version string such as 2.6.0-0-g47aa4e01e."""
    parts = []
    for word in text.split('-')[0].split('.')[:3]:
        digits = ''.join(c for c in word if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts)))
