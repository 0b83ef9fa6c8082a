"""A Python workload for Tarantool: browse a customer's orders, place one, ship one.

    gloaddriver --spawn --spawn-init examples/orders.lua \
        --workload-file examples/tarantool_workload.py --greenlets 100 --duration 10 --ops 0

``db`` is gloaddriver's buffered connection (select, insert, replace, update,
upsert, delete, call, eval, execute); spaces and indexes by name or id.
"""
from __future__ import absolute_import, division, print_function

WEIGHTS = {'browse': 6, 'place': 3, 'ship': 1}
CUSTOMERS = 1000


def setup(db):
    # A first order for every customer, so that browse and ship find something.
    for i in range(CUSTOMERS):
        db.replace('orders', [i, u'customer-%d' % i, 1, u'new'])


def op_browse(db, key, rnd):
    # By a secondary index: every order of one customer.
    return db.select('orders', [u'customer-%d' % (key % CUSTOMERS)], index='by_customer')


def op_place(db, key, rnd):
    # A stored procedure; its result is not judged (None is success).
    db.call('place_order', CUSTOMERS + key, u'customer-%d' % (key % CUSTOMERS),
            rnd.randint(1, 5))


def op_ship(db, key):
    # An empty reply (no such order) counts as a miss.
    return db.call('ship_order', key % CUSTOMERS)
