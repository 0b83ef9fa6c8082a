"""The tree's rules, checked on the source (lazy imports included): the folders import
each other only down the layers, no import cycles, nothing outside
``gloaddriver/backends/`` knows a server kind by name, and no module-level name is
defined without being used."""
from __future__ import absolute_import, division, print_function

import ast
import io
import os
import re
import sys

import gloaddriver
from gloaddriver import backends

PACKAGE = os.path.dirname(os.path.abspath(gloaddriver.__file__))
ROOT = os.path.dirname(PACKAGE)

# Imports run down these layers, never up. A run flows cli -> config -> run ->
# backends -> measure -> report; the imports follow who uses whom, so they agree with
# that order except at its end: report renders what measure shaped (its stats, its
# phase blocks), so report sits above measure. compat is a subcommand beside cli;
# workload (ops, keys, values) is used by config, run and backends alike. cli.py and
# __main__.py are the cli layer; every other top-level module is a leaf (errors, py23,
# converters, the package itself): it imports only other leaves, and anyone may
# import it.
LAYERS = ('cli', 'compat', 'config', 'run', 'backends', 'report', 'measure', 'workload')


def _modules():
    """{dotted module name: path} of every module in the package."""
    out = {}
    for folder, _dirs, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith('.py'):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, '.')
                out[rel[:-len('.__init__')] if rel.endswith('.__init__') else rel] = path
    return out


def _imports(path, known):
    """The package modules a file imports, at any depth of its code."""
    with io.open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # "from pkg import mod" depends on mod; "from mod import name" on mod.
            subs = ['%s.%s' % (node.module, a.name) for a in node.names]
            names = [n for n in subs if n in known] or [node.module]
        else:
            continue
        found.update(n for n in names if n in known)
    return found


def _graph():
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        # Importing a.b.c runs a/__init__ and a/b/__init__ first: only the leaf counts
        # as an edge here, parents are imported but not depended upon.
        graph[name] = _imports(path, mods) - {name}
    return graph


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(node, stack):
        state[node] = 'open'
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 'open':
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack)
                if found:
                    return found
        stack.pop()
        state[node] = 'done'
        return None
    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def _layer(module):
    """A module's layer, or None for a leaf."""
    parts = module.split('.')
    if len(parts) == 1:
        return None
    if parts[1:2] in (['cli'], ['__main__'], ['pgbench_command']):   # the command lines
        return 'cli'
    if len(parts) > 2 or os.path.isdir(os.path.join(PACKAGE, *parts[1:2])):
        return parts[1]
    return None


def _upward(graph, layer_of):
    """The imports that run up the layers, or from a leaf to a non-leaf."""
    rank = dict((name, i) for i, name in enumerate(LAYERS))
    bad = []
    for module, imported in sorted(graph.items()):
        here = layer_of(module)
        for other in sorted(imported):
            there = layer_of(other)
            if there is None or there == here:
                continue
            if here is None or rank[there] < rank[here]:
                bad.append('%s (%s) imports %s (%s)' % (module, here or 'a leaf', other, there))
    return bad


def test_the_layer_checker_finds_an_import_up():
    layer_of = {'p.cli': 'cli', 'p.run.a': 'run', 'p.report.b': 'report', 'p.errors': None}.get
    assert _upward({'p.cli': {'p.run.a'}, 'p.run.a': {'p.report.b', 'p.errors'},
                    'p.report.b': {'p.errors'}, 'p.errors': set()}, layer_of) == []
    assert _upward({'p.report.b': {'p.run.a'}}, layer_of) == [
        'p.report.b (report) imports p.run.a (run)']
    assert _upward({'p.errors': {'p.run.a'}}, layer_of) == [
        'p.errors (a leaf) imports p.run.a (run)']
    assert _layer('gloaddriver.run.session') == 'run' and _layer('gloaddriver.errors') is None
    assert _layer('gloaddriver.backends') == 'backends' and _layer('gloaddriver.cli') == 'cli'


def test_every_folder_is_a_layer():
    folders = [d for d in os.listdir(PACKAGE)
               if os.path.isfile(os.path.join(PACKAGE, d, '__init__.py'))]
    assert sorted(folders) == sorted(LAYERS[1:]), 'place a new folder in LAYERS'


def test_imports_run_down_the_layers():
    bad = _upward(_graph(), _layer)
    assert not bad, '\n'.join(bad)


def test_the_checker_finds_a_cycle():
    assert _cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert _cycle({'a': {'b'}, 'b': set()}) is None


def test_no_module_imports_one_that_imports_it_back():
    cycle = _cycle(_graph())
    assert cycle is None, ' -> '.join(cycle)


def test_no_server_kind_is_named_outside_backends():
    names = '|'.join(re.escape(n) for n in backends.names())
    compared = re.compile(r"""(==|!=)\s*['"](%s)['"]|['"](%s)['"]\s*(==|!=)""" % (names, names))
    imported = re.compile(r'gloaddriver\.backends\.(%s)\b' % names)
    offenders = []
    for name, path in _modules().items():
        if name.startswith('gloaddriver.backends'):
            continue
        with io.open(path, encoding='utf-8') as f:
            for i, line in enumerate(f, 1):
                if compared.search(line) or imported.search(line):
                    offenders.append('%s:%d: %s' % (name, i, line.strip()))
    assert not offenders, '\n'.join(offenders)


# -- names defined and never used -------------------------------------------------

_WORD = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_STR = (ast.Str,) if sys.version_info[0] == 2 else (ast.Constant,)


def _sources(top, suffixes):
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ('__pycache__', '.venv', 'site')]
        for f in sorted(files):
            if f.endswith(suffixes):
                yield os.path.join(folder, f)


def _defined(tree):
    """(name, line) of each module-level function, class and assigned name (also
    under a module-level if or try), dunders left out."""
    out = []

    def scan(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                out.append((node.name, node.lineno))
            elif isinstance(node, ast.Assign):
                out.extend((n.id, node.lineno) for t in node.targets for n in ast.walk(t)
                           if isinstance(n, ast.Name))
            elif isinstance(node, ast.If):
                scan(node.body)
                scan(node.orelse)
            elif hasattr(node, 'handlers'):      # try (ast.Try, or 2.7's TryExcept)
                scan(node.body)
                scan(node.orelse)
    scan(tree.body)
    return [(n, line) for n, line in out if not (n.startswith('__') and n.endswith('__'))]


def _used(tree):
    """Every name a module reads: names loaded, attributes, imported names, and the
    words of its strings (getattr, registries) other than docstrings."""
    docstrings = set(id(node.value) for node in ast.walk(tree)
                     if isinstance(node, ast.Expr) and isinstance(node.value, _STR))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.update(node.name.split('.'))
        elif isinstance(node, _STR) and id(node) not in docstrings:
            # ast.Constant's value (3.8 and later; .s is deprecated), ast.Str's s (2.7)
            text = node.value if hasattr(ast, 'Constant') and isinstance(node, ast.Constant) \
                else node.s
            if isinstance(text, (str, type(u''))):
                out.update(_WORD.findall(text))
    return out


def _unused():
    """'path:line name' of each module-level name in the package that nothing in the
    package, tests, scripts or examples uses (files other than Python: by their words)."""
    used, package = set(), []
    for top in ('gloaddriver', 'tests', 'scripts', 'examples'):
        for path in _sources(os.path.join(ROOT, top), ('.py',)):
            with io.open(path, encoding='utf-8') as f:
                tree = ast.parse(f.read(), path)
            used |= _used(tree)
            if top == 'gloaddriver':
                package.append((path, tree))
        for path in _sources(os.path.join(ROOT, top), ('.py3', '.sh', '.ini', '.lua', '.js')):
            with io.open(path, encoding='utf-8', errors='replace') as f:
                used.update(_WORD.findall(f.read()))
    return ['%s:%d %s' % (os.path.relpath(path, ROOT), line, name)
            for path, tree in package for name, line in _defined(tree) if name not in used]


def test_the_unused_checker_sees_definitions_and_uses():
    tree = ast.parse('"""Doc naming UNUSED."""\nA = 1\nB, C = 2, 3\nif A:\n    D = 4\n'
                     'def f():\n    """UNUSED again."""\n    return A + x.B\n'
                     'class K(object):\n    pass\nG = getattr(m, "C")\n__all__ = []\n')
    assert [n for n, _line in _defined(tree)] == ['A', 'B', 'C', 'D', 'f', 'K', 'G']
    used = _used(tree)
    assert set(['A', 'B', 'C', 'getattr']) <= used
    assert not set(['D', 'f', 'K', 'G', 'UNUSED']) & used


def test_no_module_level_name_is_unused():
    unused = _unused()
    assert not unused, 'defined, never used:\n' + '\n'.join(unused)


# Longer functions allowed, and why (docs/architecture.md, "Function length"): the
# argparse declarations are one flat list of flags. The hot loops (run/runner.py's
# _run_single, _run_mix, _run_open) are under the limit and stay inline for speed.
LONG_ALLOWED = {('gloaddriver/config/flags.py', 'build_parser')}
MAX_FUNCTION_LINES = 80


def test_no_function_is_over_80_lines():
    root = os.path.dirname(os.path.dirname(gloaddriver.__file__))
    long_ones = set()
    for folder, _dirs, files in os.walk(os.path.dirname(gloaddriver.__file__)):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            with io.open(path, encoding='utf-8') as f:
                lines = f.read()
            tree = ast.parse(lines)
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef):
                    # the end: the last line of the deepest last statement
                    end = max(getattr(n, 'lineno', 0) for n in ast.walk(node))
                    if end - node.lineno + 1 > MAX_FUNCTION_LINES:
                        long_ones.add((os.path.relpath(path, root).replace(os.sep, '/'),
                                       node.name))
    assert long_ones == LONG_ALLOWED
