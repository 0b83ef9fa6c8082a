"""gloaddriver: a gevent load driver for Tarantool and PostgreSQL.

The package is importable without side effects; ``python -m gloaddriver`` is the
entry point that monkey-patches first (see ``__main__``).
"""
from __future__ import absolute_import, division, print_function

__version__ = '0.1.0'
