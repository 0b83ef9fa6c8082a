"""PostgreSQL backend: psycopg2 made cooperative, a blocking LIFO pool, workloads."""
from __future__ import absolute_import, division, print_function
