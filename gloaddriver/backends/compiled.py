"""The optional C extensions (the PostgreSQL row reader, the Tarantool reply cutter):
one rule for whether a connector uses one.

setup.py builds them where a C compiler and the interpreter's headers are at hand; the
install goes on without them. A connector then reads with its pure-Python twin, as it
does when GLOADDRIVER_PURE_PYTHON is set (so a user, or a test, can measure and check
the twin on a machine that has both).
"""
from __future__ import absolute_import, division, print_function

import importlib
import os


def optional(module, name):
    """``module.name`` from a compiled extension, or None: not built here, or not
    wanted (GLOADDRIVER_PURE_PYTHON set)."""
    if os.environ.get('GLOADDRIVER_PURE_PYTHON'):
        return None
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):    # not built, or built from an older source
        return None
