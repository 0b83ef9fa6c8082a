"""TLS on the pipelined PostgreSQL connector against a private server with ssl=on and a
self-signed certificate made here with openssl; the server refuses this database's
plain connections, so a run that succeeds went over TLS."""
from __future__ import absolute_import, division, print_function

import os
import subprocess

import pytest

from gloaddriver.backends.postgres.server import POSTGRES_DB, PostgresServer
from tests.integration.conftest import assert_accounted, pg_query, run_cli

pytest.importorskip('psycopg2')


def make_certificate(folder, name):
    """A self-signed certificate for 127.0.0.1 (its name and an IP SAN): (crt, key)."""
    crt, key = os.path.join(folder, name + '.crt'), os.path.join(folder, name + '.key')
    subprocess.check_call(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes',
                           '-days', '2', '-subj', '/CN=127.0.0.1', '-addext',
                           'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', crt],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return crt, key


class TLSServer(PostgresServer):
    """ssl=on with a certificate of its own; this database's plain connections refused."""

    def _prepare(self):
        PostgresServer._prepare(self)
        self.crt, key = make_certificate(self.work_dir, 'server')
        os.chmod(key, 0o600)
        if self._run_as is not None:
            for path in (self.crt, key):
                os.chown(path, self._run_as[0], self._run_as[1])
        self.key = key

    def refuse_plain(self):
        """Once up (its own start-up logins are plain): this database takes TLS only."""
        hba = os.path.join(self.work_dir, 'data', 'pg_hba.conf')
        with open(hba) as f:
            rules = f.read()
        with open(hba, 'w') as f:
            f.write('hostnossl %s all 127.0.0.1/32 reject\n' % POSTGRES_DB + rules)
        pg_query(dsn(self, dbname='postgres', sslmode='disable', password=self.password),
                 'SELECT pg_reload_conf()')

    def _argv(self):
        argv = PostgresServer._argv(self)
        argv[argv.index('ssl=off')] = 'ssl=on'
        return argv + ['-c', 'ssl_cert_file=%s' % self.crt, '-c', 'ssl_key_file=%s' % self.key]


@pytest.fixture(scope='module')
def tls_pg():
    server = TLSServer().start()
    server.refuse_plain()
    yield server
    server.stop()


def dsn(server, **extra):
    parts = dict(host='127.0.0.1', port=server.port, dbname=server.database, user=server.user)
    parts.update(extra)
    return ' '.join('%s=%s' % kv for kv in sorted(parts.items()))


def run(server, sslmode, *args, **extra):
    return run_cli(['--backend', 'postgres', '--connector', 'pipelined', '--dsn',
                    dsn(server, sslmode=sslmode, **extra)] + list(args),
                   env={'GLOADDRIVER_PASSWORD': server.password})


@pytest.fixture(scope='module')
def table(tls_pg):
    pg_query(dsn(tls_pg, sslmode='require', password=tls_pg.password),
             'CREATE TABLE IF NOT EXISTS kv_tls (id bigint PRIMARY KEY, value text)')
    return 'kv_tls'


@pytest.mark.parametrize('sslmode', ['prefer', 'require', 'verify-full'])
def test_the_pipelined_connector_runs_over_tls(tls_pg, table, sslmode):
    extra = {'sslrootcert': tls_pg.crt} if sslmode == 'verify-full' else {}
    pg_query(dsn(tls_pg, sslmode='require', password=tls_pg.password), 'TRUNCATE kv_tls')
    rc, out, err, res = run(tls_pg, sslmode, '--table', table, '--ops', '3000',
                            '--greenlets', '16', '--phases', 'insert,select,update,delete',
                            '--session-init', "SET application_name = 'gl_tls'", **extra)
    assert rc == 0, err
    assert_accounted(res)
    # every op answered, in order, through TLS records of many replies each
    assert [p['ok'] for p in res['phases']] == [3000] * 4
    assert res['phases'][1]['misses'] == 0


def test_a_plain_connection_is_refused_there(tls_pg, table):
    rc, out, err, res = run(tls_pg, 'disable', '--table', table, '--ops', '10')
    assert rc == 3 and 'no encryption' in err, err


def test_a_certificate_from_another_authority_is_refused(tls_pg, table, tmpdir):
    other, _key = make_certificate(str(tmpdir), 'other')
    rc, out, err, res = run(tls_pg, 'verify-ca', '--table', table, '--ops', '10',
                            sslrootcert=other)
    assert rc == 3 and 'Traceback' not in err and len(err.strip().splitlines()) == 1, err
    assert 'TLS with PostgreSQL at 127.0.0.1:%d failed (sslmode=verify-ca)' % tls_pg.port in err
    assert 'CERTIFICATE_VERIFY_FAILED' in err
