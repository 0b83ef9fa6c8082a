"""What a PostgreSQL SQLSTATE means to the run, for both connectors (psycopg2's pool
and the pipelined connection)."""
from __future__ import absolute_import, division, print_function


def is_outage(code):
    """Class 08 (connection exception) and 57P (shutting down, crashed, not yet
    accepting connections): the server is going or not yet back, an outage rather than
    an answer to the statement."""
    return code[:2] == '08' or code[:3] == '57P'
