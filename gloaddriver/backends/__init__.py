"""The registry of server kinds: ``--backend NAME`` -> the package that implements it.

A backend is one folder here whose package has ``KIND``, a
:class:`gloaddriver.backends.base.Kind` (the contract, documented there), and
one line in ``REGISTRY``. Packages are imported on first use, so a kind's
client libraries load only when it is asked for (and after gevent's
monkey-patching).
"""
from __future__ import absolute_import, division, print_function

import importlib

REGISTRY = {
    'tarantool': 'gloaddriver.backends.tarantool',
    'postgres': 'gloaddriver.backends.postgres',
}
DEFAULT = 'tarantool'


def names():
    return sorted(REGISTRY)


def register(name, package):
    """Add a kind (a package path with KIND); used by tests for their in-memory backend."""
    REGISTRY[name] = package


def get(name):
    """The Kind registered as ``name``."""
    return importlib.import_module(REGISTRY[name]).KIND


def kinds():
    return [get(n) for n in names()]
