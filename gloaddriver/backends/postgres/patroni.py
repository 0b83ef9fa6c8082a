"""A private Patroni cluster (``--spawn --replicas N --ha patroni``): one etcd
(``etcd.Etcd``) and one Patroni per member, each on free loopback ports (PostgreSQL's
and Patroni's REST API's) in a temporary directory of its own, as the unprivileged
user the plain replica set's members run as, under a scope made fresh for the run.

Patroni (Debian's 3.0.2) runs every PostgreSQL itself: the first member bootstraps
(initdb) and takes the leader key, the others clone it (pg_basebackup) and stream.
Then the driver makes the database, hstore and --spawn-init on the leader, as for a
single server. Nobody but Patroni promotes: a killed leader's key expires after
``ttl``, a replica takes it and promotes itself; ``switchover`` is a POST to its REST
API. The settings a user chooses (``--ha-preset``, ``--ha-setting``) go into the
DCS's configuration at bootstrap; ``--replication sync`` is Patroni's
``synchronous_mode`` (its ``_strict`` variant refuses writes while no synchronous
standby is there, rather than go on unreplicated).

Patroni starts each postmaster through a short-lived process of its own, so that a
postmaster is no descendant of its Patroni: a member's processes are its Patroni and
the postmaster named in the data directory's ``postmaster.pid`` (with its backends).
A kill (``kill-leader``) is SIGKILL to both at once, as a machine's loss would be;
``stop()`` asks Patroni to stop its PostgreSQL (SIGTERM) and kills what is left after
it; the reaper is told of each postmaster as it is seen, so that a killed driver
leaves none running.

``watch_ha`` polls, every WATCH_PERIOD, each member's ``/patroni`` (its own role,
readable without the DCS) and one member's ``/cluster`` (who holds the leader key),
and HAProxy's statistics when it is in front; what changed is an event with its time:
``leader-lost`` (no member holds the key), ``leader-elected`` (another does),
``promoted`` and ``demoted`` (a member's own role), ``proxy-admitted`` and
``proxy-dropped`` (HAProxy's check on a member's REST API).
"""
from __future__ import absolute_import, division, print_function

import binascii
import io
import json
import os
import signal
import time

from gloaddriver import errors
from gloaddriver.backends import reaper
from gloaddriver.backends.postgres.etcd import Etcd, http
from gloaddriver.backends.postgres.replicaset import PostgresReplicaSet, WAL_KEEP_SIZE
from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.backends.spawn import free_port, tail, which
from gloaddriver.measure import procfs

# --ha-preset: fast for tests and for a failover measured in seconds; normal is
# Patroni's own defaults; safe rides out longer DCS and network hiccups. Each keeps
# ttl >= loop_wait + 2 * retry_timeout (Patroni's rule for a leader to renew its key).
PRESETS = {
    'fast': (('ttl', 10), ('loop_wait', 1), ('retry_timeout', 3),
             ('primary_start_timeout', 10)),
    'normal': (('ttl', 30), ('loop_wait', 10), ('retry_timeout', 10),
               ('primary_start_timeout', 300)),
    'safe': (('ttl', 60), ('loop_wait', 10), ('retry_timeout', 20),
             ('primary_start_timeout', 300)),
}
DEFAULT_PRESET = 'normal'
NUMBERS = ('ttl', 'loop_wait', 'retry_timeout', 'primary_start_timeout')
SWITCHES = ('synchronous_mode', 'synchronous_mode_strict')
SETTINGS = NUMBERS + SWITCHES
WATCH_PERIOD = 0.5
STOP_WAIT = 30.0
DCS = 'dcs'              # the fault target (converters.FAULT_DCS)
_PRIMARY_ROLES = ('master', 'primary')


def _switch(name, text):
    value = text.strip().lower()
    if value in ('on', 'true', 'yes', '1'):
        return True
    if value in ('off', 'false', 'no', '0'):
        return False
    raise errors.ConfigError('--ha-setting %s=%s: say on or off' % (name, text))


def choose_settings(preset, given, replication):
    """{setting: value} of --ha-preset (normal if none), --ha-setting NAME=VALUE...
    and --replication, checked; ConfigError (exit 2) with one line when wrong."""
    if preset is not None and preset not in PRESETS:
        raise errors.ConfigError('--ha-preset must be one of %s, not %r'
                                 % (', '.join(sorted(PRESETS)), preset))
    out = dict(PRESETS[preset or DEFAULT_PRESET])
    sync = replication in ('sync', 'remote_apply')
    out['synchronous_mode'], out['synchronous_mode_strict'] = sync, False
    for item in given or ():
        name, sep, value = item.partition('=')
        name = name.strip().lower()
        if not sep or name not in SETTINGS:
            raise errors.ConfigError('--ha-setting %s: write NAME=VALUE with NAME one of %s'
                                     % (item, ', '.join(SETTINGS)))
        if name in SWITCHES:
            out[name] = _switch(name, value)
            continue
        try:
            out[name] = int(value)
        except ValueError:
            raise errors.ConfigError('--ha-setting %s: a whole number of seconds' % item)
        if out[name] < (0 if name == 'primary_start_timeout' else 1):
            raise errors.ConfigError('--ha-setting %s: too small' % item)
    if out['synchronous_mode_strict']:
        out['synchronous_mode'] = True
    if out['synchronous_mode'] != sync:
        raise errors.ConfigError(
            '--ha-setting synchronous_mode=%s contradicts --replication %s: --replication '
            'sync (or remote_apply) is Patroni\'s synchronous_mode'
            % ('on' if out['synchronous_mode'] else 'off', replication or 'async'))
    if out['ttl'] < out['loop_wait'] + 2 * out['retry_timeout']:
        raise errors.ConfigError(
            '--ha-setting: ttl %d is below loop_wait + 2 x retry_timeout (%d): the leader '
            'could lose its key while it is still retrying the DCS'
            % (out['ttl'], out['loop_wait'] + 2 * out['retry_timeout']))
    return out


def missing_programs():
    """What --ha patroni needs and this machine lacks (Debian's package names)."""
    return [pkg for prog, pkg in (('patroni', 'patroni'), ('etcd', 'etcd-server'))
            if not which(prog) and not os.path.exists('/usr/bin/' + prog)]


def _role(body):
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


class PatroniMember(PostgresServer):
    """One Patroni and the PostgreSQL it runs (module docstring)."""

    name = 'patroni'

    def __init__(self, cluster, app_name):
        PostgresServer.__init__(self, wal_mode=cluster.wal_mode, init_file=cluster.init_file)
        self.cluster = cluster
        self.app_name = app_name
        self.password = cluster.password
        self.api_port = None
        self.first = False            # the bootstrapping member: makes the database
        self.binary = which('patroni') or '/usr/bin/patroni'
        self._postmasters = {}        # pid -> start time, of each postmaster seen

    @property
    def api_url(self):
        return 'http://%s:%d' % (self.host, self.api_port)

    @property
    def data_dir(self):
        return os.path.join(self.work_dir, 'data')

    def settings(self):
        # Its settings are Patroni's (the set's replication_settings), not --wal-mode's -c.
        return dict(PostgresServer.settings(self), settings='patroni\'s')

    # -- files ----------------------------------------------------------------------------

    def _check(self):
        PostgresServer._check(self)
        if not os.path.exists(self.binary):
            raise errors.SetupError('no patroni found; install it (apt-get install -y '
                                    'patroni) or leave out --ha')

    def _config(self):
        c = self.cluster
        auth = {'username': self.user, 'password': self.password}
        return {
            'scope': c.scope, 'namespace': '/gloaddriver/', 'name': self.app_name,
            'restapi': {'listen': '%s:%d' % (self.host, self.api_port),
                        'connect_address': '%s:%d' % (self.host, self.api_port)},
            'etcd3': {'hosts': c.etcd.uri},
            'bootstrap': {
                'dcs': c.dcs_config(),
                'initdb': [{'encoding': 'UTF8'}, {'locale': 'C'},
                           {'auth-host': 'scram-sha-256'}, {'auth-local': 'scram-sha-256'}],
                'pg_hba': ['local all all scram-sha-256',
                           'host all all 127.0.0.1/32 scram-sha-256',
                           'host replication all 127.0.0.1/32 scram-sha-256']},
            'postgresql': {
                'listen': '%s:%d' % (self.host, self.port),
                'connect_address': '%s:%d' % (self.host, self.port),
                'data_dir': self.data_dir, 'bin_dir': self.bindir,
                'pgpass': os.path.join(self.work_dir, 'pgpass'),
                # A clone waits for no spread checkpoint on the leader.
                'basebackup': [{'checkpoint': 'fast'}],
                'authentication': {'superuser': auth, 'replication': auth, 'rewind': auth},
                'parameters': {'unix_socket_directories': self.work_dir, 'ssl': 'off',
                               'shared_buffers': '256MB'}},
        }

    def _prepare(self):
        self.api_port = free_port()
        if self._run_as is not None:
            os.chown(self.work_dir, self._run_as[0], self._run_as[1])
        path = os.path.join(self.work_dir, 'patroni.yml')
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with io.open(fd, 'w', encoding='utf-8') as f:
            f.write(u'%s' % json.dumps(self._config(), indent=1))   # JSON is YAML
        if self._run_as is not None:
            os.chown(path, self._run_as[0], self._run_as[1])

    def _argv(self):
        return [self.binary, os.path.join(self.work_dir, 'patroni.yml')]

    def _env(self):
        # Debian's patroni is the system's Python 3: nothing of the driver's own
        # interpreter (a virtualenv, Python 2's paths) may reach it.
        env = dict((k, v) for k, v in os.environ.items()
                   if not k.startswith(('PYTHON', 'PG', 'PATRONI', 'VIRTUAL_ENV')))
        env['HOME'] = self.work_dir
        return env

    # -- the processes --------------------------------------------------------------------

    def postmaster(self):
        """The pid of the postmaster running now, or None (also told to the reaper)."""
        try:
            with open(os.path.join(self.data_dir, 'postmaster.pid')) as f:
                pid = int(f.readline().strip())
        except (IOError, OSError, ValueError, TypeError):
            return None
        st = reaper._stat(pid)
        if st is None or not self._in_data_dir(pid):
            return None
        if self._postmasters.get(pid) != st[1]:
            self._postmasters[pid] = st[1]
            reaper.watch_pid(pid)
        return pid

    def _in_data_dir(self, pid):
        """Whether ``pid`` runs in this member's data directory, as its postmaster does:
        postmaster.pid outlives a killed postmaster, and its pid may be another
        process's by now, which must not be told to the reaper."""
        try:
            return os.path.realpath(os.readlink('/proc/%d/cwd' % pid)) == \
                os.path.realpath(self.data_dir)
        except OSError:
            return False

    def _family(self):
        pids = [self.proc.pid] + [p for p in procfs.family(self.proc.pid)
                                  if p != self.proc.pid]
        pm = self.postmaster()
        if pm is not None:
            pids += [pm] + [p for p in procfs.family(pm) if p != pm]
        return pids

    def _wait_up(self, timeout):
        """Until its REST API answers (the postmaster comes later, or never, as
        Patroni decides)."""
        deadline = time.time() + timeout
        while True:
            status, body = http('GET', self.api_url + '/patroni', timeout=1.0)
            if status in (200, 503):
                return
            if time.time() > deadline or self.proc.poll() is not None:
                raise errors.SetupError('patroni %s did not answer on %s: %s' % (
                    self.app_name, self.api_url, tail(self._log_path())))
            time.sleep(0.1)

    def state(self, timeout=1.0):
        """Its own /patroni document, or None when it does not answer."""
        status, body = http('GET', self.api_url + '/patroni', timeout=timeout)
        return _role(body) if status in (200, 503) else None

    def _ready(self, timeout):
        """Until its PostgreSQL runs: as the leader for the first member (which then
        makes the database), in any role for the others (Patroni decides)."""
        deadline = time.time() + timeout
        while True:
            doc = self.state() or {}
            role = doc.get('role')
            if doc.get('state') == 'running' and (not self.first or role in _PRIMARY_ROLES):
                break
            if time.time() > deadline or self.proc.poll() is not None:
                raise errors.SetupError('patroni %s: PostgreSQL not running within %.0f s '
                                        '(%s %s): %s' % (self.app_name, timeout, role,
                                                         doc.get('state'),
                                                         tail(self._log_path())))
            time.sleep(0.2)
        self.postmaster()
        if self.first:
            PostgresServer._ready(self, max(deadline - time.time(), 5.0))
            self.first = False     # made once: a start again is a member's like any

    def terminate(self):
        """Ask Patroni to stop its PostgreSQL and exit (SIGTERM), without waiting."""
        if self.proc is not None and self.proc.poll() is None:
            self._signal_all(signal.SIGCONT)
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass

    def stop(self):
        if self.proc is not None:
            self.terminate()
            deadline = time.time() + STOP_WAIT
            while self.proc.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            if self.proc.poll() is None:
                self._signal_all(signal.SIGKILL)
                self.proc.wait()
        # Whatever postmaster is left (Patroni killed, or gone before its PostgreSQL),
        # and its backends: before the directory goes.
        if self.work_dir:
            self.postmaster()
        for pid, start in list(self._postmasters.items()):
            st = reaper._stat(pid)
            if st is not None and st[1] == start:
                self._signal_all(signal.SIGKILL, [pid] + list(procfs.family(pid)))
        PostgresServer.stop(self)


class PatroniSet(PostgresReplicaSet):
    """Patroni members and their etcd (module docstring)."""

    name = 'patroni replica set'

    def __init__(self, replicas, mode, ha_settings, wal_mode='none', init_file=None):
        PostgresReplicaSet.__init__(self, replicas, mode, wal_mode=wal_mode,
                                    init_file=init_file)
        self.ha = dict(ha_settings)
        self.scope = 'gloaddriver-%s' % binascii.hexlify(os.urandom(4)).decode('ascii')
        self.etcd = None
        self.version = None
        self.on_leader = []            # callables(member) told of each new primary
        self._watcher = None

    def dcs_config(self):
        """The DCS's configuration Patroni bootstraps with (the user's settings)."""
        params = {'wal_level': 'replica', 'hot_standby': 'on', 'wal_log_hints': 'on',
                  'full_page_writes': 'on', 'wal_keep_size': WAL_KEEP_SIZE,
                  'max_connections': 300, 'max_wal_senders': 10, 'max_replication_slots': 10,
                  'wal_receiver_status_interval': '1s', 'wal_retrieve_retry_interval': '1s'}
        if self.wal_mode == 'none':
            params['fsync'] = 'off'
        if self.synchronous:
            params['synchronous_commit'] = 'remote_apply' if self.mode == 'remote_apply' \
                else 'on'
        elif self.wal_mode in ('none', 'write'):
            params['synchronous_commit'] = 'off'
        out = dict(self.ha, failsafe_mode=False, synchronous_node_count=1,
                   maximum_lag_on_failover=1048576)
        out['postgresql'] = {'use_pg_rewind': True, 'use_slots': True,
                             'remove_data_directory_on_rewind_failure': True,
                             'parameters': params}
        return out

    def settings(self):
        s = PostgresReplicaSet.settings(self)
        s['synchronous_standby_names'] = 'Patroni\'s (synchronous_mode)' if \
            self.synchronous else ''
        s['replication_settings'] = ', '.join(
            '%s = %s' % kv for kv in sorted(self.dcs_config()['postgresql']['parameters']
                                            .items()))
        s['ha'] = dict(self.ha, kind='patroni', version=self.version, scope=self.scope,
                       dcs=self.etcd.settings() if self.etcd else None,
                       rest=[m.api_url for m in self.members])
        return s

    # -- starting and stopping ------------------------------------------------------------

    def _start_members(self, timeout):
        deadline = time.time() + timeout

        def left():
            return max(deadline - time.time(), 1.0)
        first = PatroniMember(self, 's0')
        first.first = True
        first._check()
        self.etcd = Etcd(self.scope, first._run_as)
        self.etcd.start(left())
        self.members.append(first)
        first.start(left())
        doc = first.state() or {}
        self.version = (doc.get('patroni') or {}).get('version')
        # The replicas clone the leader together (each start waits for its own).
        import gevent
        clones = [PatroniMember(self, 's%d' % i) for i in range(1, self.replica_count + 1)]
        self.members.extend(clones)
        jobs = [gevent.spawn(m.start, left()) for m in clones]
        gevent.joinall(jobs)
        for job in jobs:
            if not job.successful():
                raise job.exception
        self._wait_streaming(first, self.members[1:], deadline)
        if self.synchronous:
            self._wait_sync_standby(deadline)

    def _wait_sync_standby(self, deadline):
        """Until Patroni has made a standby synchronous (a commit then waits for it)."""
        while True:
            cluster = self.cluster_state()
            if any(m.get('role') == 'sync_standby' for m in cluster.get('members') or ()):
                return
            if time.time() > deadline:
                raise errors.SetupError('patroni named no synchronous standby: %s'
                                        % json.dumps(cluster)[:300])
            time.sleep(0.2)

    def stop(self):
        self.unwatch_ha()
        for key, conn in self._sampling.items():
            if key not in self._busy:
                try:
                    conn.close()
                except Exception:
                    pass
        self._sampling = {}
        try:
            # All at once: a leader stopped first would hand its key to the next.
            for m in self.members:
                m.terminate()
            for m in reversed(self.members):
                m.stop()
        finally:
            if self.etcd is not None:
                self.etcd.stop()

    # -- what Patroni says ----------------------------------------------------------------

    def cluster_state(self):
        """/cluster from the first member that answers ({} when none does)."""
        for m in self._answering():
            status, body = http('GET', m.api_url + '/cluster', timeout=1.0)
            if status == 200:
                return _role(body) or {}
        return {}

    def _answering(self):
        # Read from /proc, not asked of the launcher (proc.poll()): the watch's greenlet
        # asking beside a kill's wait() would take the exit the wait is waiting for.
        return [m for i, m in enumerate(self.members)
                if i not in self._down and m.proc is not None and
                reaper._stat(m.proc.pid) is not None]

    def _by_name(self, name):
        for m in self.members:
            if m.app_name == name:
                return m
        return None

    def current_leader(self):
        """The member holding the leader key now (asked), else the last one seen."""
        for m in self.cluster_state().get('members') or ():
            if m.get('role') == 'leader':
                return self._by_name(m.get('name')) or self.leader
        return self.leader

    # -- faults ---------------------------------------------------------------------------

    def member(self, target, action):
        if target == 'leader' and action not in ('start', 'cont'):
            self.leader = self.current_leader()
        return PostgresReplicaSet.member(self, target, action)

    def kill(self, target='leader'):
        if target == DCS:
            self.etcd.kill()
            return self.etcd
        return PostgresReplicaSet.kill(self, target)

    def pause(self, target='leader'):
        if target == DCS:
            self.etcd.pause()
            return self.etcd
        return PostgresReplicaSet.pause(self, target)

    def resume(self, target='leader'):
        if target == DCS:
            self.etcd.resume()
            return self.etcd
        return PostgresReplicaSet.resume(self, target)

    def start_again(self, target='leader', timeout=30.0):
        if target == DCS:
            self.etcd.start_again(timeout)
            return self.etcd
        return PostgresReplicaSet.start_again(self, target, timeout)

    def _promote(self, member, others):
        raise errors.SetupError('promote: under --ha patroni Patroni elects the leader; '
                                'use switchover')

    def _start_member_again(self, member, as_leader, timeout):
        member.start_again(timeout)

    def switchover(self, timeout=60.0):
        """Patroni's switchover (POST /switchover to the leader's REST API, Patroni
        choosing the candidate); returns (old leader, new leader) once the new one runs
        as the primary."""
        old = self.current_leader()
        status, body = http('POST', old.api_url + '/switchover', {'leader': old.app_name},
                            timeout=timeout)
        if status != 200:
            raise errors.SetupError('switchover from %s: HTTP %s %s' % (
                old.app_name, status, ' '.join(body.split())[:200]))
        deadline = time.time() + timeout
        while time.time() < deadline:
            for m in self._answering():
                doc = m.state(0.5) or {}
                if m is not old and doc.get('role') in _PRIMARY_ROLES and \
                        doc.get('state') == 'running':
                    return old, m
            time.sleep(0.1)
        raise errors.SetupError('switchover from %s: no new primary within %.0f s: %s'
                                % (old.app_name, timeout, ' '.join(body.split())[:200]))

    # -- watching what Patroni and HAProxy do ---------------------------------------------

    def watch_ha(self, sink, proxy=None):
        """Poll every WATCH_PERIOD and tell ``sink(event)`` what changed (module
        docstring); idempotent."""
        if self._watcher is None:
            from gloaddriver.py23 import spawn_named
            self._watcher = spawn_named('patroni-watch', Watcher(self, proxy, sink).run)

    def unwatch_ha(self):
        w, self._watcher = self._watcher, None
        if w is not None:
            w.kill(block=False)

    def leader_seen(self, member):
        """A member became the primary on its own (Patroni's election or switchover)."""
        if member is not self.leader:
            self.leader_moves += 1
            self.leader = member
        for fn in self.on_leader:
            try:
                fn(member)
            except Exception as e:     # a pooler that does not answer: said, not fatal
                errors.say('note: after %s became the leader: %s' % (member.uri, e))


class Watcher(object):
    """The looks of ``watch_ha``: the state seen last, and events for what changed."""

    def __init__(self, cluster, proxy, sink):
        self.cluster = cluster
        self.proxy = proxy
        self.sink = sink
        self.key = self.primaries = self.admitted = None
        self.had_key = False

    def run(self):
        import gevent
        while True:
            started = time.time()
            try:
                self.look()
            except Exception as e:     # never the run's end: said once a look
                errors.say('note: the Patroni watch failed a look: %s' % e)
            gevent.sleep(max(WATCH_PERIOD - (time.time() - started), 0.05))

    def _event(self, action, member, source='patroni'):
        from gloaddriver.py23 import clock
        self.sink({'action': action, 't': clock(), 'member': member.uri, 'source': source})

    def look(self):
        import gevent
        c = self.cluster
        live = c._answering()
        jobs = [gevent.spawn(m.state, WATCH_PERIOD * 0.8) for m in live]
        holder = gevent.spawn(c.cluster_state)
        up = gevent.spawn(self.proxy.servers_up) if self.proxy is not None else None
        every = jobs + [holder] + ([up] if up else [])
        gevent.joinall(every, timeout=WATCH_PERIOD * 2)
        try:
            self._judge(live, jobs, holder, up)
        finally:
            gevent.killall(every, block=False)     # a look still waiting ends with this one

    def _judge(self, live, jobs, holder, up):
        for m in live:
            m.postmaster()     # told to the reaper as it changes
        primaries = set()
        replicas = set()
        for m, job in zip(live, jobs):
            doc = job.value or {}
            if doc.get('role') in _PRIMARY_ROLES and doc.get('state') == 'running':
                primaries.add(m)
            elif doc.get('role'):
                replicas.add(m)
        self._primaries(primaries, replicas)
        if holder.value is not None and holder.successful():
            self._key(holder.value)
        if up is not None and up.successful() and up.value is not None:
            self._proxy(up.value)

    def _primaries(self, primaries, replicas):
        before = self.primaries
        self.primaries = primaries
        if before is None:
            return
        for m in primaries - before:
            self._event('promoted', m)
            self.cluster.leader_seen(m)
        for m in before & replicas:
            self._event('demoted', m)

    def _key(self, doc):
        if not doc.get('members'):
            return                  # no answer (a DCS down): nothing known
        names = [m.get('name') for m in doc['members'] if m.get('role') == 'leader']
        key = names[0] if names else None
        before, self.key = self.key, key
        if before is not None and key is None:
            m = self.cluster._by_name(before)
            if m is not None:
                self._event('leader-lost', m)
        elif key is not None and key != before and self.had_key:
            # (the first key seen is the bootstrap's: no election of this run's)
            m = self.cluster._by_name(key)
            if m is not None:
                self._event('leader-elected', m)
        self.had_key = self.had_key or key is not None

    def _proxy(self, up):
        """``up``: the names of the servers HAProxy has UP now."""
        names = set(up)
        before, self.admitted = self.admitted, names
        if before is None:
            return
        for name in sorted(names - before):
            m = self.cluster._by_name(name)
            if m is not None:
                self._event('proxy-admitted', m, 'haproxy')
        for name in sorted(before - names):
            m = self.cluster._by_name(name)
            if m is not None:
                self._event('proxy-dropped', m, 'haproxy')
