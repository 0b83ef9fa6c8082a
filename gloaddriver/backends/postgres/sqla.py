"""SQLAlchemy on the cooperative pool: an Engine whose connections are the pool's own.

A gevent service runs its ORM on psycopg2 made cooperative; so does this Engine. Its
SQLAlchemy pool (``sqla_pool.Bridge``) lends the connections of the run's one ``pool.Pool``:
one pool, sized by --pool-size, whose waits, connects and discards are counted once
for every kind of op (a workload file may mix ``db.execute`` and ``db.session()``).

What the bridge does at each checkout, and why:

* The op's deadline starts when its greenlet takes its first connection and ends when
  it gives the last back (``pool.Deadlines``): a Session's transaction is held within
  the op timeout, as ``db.transaction()`` is.
* The pool keeps its connections in autocommit (the other ops need no BEGIN). A
  connection lent to SQLAlchemy leaves it, so SQLAlchemy's transactions are real
  ones; psycopg2 sends nothing for that, it only changes the BEGIN it will send. Given
  back, SQLAlchemy has already rolled back what was open (reset on return).
* One SQLAlchemy record per pooled connection, made the first time that connection is
  lent: the dialect's connect events (its setup queries) run once per connection, as
  with SQLAlchemy's own pool. ``warm`` makes them for the open connections before the
  first phase, outside its figures.
* A connection SQLAlchemy invalidates (a disconnect) is the pool's to drop. Invalidating
  one never recycles every other (SQLAlchemy's own pools do): the pool finds a dead
  connection as an op uses it, as it does for every other op.

Errors stay SQLAlchemy's inside the user's code (so their ``except IntegrityError``
works); the run counts them by what they wrap (``op_error``): a server error by its
SQLSTATE, a lost connection as a network error, anything else as the user's own.
"""
from __future__ import absolute_import, division, print_function

import gevent
import psycopg2

from gloaddriver import errors
from gloaddriver.py23 import PY2
from gloaddriver.backends.postgres import pool as pgpool

INSTALL = ("pip install 'gloaddriver[sqlalchemy]' (SQLAlchemy %s)"
           % ('1.4, its last series on Python 2.7' if PY2 else '2.x'))


def need(what):
    """Import SQLAlchemy, or say in one line (ConfigError, exit 2) how to get it."""
    try:
        import sqlalchemy
    except ImportError:
        raise errors.ConfigError('%s needs SQLAlchemy, which is not installed: %s'
                                 % (what, INSTALL))
    return sqlalchemy


def uses_sqlalchemy(module):
    """True when a workload file's code reads ``db.engine`` or calls ``db.session``: the
    names its functions' code objects look up (nested ones too), checked before the run
    so that a missing SQLAlchemy is one line, not a failure in every op."""
    import types
    seen = []
    stack = [v.__code__ for v in vars(module).values()
             if isinstance(v, types.FunctionType) and v.__module__ == module.__name__]
    while stack:
        code = stack.pop()
        seen.extend(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return 'engine' in seen or 'session' in seen


def engine(pool, deadlines, **options):
    """An Engine on ``pool`` (a ``pool.Pool``), its ops within ``deadlines``."""
    sqlalchemy = need('db.engine')
    from gloaddriver.backends.postgres.sqla_pool import Bridge
    return sqlalchemy.create_engine('postgresql+psycopg2://', pool=Bridge(pool, deadlines),
                                    **options)


def warm(engine_):
    """The dialect's setup of every open connection of the pool, now (before the first
    phase): its first connection's inspection of the server and each one's own queries."""
    engine_.pool.warm()


def op_error(exc, password=None, engine_=None, timeout=None):
    """What a failed op's exception means to the run: a SQLAlchemy error (or psycopg2's)
    as the OpError it wraps, so the report counts it as the built-in ops' failures are
    (``server:SQLSTATE``, ``network``, ``timeout``) and an outage opens on a lost server;
    anything else as it is. Called in the greenlet whose op failed: an op whose deadline
    was thrown in while it held a connection of ``engine_`` timed out, whatever error
    SQLAlchemy raised after (its rollback on the connection psycopg2 closed)."""
    if engine_ is not None:
        expired = engine_.pool.expired
        g = gevent.getcurrent()
        if g in expired:
            expired.discard(g)
            return errors.RequestTimeout('no reply from PostgreSQL within %.1f s' % timeout)
    orig = exc
    for _depth in range(3):     # SQLAlchemy wraps the driver's error in ``orig``
        inner = getattr(orig, 'orig', None)
        if inner is None or inner is orig:
            break
        orig = inner
    if isinstance(orig, errors.OpError):
        return orig
    if isinstance(orig, psycopg2.Error):
        return pgpool.as_op_error(orig, password)
    return exc
