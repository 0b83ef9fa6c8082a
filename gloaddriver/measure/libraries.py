"""Which library a profiled function belongs to, from its file (or, for a function
written in C, from the type it is a method of): a profile's and a flame graph's own
time split between the user's code, the libraries it calls (SQLAlchemy, psycopg2,
gevent...), the standard library and gloaddriver itself.

A name is the installed package's top folder (``sqlalchemy``, ``psycopg2``); the
others are ``gloaddriver``, ``python`` (the standard library and the interpreter's
built-ins) and ``your code`` (a file outside all of these: a workload file, a script).
"""
from __future__ import absolute_import, division, print_function

import json
import os
import re
import sys

_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB = tuple(set(os.path.dirname(os.path.abspath(f)) + os.sep
                    for f in (os.__file__, os.path.dirname(json.__file__))))
_PACKAGES = (os.sep + 'site-packages' + os.sep, os.sep + 'dist-packages' + os.sep)
_PACKAGES_END = ('site-packages', 'dist-packages')
# A C method as profilers name it: "<method 'execute' of 'psycopg2.extensions.cursor'
# objects>": its type's module says whose it is.
_C_METHOD = re.compile(r"of '([A-Za-z_][A-Za-z0-9_]*)\.")
OWN, PYTHON, USER = 'gloaddriver', 'python', 'your code'


def library(path, name=''):
    """The library of a function defined in ``path`` (named ``name``)."""
    if not path or path.startswith(('<', '~')) or \
            os.sep not in path and not path.endswith(('.py', '.pyc', '.pyx')):
        # Built in, or written in C: profilers give a module name ('builtins') or none
        m = _C_METHOD.search(name or '')
        top = m.group(1) if m else None
        if top is None or top in sys.builtin_module_names or _in_stdlib(top):
            return PYTHON
        return OWN if top == OWN else top.lower().lstrip('_')
    if not os.path.isabs(path):
        return _relative(path)
    if path.startswith(_OWN):
        return OWN
    for marker in _PACKAGES:
        i = path.rfind(marker)
        if i >= 0:
            top = path[i + len(marker):].split(os.sep)[0]
            return re.split(r'[.-]', top)[0].lower().lstrip('_') or top
    if path.startswith(_STDLIB):
        return PYTHON
    return USER


def _relative(path):
    """A path as py-spy writes it, relative to the sys.path entry it was found in
    (``sqlalchemy/orm/session.py``, ``threading.py``): its first part is the module."""
    top = path.split(os.sep)[0]
    if top == OWN:
        return OWN
    if _in_stdlib(top):
        return PYTHON
    for folder in sys.path:
        if folder.endswith(_PACKAGES_END) and os.path.exists(os.path.join(folder, top)):
            return re.split(r'[.-]', top)[0].lower().lstrip('_') or top
    return USER


def _in_stdlib(name):
    """True when ``name`` (a module, or a file or folder of one) is the standard
    library's (``collections``, ``threading.py``)."""
    for folder in _STDLIB:
        if os.path.exists(os.path.join(folder, name)) or \
                os.path.exists(os.path.join(folder, name + '.py')):
            return True
    return False


def split(rows, total):
    """[(library, own amount)] -> the rows of a ``libraries`` block, the largest first:
    {'library', 'own', 'own_share'} (own: seconds or samples, as given)."""
    by = {}
    for lib, own in rows:
        by[lib] = by.get(lib, 0) + own
    out = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{'library': lib, 'own': round(own, 6) if isinstance(own, float) else own,
             'own_share': round(own / float(total), 4) if total else None}
            for lib, own in out]


def line(block):
    """One line of the split: 'sqlalchemy 55.1%, python 20.3%, ...'."""
    return ', '.join('%s %.1f%%' % (r['library'], 100.0 * (r['own_share'] or 0))
                     for r in block if (r['own_share'] or 0) >= 0.001)
