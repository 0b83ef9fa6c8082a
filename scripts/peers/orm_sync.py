"""ORM program: SQLAlchemy's sync Session, the founding comparison's first program.

One Session on one connection (a pool of one), the ops one after the other, each in
a transaction of its own (ormlib.py has the models and the ops). psycopg2, no gevent.
Run by scripts/bench_orm.py; prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

import psycopg2
import sqlalchemy
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

import ormlib


def main():
    a = ormlib.args(__doc__.split('\n')[0])
    engine = create_engine(ormlib.url(a, 'psycopg2'), pool_size=1, max_overflow=0)
    ormlib.Base.metadata.create_all(engine)
    kinds = ormlib.kinds(a.ops, a.seed)
    t = ormlib.Tally()
    t.start()
    with Session(engine) as session:
        for kind in kinds:
            try:
                if kind == 'create':
                    ormlib.create(session)
                else:
                    t.bs_read += ormlib.read(session)
                t.ok += 1
            except Exception as e:
                t.error(e)
    t.stop()
    engine.dispose()
    t.emit(a.ops, 'SQLAlchemy %s sync Session, psycopg2 %s' % (
        sqlalchemy.__version__, psycopg2.__version__.split()[0]))


if __name__ == '__main__':
    main()
