"""ORM program: SQLAlchemy's asyncio extension on asyncpg. Python 3 only.

The founding comparison's second and third programs as written there: an async
engine with pool_size 3000 (create_async_engine), an AsyncSession of its own for each
op, every op a task; with --chunk 0 all the tasks gathered at once, with --chunk N
gathered N at a time, a chunk after the other (ormlib.py has the models and the ops).
Plain asyncio, as there (no uvloop). Run by scripts/bench_orm.py; prints one JSON line.
"""
import asyncio

import asyncpg
import sqlalchemy
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

import ormlib


async def run(a, t):
    engine = create_async_engine(ormlib.url(a, 'asyncpg'), pool_size=a.pool_size)
    async with engine.begin() as conn:
        await conn.run_sync(ormlib.Base.metadata.create_all)
    sessions = async_sessionmaker(engine, expire_on_commit=False)

    async def create():
        async with sessions() as session:
            async with session.begin():
                session.add_all(ormlib.family())

    async def read():
        n = 0
        async with sessions() as session:
            result = await session.execute(ormlib.READ)
            for a in result.scalars():
                for _b in a.bs:
                    n += 1
        t.bs_read += n

    async def op(kind):
        try:
            await (create() if kind == 'create' else read())
            t.ok += 1
        except Exception as e:
            t.error(e)

    kinds = ormlib.kinds(a.ops, a.seed)
    t.start()
    if a.chunk:
        for i in range(0, len(kinds), a.chunk):
            await asyncio.gather(*[op(k) for k in kinds[i:i + a.chunk]])
    else:
        await asyncio.gather(*[op(k) for k in kinds])
    t.stop()
    await engine.dispose()


def main():
    a = ormlib.args(__doc__.split('\n')[0],
                    chunk=(int, 0, 'gather the tasks N at a time (0: all at once)'),
                    pool_size=(int, 3000, "the async engine's pool_size"))
    t = ormlib.Tally()
    asyncio.run(run(a, t))
    t.emit(a.ops, 'SQLAlchemy %s asyncio, asyncpg %s, pool_size %d, %s' % (
        sqlalchemy.__version__, asyncpg.__version__, a.pool_size,
        'chunks of %d gathered' % a.chunk if a.chunk else 'every task at once'))


if __name__ == '__main__':
    main()
