"""A private HAProxy (``--proxy haproxy``) in front of a spawned PostgreSQL replica set:
one address that leads to whichever member is writable now.

It runs from the system's ``haproxy`` (Debian's 2.6) on a free loopback port, in a
temporary directory of its own, as the members' unprivileged user, in TCP mode. Each
member is a server of one backend, checked every CHECK_INTERVAL by an external check
that asks the member itself whether it is the primary (``SELECT pg_is_in_recovery()``
through psql, with the password from a passfile only that user reads): a set the
driver promotes itself has no Patroni whose REST API could say it. A member that fails
FALL checks in a row is marked down and its sessions are shut
(``on-marked-down shutdown-sessions``: a client left on a demoted or dead primary would
otherwise wait for its timeouts); one check that passes (RISE) lets it in.

In front of a Patroni cluster (``--ha patroni``: members with a REST API) the check is
Patroni's own pattern instead: an HTTP ``OPTIONS /primary`` on the member's REST port,
200 for the leader only, with the same timings; and a statistics page on a port of its
own (``servers_up``) says which members it has UP, for the run's events.
"""
from __future__ import absolute_import, division, print_function

import io
import os
import time

from gloaddriver import errors
from gloaddriver.backends.spawn import Server, tail, which

CHECK_INTERVAL = '500ms'
FALL = 2
RISE = 1


class HAProxy(Server):
    """HAProxy in front of ``members`` (PostgresMember: host, port), the writable one."""

    name = 'haproxy'
    log_name = 'stdout.log'

    def __init__(self, members, database, user, password, bindir, run_as=None):
        Server.__init__(self)
        self.members = list(members)
        self.database = database
        self.user = user
        self.password = password
        self.bindir = bindir
        self._run_as_given = run_as
        # Patroni members have a REST API: the check asks it (module docstring).
        self.rest = all(getattr(m, 'api_port', None) for m in self.members)
        self.stats_port = None
        self.binary = which('haproxy') or (
            '/usr/sbin/haproxy' if os.path.exists('/usr/sbin/haproxy') else None)

    @property
    def dsn(self):
        """What the driver's ops (or the pooler in front) connect to; never print it."""
        return 'host=%s port=%d dbname=%s user=%s password=%s sslmode=disable' % (
            self.host, self.port, self.database, self.user, self.password)

    def settings(self):
        check = ('HTTP OPTIONS /primary on Patroni\'s REST port is 200' if self.rest else
                 'external: SELECT pg_is_in_recovery() is false')
        return {'kind': 'haproxy', 'address': self.uri,
                'check': '%s, every %s, fall %d, rise %d, on-marked-down shutdown-sessions'
                         % (check, CHECK_INTERVAL, FALL, RISE),
                'servers': [m.uri for m in self.members]}

    def _check(self):
        if not self.binary:
            raise errors.SetupError('no haproxy found; install it (apt-get install -y '
                                    'haproxy) or leave out --proxy')
        self._run_as = self._run_as_given

    def _write(self, name, text, mode):
        path = os.path.join(self.work_dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with io.open(fd, 'w', encoding='utf-8') as f:
            f.write(text)
        os.chmod(path, mode)
        if self._run_as is not None:
            os.chown(path, self._run_as[0], self._run_as[1])
        return path

    def _config(self, check):
        lines = [u'global', u'    maxconn 4000']
        if not self.rest:
            lines[1:1] = [u'    insecure-fork-wanted', u'    external-check']
        lines += [u'defaults', u'    mode tcp', u'    timeout connect 2s',
                  u'    timeout client 1h', u'    timeout server 1h', u'    timeout check 3s',
                  u'listen leader', u'    bind 127.0.0.1:%d' % self.port]
        if self.rest:
            lines += [u'    option httpchk OPTIONS /primary',
                      u'    http-check expect status 200']
        else:
            lines += [u'    option external-check', u'    external-check path "/usr/bin:/bin"',
                      u'    external-check command %s' % check]
        lines += [u'    default-server inter %s fall %d rise %d on-marked-down '
                  u'shutdown-sessions' % (CHECK_INTERVAL, FALL, RISE)]
        for i, m in enumerate(self.members):
            lines.append(u'    server %s %s:%d check%s' % (
                getattr(m, 'app_name', 's%d' % i), m.host, m.port,
                u' port %d' % m.api_port if self.rest else u''))
        if self.stats_port:
            lines += [u'listen stats', u'    mode http', u'    bind 127.0.0.1:%d' % self.stats_port,
                      u'    stats enable', u'    stats uri /stats']
        return u'\n'.join(lines) + u'\n'

    def _prepare(self):
        from gloaddriver.backends.spawn import free_port
        if self._run_as is not None:
            os.chown(self.work_dir, self._run_as[0], self._run_as[1])
        if self.rest:
            self.stats_port = free_port()
            self._write('haproxy.cfg', self._config(None), 0o600)
            return
        passfile = self._write('pgpass', u'*:*:*:%s:%s\n' % (self.user, self.password),
                               0o600)
        # $3 and $4: the checked server's address and port (HAProxy's external check).
        check = self._write('check-writable', u'\n'.join([
            u'#!/bin/sh',
            u'r=$(PGPASSFILE=%s PGCONNECT_TIMEOUT=2 %s -X -w -h "$3" -p "$4" -U %s -d %s '
            u"-tAc 'SELECT pg_is_in_recovery()' 2>/dev/null)" % (
                passfile, os.path.join(self.bindir, 'psql'), self.user, self.database),
            u'[ "$r" = f ]', u'']), 0o700)
        self._write('haproxy.cfg', self._config(check), 0o600)

    def servers_up(self):
        """The names of the servers its checks have UP now (its statistics page), or
        None when it does not say (no page: the SQL check's HAProxy; or it is down)."""
        if not self.stats_port:
            return None
        from gloaddriver.backends.postgres.etcd import http
        status, body = http('GET', 'http://127.0.0.1:%d/stats;csv' % self.stats_port,
                            timeout=0.4)
        if status != 200:
            return None
        lines = body.splitlines()
        if not lines or not lines[0].startswith('# '):
            return None
        head = lines[0][2:].split(',')
        out = []
        for line in lines[1:]:
            row = dict(zip(head, line.split(',')))
            if row.get('pxname') == 'leader' and row.get('svname') not in (
                    'FRONTEND', 'BACKEND') and row.get('status', '').startswith('UP'):
                out.append(row['svname'])
        return out

    def _argv(self):
        return [self.binary, '-db', '-f', os.path.join(self.work_dir, 'haproxy.cfg')]

    def _ready(self, timeout):
        """Until its first checks have marked the standbys down (HAProxy 2.6 starts every
        server up, so FALL checks must fail first) and a client reaches the primary."""
        from gloaddriver.backends.postgres.server import _connect
        import psycopg2
        deadline = time.time() + timeout
        time.sleep((FALL + 1) * float(CHECK_INTERVAL.rstrip('ms')) / 1000.0)
        while True:
            try:
                conn = _connect(self.dsn, 2)
                try:
                    cur = conn.cursor()
                    cur.execute('SELECT pg_is_in_recovery()')
                    standby = cur.fetchone()[0]
                finally:
                    conn.close()
                if not standby:
                    return
                raise psycopg2.OperationalError('it still leads to a standby')
            except psycopg2.Error as e:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise errors.SetupError('haproxy did not lead to the writable member: '
                                            '%s | %s' % (' '.join(str(e).split()),
                                                         tail(self._log_path())))
                time.sleep(0.1)
