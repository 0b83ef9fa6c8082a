"""Tarantool backend: IPROTO protocol, the buffered connection, the sync baseline."""
from __future__ import absolute_import, division, print_function
