"""ORM program: the plain gevent + psycogreen SQLAlchemy loop.

What a gevent service does with its ORM, without a load driver: gevent's
monkey.patch_all(), psycopg2 made cooperative by psycogreen, one SQLAlchemy engine
(QueuePool of --greenlets connections) and --greenlets greenlets taking the ops from
one shared iterator, a Session of its own for each op (ormlib.py has the models and
the ops). No timeouts, no per-op latency, no stats. Run by scripts/bench_orm.py;
prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

from gevent import monkey

monkey.patch_all()

import gevent  # noqa: E402
import psycogreen  # noqa: E402
import psycogreen.gevent  # noqa: E402
import psycopg2  # noqa: E402
import sqlalchemy  # noqa: E402
from sqlalchemy import create_engine  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

import ormlib  # noqa: E402


def main():
    a = ormlib.args(__doc__.split('\n')[0],
                    greenlets=(int, 40, 'greenlets, and the pool size'))
    psycogreen.gevent.patch_psycopg()
    engine = create_engine(ormlib.url(a, 'psycopg2'), pool_size=a.greenlets, max_overflow=0)
    ormlib.Base.metadata.create_all(engine)
    kinds = iter(ormlib.kinds(a.ops, a.seed))
    t = ormlib.Tally()

    def worker():
        for kind in kinds:
            try:
                with Session(engine) as session:
                    if kind == 'create':
                        ormlib.create(session)
                    else:
                        n = ormlib.read(session)
                        t.bs_read += n   # after the call: greenlets switch inside it
                t.ok += 1
            except Exception as e:
                t.error(e)
    t.start()
    gevent.joinall([gevent.spawn(worker) for _ in range(a.greenlets)])
    t.stop()
    engine.dispose()
    t.emit(a.ops, 'SQLAlchemy %s, gevent %s + psycogreen %s, psycopg2 %s, %d greenlets' % (
        sqlalchemy.__version__, gevent.__version__, getattr(psycogreen, '__version__', '?'),
        psycopg2.__version__.split()[0], a.greenlets))


if __name__ == '__main__':
    main()
