"""A private PostgreSQL replica set (``--spawn --replicas N``): a primary and N streaming
standbys on free loopback ports, each a :class:`PostgresMember` in a temp dir of its own.

Every member has the same user, password and database, and the same settings, so that
a promoted standby is a correct primary for the others:

- in the data dir's ``postgresql.conf`` (where ``pg_rewind``'s own start of a server
  reads them too): physical replication, ``wal_keep_size`` so that a standby that falls
  behind is not dropped, ``wal_log_hints`` and ``full_page_writes`` for ``pg_rewind``,
  hot standby; with ``sync``/``remote_apply``, ``synchronous_standby_names = 'ANY 1
  (s0, s1, ...)'`` (every member's ``application_name``) and ``synchronous_commit``;
- on the command line, the single server's (``PostgresServer``), --wal-mode's without
  ``full_page_writes=off`` (pg_rewind needs them) and, in the synchronous modes,
  without ``synchronous_commit=off``.

Standbys are made with ``pg_basebackup -R`` and follow ``primary_conninfo`` in their
``postgresql.auto.conf`` (``application_name=sN``, the password from a passfile in the
member's dir: never on a command line). ``start()`` returns when every standby streams
(and, in the synchronous modes, counts for the quorum).

A promotion is ``pg_promote()`` on the chosen standby, then ``ALTER SYSTEM SET
primary_conninfo`` and a reload on each other live standby (``recovery_target_timeline``
is ``latest``). A member started again as a replica whose data may have left the
leader's history (an old primary, or a standby that was down across a promotion) is
first started as a standby of nobody and shut down (so that its data is in a clean
state), then ``pg_rewind`` against the leader.

The helper programs (pg_basebackup, pg_rewind) are started through the member's
launcher, like the servers: not counted as the driver's.
"""
from __future__ import absolute_import, division, print_function

import binascii
import io
import os
import signal
import time

from gloaddriver import errors
from gloaddriver.backends import replicaset
from gloaddriver.backends.postgres.pool import MONITOR_NAME
from gloaddriver.backends.postgres.server import (POSTGRES_DB, POSTGRES_USER, PostgresServer,
                                                  _connect)
from gloaddriver.backends.spawn import tail

SYNC_MODES = ('sync', 'remote_apply')
MODES = ('async',) + SYNC_MODES   # --replication (config.flags.REPLICATION_MODES)
WAL_KEEP_SIZE = '1GB'
_MARK = '# gloaddriver replica set'


def _conf_literal(value):
    """A string literal for postgresql.conf."""
    return "'%s'" % value.replace('\\', '\\\\').replace("'", "''")


def _conninfo_value(value):
    """A value in a libpq keyword/value connection string."""
    value = str(value)
    if value and not any(c in value for c in " '\\\t\n"):
        return value
    return "'%s'" % value.replace('\\', '\\\\').replace("'", "\\'")


def _one_line(e):
    return ' '.join(str(e).split())


class PostgresMember(PostgresServer):
    """One member of the set: the first primary is made by initdb; ``standby`` says
    whether it runs as a standby now (then ``_ready`` only waits for logins)."""

    def __init__(self, app_name, wal_mode, password, synchronous, conf, init_file=None):
        PostgresServer.__init__(self, wal_mode=wal_mode, init_file=init_file)
        self.password = password
        self.app_name = app_name
        self.synchronous = synchronous
        self.conf = list(conf)
        self.standby = False
        self.prepare_timeout = 60.0

    # -- files ----------------------------------------------------------------------------

    @property
    def data_dir(self):
        return os.path.join(self.work_dir, 'data')

    @property
    def passfile(self):
        return os.path.join(self.work_dir, 'pgpass')

    def _own(self, path):
        if self._run_as is not None:
            os.chown(path, self._run_as[0], self._run_as[1])

    def _write(self, path, text, append=False):
        with io.open(path, 'a' if append else 'w', encoding='utf-8') as f:
            f.write(text)
        self._own(path)

    def _write_passfile(self):
        self._own(self.work_dir)
        fd = os.open(self.passfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with io.open(fd, 'w', encoding='utf-8') as f:
            f.write(u'*:*:*:%s:%s\n' % (self.user, self.password))
        self._own(self.passfile)

    def append_conf(self, lines):
        self._write(os.path.join(self.data_dir, 'postgresql.conf'),
                    u'\n%s\n%s\n' % (_MARK, '\n'.join(lines)), append=True)

    def write_standby_files(self, conninfo):
        """standby.signal, and ``primary_conninfo`` in postgresql.auto.conf (server down)."""
        path = os.path.join(self.data_dir, 'postgresql.auto.conf')
        lines = []
        if os.path.exists(path):
            with io.open(path, encoding='utf-8') as f:
                lines = [l for l in f.read().splitlines()
                         if not l.strip().startswith('primary_conninfo')]
        lines.append(u'primary_conninfo = %s' % _conf_literal(conninfo))
        self._write(path, u'\n'.join(lines) + u'\n')
        self._write(os.path.join(self.data_dir, 'standby.signal'), u'')

    # -- the server -----------------------------------------------------------------------

    def _setting_args(self):
        # pg_rewind needs full page writes; a synchronous commit is the point of the
        # synchronous modes (its setting is in postgresql.conf).
        args = PostgresServer._setting_args(self)
        out = []
        for pair in args[1::2]:
            name = pair.split('=', 1)[0]
            if name == 'full_page_writes' or (name == 'synchronous_commit' and self.synchronous):
                continue
            out += ['-c', pair]
        return out

    def _prepare(self):
        self._write_passfile()
        PostgresServer._prepare(self)
        self.append_conf(self.conf)
        hba = os.path.join(self.data_dir, 'pg_hba.conf')
        with io.open(hba, encoding='utf-8') as f:
            rows = [l.split() for l in f.read().splitlines() if l.strip()[:1] not in ('', '#')]
        if not any(r[:2] == ['host', 'replication'] and r[3:4] == ['127.0.0.1/32'] for r in rows):
            self._write(hba, u'host replication all 127.0.0.1/32 scram-sha-256\n', append=True)

    def _ready(self, timeout):
        if not self.standby:
            return PostgresServer._ready(self, timeout)
        # A standby creates nothing: it only has to take logins (it is consistent then).
        import psycopg2
        deadline = time.time() + timeout
        while True:
            try:
                _connect(self.dsn).close()
                return
            except psycopg2.OperationalError as e:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise errors.SetupError('postgres standby %s did not accept logins: %s | %s'
                                            % (self.app_name, _one_line(e),
                                               tail(self._log_path())))
                time.sleep(0.1)

    def replication_conninfo(self, follower, dbname=None):
        """How ``follower`` connects to this member (its own passfile, its name)."""
        parts = [('host', self.host), ('port', self.port), ('user', self.user),
                 ('passfile', follower.passfile), ('application_name', follower.app_name),
                 ('sslmode', 'disable'), ('connect_timeout', 10)]
        if dbname:
            parts.append(('dbname', dbname))
        return ' '.join('%s=%s' % (k, _conninfo_value(v)) for k, v in parts)

    def run_tool(self, name, args, timeout):
        """Run a PostgreSQL program as the server's user through the launcher (password
        from the passfile); SetupError with its log's last lines if it fails."""
        log = os.path.join(self.work_dir, '%s.log' % name)
        env = dict(os.environ, PGPASSFILE=self.passfile)
        env.pop('PGPASSWORD', None)
        proc = self._launcher.spawn([os.path.join(self.bindir, name)] + list(args),
                                    self.work_dir, env, log, self._run_as)
        try:
            rc = proc.wait(timeout)
        except RuntimeError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)   # its own session: its children too
            except OSError:
                pass
            raise errors.SetupError('%s for %s did not finish within %.0f s: %s'
                                    % (name, self.app_name, timeout, tail(log)))
        if rc != 0:
            raise errors.SetupError('%s for %s failed (exit %s): %s'
                                    % (name, self.app_name, rc, tail(log)))

    def shutdown(self, timeout):
        """A clean ("fast") shutdown that keeps the data dir, unlike ``stop()``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except RuntimeError:
            raise errors.SetupError('postgres %s did not shut down within %.0f s: %s'
                                    % (self.app_name, timeout, tail(self._log_path())))


class PostgresStandby(PostgresMember):
    """A standby made by pg_basebackup from ``source`` instead of initdb."""

    def __init__(self, app_name, wal_mode, password, synchronous, conf, source):
        PostgresMember.__init__(self, app_name, wal_mode, password, synchronous, conf)
        self.source = source
        self.standby = True

    def _check(self):
        PostgresMember._check(self)
        if not os.path.exists(os.path.join(self.bindir, 'pg_basebackup')):
            raise errors.SetupError('no pg_basebackup in %s: a replica set needs it '
                                    '(apt-get install -y postgresql)' % self.bindir)

    def _prepare(self):
        self._write_passfile()
        conninfo = self.source.replication_conninfo(self)
        self.run_tool('pg_basebackup', ['-D', self.data_dir, '-d', conninfo, '-X', 'stream',
                                        '-c', 'fast', '--no-sync', '-R', '-w'],
                      self.prepare_timeout)
        self.write_standby_files(conninfo)   # ours, whatever -R wrote


class PostgresReplicaSet(replicaset.ReplicaSet):
    """A PostgreSQL primary and ``replicas`` streaming standbys (module docstring)."""

    name = 'postgres replica set'

    def __init__(self, replicas, mode, wal_mode='none', init_file=None):
        replicaset.ReplicaSet.__init__(self, replicas, mode)
        if mode not in MODES:
            raise errors.ConfigError('--replication must be one of %s, not %r'
                                     % (', '.join(MODES), mode))
        self.wal_mode = wal_mode
        self.init_file = init_file
        self.host = '127.0.0.1'
        self.user = POSTGRES_USER
        self.database = POSTGRES_DB
        self.password = binascii.hexlify(os.urandom(12)).decode('ascii')
        self.synchronous = mode in SYNC_MODES
        self._upstream = {}   # member index -> the member whose history its data follows

    # -- settings -------------------------------------------------------------------------

    def _names(self):
        return ['s%d' % i for i in range(self.replica_count + 1)]

    def _conf(self):
        senders = max(10, 2 * (self.replica_count + 1))
        return ['wal_level = replica', 'max_wal_senders = %d' % senders,
                'max_replication_slots = %d' % senders,
                'wal_keep_size = %s' % _conf_literal(WAL_KEEP_SIZE),
                'wal_log_hints = on', 'full_page_writes = on', 'hot_standby = on',
                'wal_receiver_status_interval = 1s', 'wal_retrieve_retry_interval = 1s']

    def _sync_conf(self):
        if not self.synchronous:
            return []
        return ['synchronous_standby_names = %s'
                % _conf_literal('ANY 1 (%s)' % ', '.join(self._names())),
                'synchronous_commit = %s' % ('on' if self.mode == 'sync' else 'remote_apply')]

    def settings(self):
        s = replicaset.ReplicaSet.settings(self)
        s['synchronous_standby_names'] = (
            'ANY 1 (%s)' % ', '.join(self._names()) if self.synchronous else '')
        s['synchronous_commit'] = {'sync': 'on', 'remote_apply': 'remote_apply'}.get(
            self.mode, 'off' if self.wal_mode in ('none', 'write') else 'on')
        s['replication_settings'] = ', '.join(self._conf() + self._sync_conf())
        return s

    # -- connecting -----------------------------------------------------------------------

    @property
    def dsn(self):
        """The multi-host DSN of the whole set (libpq finds the read-write member);
        password included: never print it."""
        return ('host=%s port=%s dbname=%s user=%s password=%s sslmode=disable '
                'target_session_attrs=read-write' % (
                    ','.join(m.host for m in self.members),
                    ','.join(str(m.port) for m in self.members),
                    self.database, self.user, self.password))

    def dsn_of(self, member):
        return member.dsn

    def _query(self, member, sql, params=None, seconds=5):
        """Rows of one statement on ``member`` (autocommit), bounded in time."""
        import gevent
        import psycopg2
        with gevent.Timeout(seconds, psycopg2.OperationalError(
                'no answer from %s within %s s' % (member.uri, seconds))):
            # Named as the driver's sampling connections are: not counted as load.
            conn = _connect(member.dsn + ' application_name=' + MONITOR_NAME, seconds)
            try:
                conn.autocommit = True
                cur = conn.cursor()
                cur.execute(sql, params)
                return cur.fetchall() if cur.description else []
            finally:
                conn.close()

    def _streaming(self, leader, since):
        """{application_name: (sync_state, caught up)} of the standbys streaming from
        ``leader``; caught up: flushed up to ``since`` (an LSN as an integer)."""
        rows = self._query(leader, "SELECT application_name, sync_state, "
                                   "pg_wal_lsn_diff(flush_lsn, '0/0') >= %s "
                                   "FROM pg_stat_replication WHERE state = 'streaming'",
                           (since,))
        return dict((name, (state, bool(done))) for name, state, done in rows)

    def _wait_streaming(self, leader, followers, deadline, quorum=False):
        """Until each of ``followers`` streams from ``leader`` (and, with ``quorum``, counts
        for the synchronous quorum); past the deadline, SetupError for the first that
        does not. Until each has also flushed the WAL the leader had written when this
        began (so that a timeline switch is behind it), but one that streams yet is still
        behind at the deadline is no error: under load it may take a while."""
        import psycopg2
        last, since = 'no answer', None
        while True:
            missing = behind = followers
            try:
                if since is None:
                    since = int(self._query(
                        leader, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")[0][0])
                found = self._streaming(leader, since)
                missing = [m for m in followers if m.app_name not in found or
                           (quorum and found[m.app_name][0] not in ('sync', 'quorum'))]
                behind = [m for m in followers if not found.get(m.app_name, (0, False))[1]]
                if not missing and not behind:
                    return
                last = '%s not streaming' % ', '.join(m.app_name for m in missing or behind)
            except psycopg2.Error as e:
                last = _one_line(e)
            if time.time() > deadline:
                if not missing:
                    return
                m = missing[0]
                raise errors.SetupError(
                    'postgres standby %s (%s) does not stream from %s (%s): %s | %s' % (
                        m.app_name, m.uri, leader.app_name, leader.uri, last,
                        tail(m._log_path())))
            time.sleep(0.1)

    # -- what ReplicaSet asks -------------------------------------------------------------

    def _start_members(self, timeout):
        deadline = time.time() + timeout

        def left():
            return max(deadline - time.time(), 1.0)
        primary = PostgresMember('s0', self.wal_mode, self.password, self.synchronous,
                                 self._conf(), init_file=self.init_file)
        self.members.append(primary)
        primary.start(left())
        self._upstream[0] = primary
        if self.synchronous:
            # In the file now, so that the standbys copy it; read by the primary only once
            # they stream (the database and the user's schema are made without them).
            primary.append_conf(self._sync_conf())
        for i in range(1, self.replica_count + 1):
            standby = PostgresStandby('s%d' % i, self.wal_mode, self.password,
                                      self.synchronous, self._conf(), primary)
            standby.prepare_timeout = left()
            self.members.append(standby)
            standby.start(left())
            self._upstream[i] = primary
        standbys = self.members[1:]
        self._wait_streaming(primary, standbys, deadline)
        if self.synchronous:
            self._query(primary, 'SELECT pg_reload_conf()')
            self._wait_streaming(primary, standbys, deadline, quorum=True)

    def _position(self, member):
        import psycopg2
        try:
            rows = self._query(member, "SELECT pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() "
                                       "THEN GREATEST(pg_last_wal_receive_lsn(), "
                                       "pg_last_wal_replay_lsn()) ELSE pg_current_wal_lsn() END, "
                                       "'0/0')", seconds=3)
        except psycopg2.Error:
            return -1
        value = rows[0][0]
        return -1 if value is None else int(value)

    def _promote(self, member, others):
        import psycopg2
        try:
            (done,), = self._query(member, 'SELECT pg_promote(true, 60)', seconds=75)
        except psycopg2.Error as e:
            raise errors.SetupError('promote %s (%s): %s' % (member.app_name, member.uri,
                                                             _one_line(e)))
        if not done:
            raise errors.SetupError('promote %s (%s): not promoted within 60 s: %s'
                                    % (member.app_name, member.uri, tail(member._log_path())))
        member.standby = False
        index = self._index(member)
        self._upstream[index] = member
        followers = []
        for other in others:
            try:
                self._query(other, 'ALTER SYSTEM SET primary_conninfo = %s',
                            (member.replication_conninfo(other),))
                self._query(other, 'SELECT pg_reload_conf()')
            except psycopg2.Error:
                continue   # not answering: it is not following anyone now
            self._upstream[self._index(other)] = member
            followers.append(other)
        # Return once they stream from it (in the synchronous modes a commit waits for
        # one of them); one that does not is seen missing from lag().
        try:
            self._wait_streaming(member, followers, time.time() + 30)
        except errors.SetupError:
            pass

    def _start_member_again(self, member, as_leader, timeout):
        deadline = time.time() + timeout

        def left():
            return max(deadline - time.time(), 1.0)
        index = self._index(member)
        if as_leader:
            member.standby = False
            member.start_again(left())
            self._upstream[index] = member
            return
        leader = self.leader
        try:
            if self._upstream.get(index) is not leader:
                self._rewind(member, leader, left)
            member.write_standby_files(leader.replication_conninfo(member))
            member.standby = True
            member.start_again(left())
            self._wait_streaming(leader, [member], deadline)
        except (errors.SetupError, EnvironmentError, RuntimeError) as e:
            member.kill()
            raise errors.SetupError('start %s (%s) as a replica of %s: %s' % (
                member.app_name, member.uri, leader.app_name, _one_line(e)))
        self._upstream[index] = leader

    def _rewind(self, member, leader, left):
        """Bring a member whose data may have left the leader's history back onto it."""
        # pg_rewind wants a cleanly shut down target. Started as a standby of nobody, the
        # member replays its own WAL to the end, and a fast shutdown then leaves it "shut
        # down in recovery" (a crashed primary would otherwise end its crash recovery with
        # a checkpoint record of its own).
        member.write_standby_files('')
        member.standby = True
        member.start_again(left())
        member.shutdown(left())
        # PostgreSQL 15's pg_rewind reads the source's timeline from its control file,
        # which a promotion updates only at the checkpoint that follows it.
        import psycopg2
        try:
            self._query(leader, 'CHECKPOINT', seconds=max(left(), 5))
        except psycopg2.Error as e:
            raise errors.SetupError('CHECKPOINT on the leader %s before pg_rewind: %s'
                                    % (leader.app_name, _one_line(e)))
        member.run_tool('pg_rewind', ['-D', member.data_dir, '--source-server',
                                      leader.replication_conninfo(member, dbname='postgres'),
                                      '--no-sync'], left())

    lag_unit = 'bytes'

    def _requests(self, member):
        """The transactions ``member`` has run for clients (pg_stat_database of the
        database: commits and rollbacks, a standby's read-only ones included; the
        samplers' own queries among them)."""
        rows = self._sampled(member, 'SELECT xact_commit + xact_rollback FROM '
                                     'pg_stat_database WHERE datname = current_database()')
        return int(rows[0][0]) if rows else None

    def _sampling_connection(self, member):
        # Named as the driver's sampling connections are: not counted as load.
        conn = _connect(member.dsn + ' application_name=' + MONITOR_NAME, 3)
        conn.autocommit = True
        return conn

    def _sampled(self, member, sql, slot='requests'):
        """The rows of ``sql`` on the member's connection for the figures."""
        def run(conn):
            cur = conn.cursor()
            try:
                cur.execute(sql)
                return cur.fetchall()
            finally:
                cur.close()
        return self._on_sampling_connection(member, run, slot)

    def lag(self):
        import psycopg2
        leader = self.leader
        if leader is None:
            return {}
        try:
            rows = self._sampled(leader, 'SELECT application_name, pg_wal_lsn_diff('
                                         'pg_current_wal_lsn(), replay_lsn), '
                                         'EXTRACT(EPOCH FROM replay_lag) '
                                         'FROM pg_stat_replication', 'lag')
        except psycopg2.Error:
            return {}
        by_name = dict((m.app_name, m) for m in self.members)
        out = {}
        for name, behind, seconds in rows:
            m = by_name.get(name)
            if m is None or m is leader:
                continue
            out[m.uri] = {'bytes': None if behind is None else max(int(behind), 0),
                          'seconds': None if seconds is None else float(seconds)}
        return out
