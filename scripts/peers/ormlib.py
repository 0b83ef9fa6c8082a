"""What the ORM programs of ``scripts/bench orm`` share: the founding comparison's two
models, its ops in their seeded order, the arguments and the JSON line each prints.

The models are the ones in SQLAlchemy's own asyncio example, which the comparison
ran: ``A`` (table ``orm_a``: id, data, create_date with a server default, fetched back
at insert by ``eager_defaults``, and ``A.bs``) and ``B`` (``orm_b``: id, a_id, data).
Half the ops are "create" (one transaction adding 3 A's with 2, 1 and 2 B's) and half
"read" (the first 10 A's with their B's by ``selectinload``, every ``a.bs`` touched), in
an order shuffled by the seed: every program of a round runs the same sequence.

The sync half (``create``, ``read``) serves the Session programs (orm_sync.py,
orm_gevent.py); the asyncio one (orm_asyncio.py3) awaits the same statements itself.
Column-style declarations, so the models load on SQLAlchemy 1.4 and 2.x alike.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import random
import resource
import sys
import time

from sqlalchemy import Column, DateTime, ForeignKey, Integer, String, func, select
from sqlalchemy.engine import URL
from sqlalchemy.orm import declarative_base, relationship, selectinload

Base = declarative_base()


class A(Base):
    __tablename__ = 'orm_a'

    id = Column(Integer, primary_key=True)
    data = Column(String)
    create_date = Column(DateTime, server_default=func.now())
    bs = relationship('B')

    # create_date comes back in the INSERT's RETURNING, not by a later SELECT
    __mapper_args__ = {'eager_defaults': True}


class B(Base):
    __tablename__ = 'orm_b'

    id = Column(Integer, primary_key=True)
    a_id = Column(ForeignKey('orm_a.id'))
    data = Column(String)


READ = select(A).options(selectinload(A.bs)).limit(10)


def family():
    """One create op's objects: 3 A's with 2, 1 and 2 B's."""
    return [A(bs=[B(), B()], data='a1'), A(bs=[B()], data='a2'), A(bs=[B(), B()], data='a3')]


def create(session):
    with session.begin():
        session.add_all(family())


def read(session):
    """Each A read and each of its B's touched; the number of B's seen."""
    n = 0
    with session.begin():
        for a in session.execute(READ).scalars():
            for _b in a.bs:
                n += 1
    return n


def kinds(ops, seed):
    """The ops' order: ``ops // 2`` creates and the rest reads, shuffled by ``seed``."""
    out = ['create'] * (ops // 2) + ['read'] * (ops - ops // 2)
    random.Random(seed).shuffle(out)
    return out


def args(description, **extra):
    """The program's options; the password comes from $PGPASSWORD, never argv."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument('--host', default='127.0.0.1')
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--user', required=True)
    ap.add_argument('--database', required=True)
    ap.add_argument('--ops', type=int, default=35000)
    ap.add_argument('--seed', type=int, default=1)
    for name, (kind, default, text) in sorted(extra.items()):
        ap.add_argument('--' + name.replace('_', '-'), type=kind, default=default, help=text)
    return ap.parse_args()


def url(a, driver):
    return URL.create('postgresql+' + driver, username=a.user,
                      password=os.environ.get('PGPASSWORD'), host=a.host, port=a.port,
                      database=a.database)


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Tally(object):
    """ok/failed counts, the errors by type and message (the first 5 kinds kept), the
    B's the reads saw; ``start()`` and ``stop()`` around the ops."""

    def __init__(self):
        self.ok = self.failed = self.bs_read = 0
        self.errors = {}

    def start(self):
        self.c0 = cpu()
        self.t0 = time.time()

    def stop(self):
        self.seconds = time.time() - self.t0
        self.cpu_seconds = cpu() - self.c0

    def error(self, exc):
        self.failed += 1
        key = '%s: %s' % (type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else '')
        if key in self.errors or len(self.errors) < 5:
            self.errors[key] = self.errors.get(key, 0) + 1

    def emit(self, ops, client, **extra):
        out = dict(extra, client=client, ops=ops, ok=self.ok, failed=self.failed,
                   seconds=self.seconds, cpu_seconds=self.cpu_seconds,
                   ops_per_sec=ops / self.seconds if self.seconds else 0.0,
                   cpu_us_per_op=self.cpu_seconds * 1e6 / ops if ops else None,
                   bs_read=self.bs_read, errors=self.errors,
                   python=sys.version.split()[0])
        sys.stdout.write(json.dumps(out, sort_keys=True) + '\n')
        sys.stdout.flush()
