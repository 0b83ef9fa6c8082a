"""``--workload orm``: a parent/child mix written as SQLAlchemy ORM code, the shape of
SQLAlchemy's own asyncio ORM example, on the Engine over the run's pool (``sqla``).

Two declarative models: ``A`` (table ``orm_a``: id, data, create_date set by the
server, fetched back at once through ``eager_defaults``) with its ``bs``, and ``B``
(table ``orm_b``: id, a_id, data). Two ops, half each by default:

* ``create``: one transaction adding 3 A's with 2, 1 and 2 B's;
* ``read``: ``select(A).options(selectinload(A.bs)).limit(10)``, every B touched.

Each op opens a Session of its own and closes it, as a request handler of a web
service does. ``--workload relational`` runs the same families as plain SQL, one
statement per op: the two side by side say what the ORM costs the client.

Imported only for this workload: it imports SQLAlchemy (1.4 on Python 2.7, 2.x on 3.x).
"""
from __future__ import absolute_import, division, print_function

from sqlalchemy import Column, DateTime, ForeignKey, Integer, String, func, select
from sqlalchemy.orm import Session, declarative_base, relationship, selectinload

TABLES = ('orm_a', 'orm_b')

Base = declarative_base()


class A(Base):
    __tablename__ = 'orm_a'
    id = Column(Integer, primary_key=True)
    data = Column(String)
    create_date = Column(DateTime, server_default=func.now())
    bs = relationship('B')
    # The server's create_date comes back with the INSERT (RETURNING), not on first read.
    __mapper_args__ = {'eager_defaults': True}


class B(Base):
    __tablename__ = 'orm_b'
    id = Column(Integer, primary_key=True)
    a_id = Column(ForeignKey('orm_a.id'))
    data = Column(String)


READ = select(A).options(selectinload(A.bs)).limit(10)


def schema_sql(engine):
    """The tables' DDL as the models make it, for the message when they are missing."""
    from sqlalchemy.schema import CreateTable
    return '; '.join(' '.join(str(CreateTable(t.__table__).compile(engine)).split())
                     for t in (A, B))


def missing(engine):
    """The workload's tables that are not in the database."""
    from sqlalchemy import inspect
    have = inspect(engine).get_table_names()
    return [t for t in TABLES if t not in have]


def create_tables(engine):
    Base.metadata.create_all(engine)


def prime(engine):
    """Each op's code once before the first phase, its writes rolled back: SQLAlchemy
    compiles and caches its statements, and imports some of its own modules, at their
    first use, which would otherwise be the first ops' latency (and, on Python 2.7, some
    hundred syscalls of imports inside the measured window). The rolled-back create uses
    up ids of the tables' sequences, as any rolled-back insert does."""
    read = ops(engine)['read']
    read(0)
    with Session(engine) as session:
        with session.begin():
            session.add_all(_family(0))
            session.flush()
            session.rollback()


def _family(key):
    """A create's rows: 3 A's with 2, 1 and 2 B's."""
    return [A(data=u'a%d-0' % key, bs=[B(data=u'b%d-0' % key), B(data=u'b%d-1' % key)]),
            A(data=u'a%d-1' % key, bs=[B(data=u'b%d-2' % key)]),
            A(data=u'a%d-2' % key, bs=[B(data=u'b%d-3' % key), B(data=u'b%d-4' % key)])]


def ops(engine):
    """{'create': fn(key), 'read': fn(key)} on ``engine``."""
    def op_create(key):
        with Session(engine) as session, session.begin():
            session.add_all(_family(key))

    def op_read(_key):
        with Session(engine) as session:
            parents = session.execute(READ).scalars().all()
            children = 0
            for a in parents:
                children += len(a.bs)
            # How many rows it read: 0 (an empty table) is a miss.
            return len(parents) + children
    return {'create': op_create, 'read': op_read}
