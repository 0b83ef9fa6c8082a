"""SQLAlchemy on a real PostgreSQL: the built-in ORM workload (--workload orm) and a
user's own declarative models in a workload file (db.engine, db.session()), on the
run's one cooperative pool. SQLAlchemy 1.4 on Python 2.7, 2.x on 3.x: the same tests."""
from __future__ import absolute_import, division, print_function

import os

import pytest

from gloaddriver.backends.postgres.server import PostgresServer
from tests.integration.conftest import ROOT, assert_accounted, pg_query, run_cli
from tests.integration.test_flamegraphs import needs_py_spy


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


def dsn(server):
    return 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)


def run_pg(server, args, env=None):
    return run_cli(['--backend', 'postgres', '--dsn', dsn(server)] + args,
                   env=dict({'GLOADDRIVER_PASSWORD': server.password}, **(env or {})))


def query(server, sql):
    return pg_query(dsn(server) + ' password=%s' % server.password, sql)


def write(tmpdir, name, text):
    path = tmpdir.join(name)
    path.write(text)
    return str(path)


def test_the_orm_workload_writes_its_families_and_reports_the_connections_it_used(pg):
    query(pg, 'DROP TABLE IF EXISTS orm_b, orm_a')
    rc, out, err, res = run_pg(pg, ['--workload', 'orm', '--init', '--greenlets', '20',
                                    '--pool-size', '5', '--ops', '1500', '--seed', '7',
                                    '--interval', '0.2'])
    assert rc == 0 and 'Traceback' not in err, err
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['attempted'] == 1500 and phase['ok'] == 1500, phase['errors']
    creates = phase['ops']['create']['ok']
    assert creates > 600 and phase['ops']['read']['ok'] > 600
    # Every create is one transaction of 3 A's with 2, 1 and 2 B's, each B under its A.
    assert query(pg, 'SELECT count(*) FROM orm_a') == [(3 * creates,)]
    assert query(pg, 'SELECT count(*) FROM orm_b') == [(5 * creates,)]
    assert query(pg, 'SELECT count(*) FROM orm_b JOIN orm_a ON orm_a.id = orm_b.a_id') == \
        [(5 * creates,)]
    # the server default, fetched back by eager_defaults, is set on every A
    assert query(pg, 'SELECT count(*) FROM orm_a WHERE create_date IS NULL') == [(0,)]
    # Connections used: 20 greenlets on a pool of 5 never hold more than 5 connections,
    # and the server never saw more load connections than the pool opened.
    pool = phase['pool']
    assert 1 <= pool['checked_out_peak'] <= 5 and pool['peak_open'] <= 5, pool
    assert 1 <= phase['server_connections_peak'] <= pool['peak_open'], phase
    intervals = phase['server_metrics']['intervals']
    # (an interval whose sample came late has no figures: a busy machine)
    seen = [i['checked_out'] for i in intervals if 'checked_out' in i]
    assert seen and max(seen) <= 5, intervals
    assert 'at most %d checked out of a pool of 5' % pool['checked_out_peak'] in out
    assert res['manifest']['workload'] == 'orm'


def test_the_orm_workload_without_init_names_its_missing_tables(pg):
    query(pg, 'DROP TABLE IF EXISTS orm_b, orm_a')
    rc, out, err, res = run_pg(pg, ['--workload', 'orm', '--ops', '10'])
    assert rc == 3 and res is None
    assert err.count('\n') == 1 and 'orm_a' in err and '--init' in err, err


# A user's own models: an upsert-like op that catches SQLAlchemy's IntegrityError (so
# the library's exceptions stay the user's), one that lets it go (counted by SQLSTATE),
# one whose bug is the user's (named by file and line), and one that SQLAlchemy refuses
# inside its own code (named by the user's line that called it).
USER_MODELS = u'''from sqlalchemy import Column, Integer, String, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import declarative_base

Base = declarative_base()
PHASES = ['put', 'dup', 'bug', 'many']


class Item(Base):
    __tablename__ = 'user_item'
    id = Column(Integer, primary_key=True)
    name = Column(String(20))


def setup(db):
    Base.metadata.drop_all(db.engine)
    Base.metadata.create_all(db.engine)


def op_put(db, key):
    try:
        with db.session() as s, s.begin():
            s.add(Item(id=key % 50, name=u'item-%d' % key))
    except IntegrityError:
        return False

def op_dup(db, key):
    with db.session() as s, s.begin():
        s.add(Item(id=key % 50, name=u'again'))


def op_bug(db, key):
    with db.session() as s:
        item = s.get(Item, key % 50)
        return item.nmae


def op_many(db, key):
    with db.session() as s:
        return s.execute(select(Item)).scalar_one().id
'''


def test_a_users_orm_code_runs_with_its_errors_counted_by_kind_and_line(pg, tmpdir):
    path = write(tmpdir, 'models.py', USER_MODELS)
    rc, out, err, res = run_pg(pg, ['--workload-file', path, '--ops', '200',
                                    '--greenlets', '8'])
    assert rc == 1 and 'Traceback' not in err, err
    assert_accounted(res)
    put, dup, bug, many = res['phases']
    # 50 distinct ids: the first insert of each wins, the others are misses
    assert put['ok'] == 200 and put['failed'] == 0 and put['misses'] == 150, put
    assert query(pg, 'SELECT count(*) FROM user_item') == [(50,)]
    assert dup['errors'] == {'server:23505': 200}, dup['errors']
    assert bug['errors'] == {'client:AttributeError': 200}, bug['errors']
    assert bug['error_origins'] == {'client:AttributeError': path + ':35'}, bug
    (kind,) = many['errors']
    assert kind == 'client:MultipleResultsFound' and many['errors'][kind] == 200
    assert many['error_origins'] == {kind: path + ':40'}, many


def test_a_fault_on_the_orm_workload_is_an_outage_and_the_run_goes_on(tmpdir):
    rc, out, err, res = run_cli(['--backend', 'postgres', '--spawn', '--workload', 'orm',
                                 '--greenlets', '10', '--ops', '0', '--duration', '8',
                                 '--fault', 'kill@3s,start@5s', '--progress', '1'])
    assert 'Traceback' not in err, err
    assert_accounted(res)
    (phase,) = res['phases']
    (o,) = phase['outages']
    kill = [f for f in res['faults'] if f['action'] == 'kill'][0]
    # it opened with the first op the kill failed (an ORM op in flight takes a while)
    assert -0.1 <= o['start'] - kill['t'] <= 1.5, (o, res['faults'])
    assert o['failed'] + o['timed_out'] > 0, o
    # the failures are the lost server's (network), not the ORM's own kinds
    assert not [k for k in phase['errors'] if k.startswith('client:')], phase['errors']
    # and it went on: ops succeeded after the server came back
    back = [r for r in phase['timeline'] if r['t'] > o['start'] + o['duration'] + 0.5]
    if not o['open']:
        assert sum(r['ok'] for r in back) > 0, phase['timeline']
    assert 'OUTAGE' in err


def test_sqlalchemy_missing_is_one_line_before_the_first_op(pg, tmpdir):
    # SQLAlchemy hidden from the driver: an import of it fails, as where it is not installed
    hide = tmpdir.mkdir('hide')
    hide.join('sqlalchemy.py').write(u'raise ImportError("No module named sqlalchemy")\n')
    env = {'PYTHONPATH': os.pathsep.join([str(hide), ROOT])}
    rc, out, err, res = run_pg(pg, ['--workload', 'orm', '--init'], env=env)
    assert rc == 2 and res is None
    assert err.count('\n') == 1 and "pip install 'gloaddriver[sqlalchemy]'" in err, err
    path = write(tmpdir, 'uses_engine.py', u'def op_count(db, key):\n'
                                           u'    with db.session() as s:\n'
                                           u'        return s.execute("SELECT 1")\n')
    rc, out, err, res = run_pg(pg, ['--workload-file', path, '--ops', '10'], env=env)
    assert rc == 2 and res is None
    assert err.count('\n') == 1 and "gloaddriver[sqlalchemy]" in err, err


def test_verify_is_refused_on_the_orm_workload(pg):
    rc, out, err, res = run_pg(pg, ['--workload', 'orm', '--verify'])
    assert rc == 2 and res is None and err.count('\n') == 1 and '--verify' in err, err


def test_the_profile_splits_client_time_between_sqlalchemy_psycopg2_and_gloaddriver(pg, tmpdir):
    rc, out, err, res = run_pg(pg, ['--workload', 'orm', '--init', '--greenlets', '20',
                                    '--ops', '1000', '--pstats', str(tmpdir),
                                    '--profile-clock', 'cpu'])
    assert rc == 0, err
    shares = dict((r['library'], r['own_share']) for r in res['phases'][0]['profile']['libraries'])
    # the ORM is most of the client's CPU; the driver's and psycopg2's share are named
    assert max(shares, key=shares.get) == 'sqlalchemy' and shares['sqlalchemy'] > 0.4, shares
    assert shares['psycopg2'] > 0 and shares['gloaddriver'] > 0, shares
    assert abs(sum(shares.values()) - 1.0) < 0.01, shares
    assert 'own time by library: sqlalchemy' in out


@needs_py_spy
def test_the_flame_graph_splits_its_samples_by_library(pg, tmpdir):
    rc, out, err, res = run_pg(pg, ['--workload', 'orm', '--init', '--greenlets', '20',
                                    '--ops', '0', '--duration', '3',
                                    '--flamegraph', str(tmpdir)])
    assert rc == 0, err
    fg = res['phases'][0]['flamegraph']
    shares = dict((r['library'], r['own_share']) for r in fg['libraries'])
    assert max(shares, key=shares.get) == 'sqlalchemy', shares
    assert sum(r['own'] for r in fg['libraries']) == fg['samples']
    # SQLAlchemy's own frames are in the stacks, under the op that called them
    assert any('sqlalchemy/orm/session.py' in s and 'op_create' in s for s in fg['stacks'])
    assert 'own samples by library: sqlalchemy' in out


SLOW = u'''from sqlalchemy import text


def op_slow(db, key):
    with db.session() as s, s.begin():
        if key % 2 == 0:
            s.execute(text('SELECT pg_sleep(3)'))
        return s.execute(text('SELECT 1')).scalar()
'''


def test_an_orm_op_past_the_timeout_is_a_timeout_not_a_lost_connection(pg, tmpdir):
    # The deadline is thrown in while psycopg2 waits; SQLAlchemy's rollback on the
    # connection psycopg2 closed then raises an error of its own, which must not hide it.
    path = write(tmpdir, 'slow.py', SLOW)
    rc, out, err, res = run_pg(pg, ['--workload-file', path, '--ops', '20', '--greenlets', '4',
                                    '--timeout', '0.5'])
    assert rc == 1 and 'Traceback' not in err, err
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['ok'] == 10 and phase['timed_out'] == 10, phase
    assert phase['errors'] == {'timeout': 10}, phase['errors']


SLOW_COMMIT = u'''from sqlalchemy import text


def op_write(db, key):
    with db.session() as s, s.begin():
        table = 'slow_commit' if key % 2 == 0 else 'quick_commit'
        s.execute(text('INSERT INTO %s VALUES (:k)' % table), {'k': key})
'''


def test_an_orm_op_whose_commit_passes_the_timeout_is_one_quiet_timeout(pg, tmpdir):
    # A deferred trigger makes the COMMIT itself wait: the deadline closes the connection
    # while SQLAlchemy commits, and the reset SQLAlchemy's pool does on its return must
    # not log a traceback of its own for it (it did, once per such op).
    query(pg, "DROP TABLE IF EXISTS slow_commit, quick_commit; "
              "CREATE TABLE slow_commit (k int); CREATE TABLE quick_commit (k int); "
              "CREATE OR REPLACE FUNCTION slow_commit_fn() RETURNS trigger AS "
              "$$ BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$ LANGUAGE plpgsql; "
              "CREATE CONSTRAINT TRIGGER slow_commit_t AFTER INSERT ON slow_commit "
              "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit_fn()")
    path = write(tmpdir, 'slow_commit.py', SLOW_COMMIT)
    rc, out, err, res = run_pg(pg, ['--workload-file', path, '--ops', '20', '--greenlets', '4',
                                    '--timeout', '0.5'])
    assert rc == 1, err
    assert 'Traceback' not in err and 'Exception during reset' not in err, err
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['ok'] == 10 and phase['timed_out'] == 10, phase
    assert phase['errors'] == {'timeout': 10}, phase['errors']
