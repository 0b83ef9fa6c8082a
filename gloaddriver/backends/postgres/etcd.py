"""A private etcd (``--ha patroni``): the one-member DCS the spawned Patroni members
elect their leader in.

It runs from the system's ``etcd`` (Debian's etcd-server 3.4) on two free loopback
ports (clients, peers), in a temporary directory of its own, as the PostgreSQL members'
unprivileged user, with a cluster token of its own (the run's scope). Its v2 API stays
off (3.4's default): Patroni talks to it through its ``etcd3:`` section. ``kill()`` and
``start_again()`` (``--fault dcs-down``/``dcs-up``) are the server's: SIGKILL, then the
same ports and data again.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import time

from gloaddriver import errors
from gloaddriver.backends.spawn import Server, free_port, tail, which


def http(method, url, body=None, timeout=2.0):
    """(status, the reply's body as text) of one HTTP request; status 0 when nothing
    answered. Cooperative under gevent's patching (the standard library's client)."""
    try:
        from urllib.request import Request, urlopen
        from urllib.error import HTTPError, URLError
    except ImportError:      # Python 2.7
        from urllib2 import Request, urlopen, HTTPError, URLError
    data = None if body is None else json.dumps(body).encode('utf-8')
    req = Request(url, data=data, headers={'Content-Type': 'application/json'})
    req.get_method = lambda: method
    try:
        reply = urlopen(req, timeout=timeout)
        try:
            return reply.getcode(), reply.read().decode('utf-8', 'replace')
        finally:
            reply.close()
    except HTTPError as e:
        try:
            return e.code, e.read().decode('utf-8', 'replace')
        except Exception:
            return e.code, ''
    except (URLError, EnvironmentError, ValueError) as e:
        return 0, str(e)
    except Exception as e:        # a socket timeout on Python 2, http.client's errors
        return 0, '%s: %s' % (e.__class__.__name__, e)


class Etcd(Server):
    """One etcd member (``name``) of a cluster of one."""

    name = 'etcd'
    log_name = 'stdout.log'

    def __init__(self, token, run_as=None):
        Server.__init__(self)
        self.token = token
        self.peer_port = None
        self._run_as_given = run_as
        self.binary = which('etcd') or (
            '/usr/bin/etcd' if os.path.exists('/usr/bin/etcd') else None)

    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    def settings(self):
        return {'kind': 'etcd', 'address': self.uri, 'api': 'v3'}

    def _check(self):
        if not self.binary:
            raise errors.SetupError('no etcd found; install it (apt-get install -y '
                                    'etcd-server) or leave out --ha')
        self._run_as = self._run_as_given

    def _prepare(self):
        self.peer_port = free_port()
        if self._run_as is not None:
            os.chown(self.work_dir, self._run_as[0], self._run_as[1])

    def _env(self):
        env = dict(os.environ)
        env['HOME'] = self.work_dir
        return dict((k, v) for k, v in env.items() if not k.startswith('ETCD'))

    def _argv(self):
        peer = 'http://%s:%d' % (self.host, self.peer_port)
        return [self.binary, '--name', 'e0', '--data-dir', os.path.join(self.work_dir, 'data'),
                '--listen-client-urls', self.url, '--advertise-client-urls', self.url,
                '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
                '--initial-cluster', 'e0=' + peer, '--initial-cluster-state', 'new',
                '--initial-cluster-token', self.token]

    def _ready(self, timeout):
        """Until it says it is healthy (it has elected itself)."""
        deadline = time.time() + timeout
        while True:
            status, body = http('GET', self.url + '/health', timeout=1.0)
            if status == 200 and '"true"' in body:
                return
            if time.time() > deadline or self.proc.poll() is not None:
                raise errors.SetupError('etcd did not become healthy: %s | %s'
                                        % (body.strip()[:200], tail(self._log_path())))
            time.sleep(0.1)
