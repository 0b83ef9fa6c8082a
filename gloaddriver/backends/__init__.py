"""Backends: one package per server kind (tarantool, postgres)."""
from __future__ import absolute_import, division, print_function
