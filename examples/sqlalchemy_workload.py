"""A workload file in SQLAlchemy's ORM: a user's own declarative models and queries.

    gloaddriver --backend postgres --spawn \
        --workload-file examples/sqlalchemy_workload.py --greenlets 20 --ops 20000

``db.session()`` is a SQLAlchemy Session on ``db.engine``, whose connections are
gloaddriver's cooperative pool (--pool-size): the same code a gevent service runs.
SQLAlchemy 1.4 (Python 2.7) and 2.x (3.x) both run it: ``pip install
'gloaddriver[sqlalchemy]'``.
"""
from __future__ import absolute_import, division, print_function

from sqlalchemy import Column, ForeignKey, Integer, String, func, select
from sqlalchemy.orm import declarative_base, relationship

Base = declarative_base()
CUSTOMERS = 1000
WEIGHTS = {'order': 3, 'history': 6, 'spent': 1}


class Customer(Base):
    __tablename__ = 'shop_customer'
    id = Column(Integer, primary_key=True)
    name = Column(String(40), nullable=False)
    orders = relationship('Order', back_populates='customer')


class Order(Base):
    __tablename__ = 'shop_order'
    id = Column(Integer, primary_key=True)
    customer_id = Column(ForeignKey('shop_customer.id'), nullable=False, index=True)
    amount = Column(Integer, nullable=False)
    customer = relationship('Customer', back_populates='orders')


def setup(db):
    Base.metadata.create_all(db.engine)
    with db.session() as session, session.begin():
        if session.execute(select(func.count(Customer.id))).scalar() == 0:
            session.add_all([Customer(id=i, name=u'customer-%d' % i)
                             for i in range(1, CUSTOMERS + 1)])


def op_order(db, key, rnd):
    with db.session() as session, session.begin():
        customer = session.get(Customer, 1 + key % CUSTOMERS)
        customer.orders.append(Order(amount=1 + int(rnd.random() * 100)))


def op_history(db, key):
    # The customer's last five orders; a customer with none yet is a miss.
    with db.session() as session:
        orders = session.execute(
            select(Order).where(Order.customer_id == 1 + key % CUSTOMERS)
            .order_by(Order.id.desc()).limit(5)).scalars().all()
        return [(o.id, o.amount) for o in orders]


def op_spent(db, key):
    with db.session() as session:
        return session.execute(select(func.coalesce(func.sum(Order.amount), 0))
                               .where(Order.customer_id == 1 + key % CUSTOMERS)).scalar()
