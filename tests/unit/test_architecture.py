"""The tree's rules, checked on the source: no import cycles (lazy imports included), and
nothing outside ``gloaddriver/backends/`` knows a server kind by name."""
from __future__ import absolute_import, division, print_function

import ast
import io
import os
import re

import gloaddriver
from gloaddriver import backends

PACKAGE = os.path.dirname(os.path.abspath(gloaddriver.__file__))


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
