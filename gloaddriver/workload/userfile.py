"""``--workload-file FILE.py``: a user's own workload as plain Python functions.

The file is an ordinary module (2.7 and 3.x)::

    WEIGHTS = {'checkout': 1, 'browse': 9}     # optional: one weighted mix phase

    def setup(db):                              # optional: once, before the phases
        ...

    def on_start(db, worker):                   # optional: each worker, before its first op
        ...

    def op_browse(db, key, rnd):                # each op_NAME is an op type
        return db.select('items', [key])

    def op_checkout(db, key):                   # rnd is optional
        db.call('checkout', key)

    def on_stop(db, worker):                    # optional: each worker, after its last op
        ...

    def teardown(db):                           # optional: once, after the phases
        ...

``db`` is the backend's client as its users know it (``Backend.client``): the
buffered Tarantool connection, whose select, insert, replace, update, upsert,
delete, call, eval and execute take their arguments as tarantool-python's do (the
sync connector's ``db`` is tarantool-python itself), or a pooled PostgreSQL
client. ``key`` comes from --keys/--distribution, ``rnd`` is the worker's seeded ``random.Random``. An op may
make several requests; its latency is the whole function. What it returns is
judged like a built-in op's result: None is success, an empty result or False a
miss, an exception a failure counted by its kind. Without WEIGHTS each op is a
phase of its own, in the order of the file (``PHASES = [...]`` may reorder or
repeat them); --phases and --mix choose among the ops as for built-in ones.

``on_start`` and ``on_stop`` are Locust's: each worker's, with its own ``db`` and its
number ``worker`` (0 up, unique across the processes of --processes), run side by side
for all workers, on_start after setup and before the first phase, on_stop after the last
phase and before teardown; neither is in any phase's figures. An on_start that raises
stops the run before the first op (exit 3); an on_stop that raises is a note.

The module is imported once per process. A file that cannot be imported, has no
op_ function or a malformed WEIGHTS is one line naming the file (and line), exit 2.
"""
from __future__ import absolute_import, division, print_function

import functools
import inspect
import os
import sys
import traceback

from gloaddriver import errors

PREFIX = 'op_'
_loaded = {}


class UserWorkload(object):
    """The ops, weights and hooks of one workload file."""

    def __init__(self, path, ops, weights, phases, hooks, module=None):
        self.path = path
        self.module = module      # the imported file, for a backend's look at its code
        self.ops = ops            # {name: function}, in the file's order
        self.names = tuple(ops)
        self.weights = weights    # {name: weight} or None
        self.phases = phases      # names, or None
        self.setup = hooks['setup']          # fn(db), or None; so are the others
        self.teardown = hooks['teardown']
        self.on_start = hooks['on_start']    # fn(db, worker)
        self.on_stop = hooks['on_stop']

    def default_phases(self):
        """(phases text, mix text): what runs when neither --phases nor --mix is given."""
        if self.weights:
            return None, ','.join('%s=%d' % (n, self.weights[n]) for n in self.names
                                  if n in self.weights)
        return ','.join(self.phases or self.names), None

    def bind(self, db, rnd):
        """{op name: fn(key)} calling the user's functions with this worker's db and rnd."""
        out = {}
        for name, fn in self.ops.items():
            # functools.partial is C code: no Python frame of ours between the runner
            # and the user's function.
            params = _params(fn)
            out[name] = (functools.partial(fn, db, **{params[2]: rnd}) if len(params) == 3
                         else functools.partial(fn, db))
        return out


def _params(fn):
    spec = inspect.getargspec(fn) if sys.version_info[0] == 2 else inspect.getfullargspec(fn)
    return spec.args


def _where(path, fn):
    try:
        return '%s, line %d' % (path, fn.__code__.co_firstlineno)
    except AttributeError:
        return path


def _import(path):
    name = 'gloaddriver_workload_%d' % len(_loaded)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)   # so the file can import its neighbours
    no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True   # no FILEc beside it
    try:
        return _load_source(name, path)
    except SyntaxError as e:
        raise errors.ConfigError('workload file %s, line %s: %s' % (path, e.lineno, e.msg))
    except Exception as e:
        line = '?'
        for frame in traceback.extract_tb(sys.exc_info()[2]):
            if os.path.abspath(frame[0]) == os.path.abspath(path):
                line = frame[1]
        raise errors.ConfigError('workload file %s, line %s: cannot import it: %s: %s'
                                 % (path, line, e.__class__.__name__, e))
    finally:
        sys.path.remove(folder)
        sys.dont_write_bytecode = no_bytecode


def _load_source(name, path):
    if sys.version_info[0] == 2:   # pragma: no cover - Python 2
        import imp
        return imp.load_source(name, path)
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader(name, path)   # whatever the file's suffix
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _ordered_ops(module):
    ops = []
    for attr, value in vars(module).items():
        if attr.startswith(PREFIX) and callable(value):
            code = getattr(value, '__code__', None)
            ops.append((code.co_firstlineno if code else 0, attr[len(PREFIX):], value))
    ops.sort()
    return [(name, fn) for _line, name, fn in ops]


def load(path):
    """The UserWorkload of ``path`` (imported once per process)."""
    key = os.path.abspath(path)
    if key in _loaded:
        return _loaded[key]
    if not os.path.isfile(path):
        raise errors.ConfigError('workload file %s not found' % path)
    module = _import(path)
    ops = _ordered_ops(module)
    if not ops:
        raise errors.ConfigError('workload file %s defines no op: write at least one function '
                                 'op_NAME(db, key[, rnd])' % path)
    for name, fn in ops:
        try:
            n = len(_params(fn))
        except TypeError:
            n = -1
        if n not in (2, 3):
            raise errors.ConfigError('%s: op_%s must take (db, key) or (db, key, rnd)'
                                     % (_where(path, fn), name))
    names = [n for n, _fn in ops]
    weights = getattr(module, 'WEIGHTS', None)
    if weights is not None:
        if not isinstance(weights, dict) or not weights:
            raise errors.ConfigError('workload file %s: WEIGHTS must be a dict of op name to '
                                     'weight, e.g. {%r: 1}' % (path, names[0]))
        for name, w in weights.items():
            if name not in names:
                raise errors.ConfigError('workload file %s: WEIGHTS names %r, which has no '
                                         'function op_%s; ops: %s'
                                         % (path, name, name, ', '.join(names)))
            if not isinstance(w, int) or isinstance(w, bool) or w < 0:
                raise errors.ConfigError('workload file %s: WEIGHTS[%r] must be a whole number '
                                         '>= 0, got %r' % (path, name, w))
        weights = dict((n, w) for n, w in weights.items() if w)
        if not weights:
            raise errors.ConfigError('workload file %s: WEIGHTS gives every op weight 0' % path)
    phases = getattr(module, 'PHASES', None)
    if phases is not None:
        bad = [p for p in phases if p not in names] if isinstance(phases, (list, tuple)) else [
            phases]
        if bad or not phases:
            raise errors.ConfigError('workload file %s: PHASES must list op names from %s; got %r'
                                     % (path, ', '.join(names), phases))
    hooks = {}
    for hook, args in (('setup', '(db)'), ('teardown', '(db)'), ('on_start', '(db, worker)'),
                       ('on_stop', '(db, worker)')):
        fn = getattr(module, hook, None)
        if fn is not None and (not callable(fn) or len(_params(fn)) != args.count(',') + 1):
            raise errors.ConfigError('%s: %s must be a function of %s'
                                     % (_where(path, fn), hook, args))
        hooks[hook] = fn
    from collections import OrderedDict
    loaded = UserWorkload(path, OrderedDict(ops), weights, list(phases) if phases else None,
                          hooks, module)
    _loaded[key] = loaded
    return loaded
