"""A Python workload for PostgreSQL: read a balance, or transfer between two accounts.

    gloaddriver --backend postgres --spawn --spawn-init examples/bank.sql \
        --workload-file examples/postgres_workload.py --greenlets 20 --ops 20000

``db`` runs statements on gloaddriver's pool: ``db.execute(sql, params)`` returns
the rows of a query or the number of rows changed, ``db.fetchone(...)`` the
first row; ``with db.transaction() as tx`` holds one connection from BEGIN to
COMMIT (rolled back if the block raises).
"""
from __future__ import absolute_import, division, print_function

ACCOUNTS = 10000
WEIGHTS = {'balance': 8, 'transfer': 2}


def op_balance(db, key):
    # No row for the account is a miss: fetchone returns None, so say so.
    row = db.fetchone('SELECT abalance FROM accounts WHERE aid = %s', (1 + key % ACCOUNTS,))
    return row if row is not None else False


def op_transfer(db, key, rnd):
    src, dst = 1 + key % ACCOUNTS, rnd.randint(1, ACCOUNTS - 1)
    if dst >= src:
        dst += 1    # another account than src
    amount = rnd.randint(1, 100)
    changes = sorted([(src, -amount), (dst, amount)])
    with db.transaction() as tx:
        # Rows locked in account order: concurrent transfers cannot deadlock.
        for aid, delta in changes:
            tx.execute('UPDATE accounts SET abalance = abalance + %s WHERE aid = %s',
                       (delta, aid))
        tx.execute('INSERT INTO history (aid, delta) VALUES (%s, %s), (%s, %s)',
                   changes[0] + changes[1])
