"""The JSON Schema of a result file (``--json``, ``merge --json``, ``--processes``).

The schema itself is package data, ``result.schema.json`` beside this module, so that
tools outside Python can read it too; ``gloaddriver schema`` prints it. The test suite
validates every result it makes against it, and docs/result.md is generated from it.
"""
from __future__ import absolute_import, division, print_function

import io
import json
import os
import sys

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'result.schema.json')


def text():
    with io.open(PATH, encoding='utf-8') as f:
        return f.read()


def load():
    return json.loads(text())


def main(argv, out=None):
    """``gloaddriver schema``: print the schema to stdout."""
    from gloaddriver import converters
    ap = converters.WholeFlagsParser(prog='gloaddriver schema',
                                 description='print the JSON Schema of a result file')
    ap.parse_args(argv)
    out = out if out is not None else sys.stdout
    out.write(text())
    out.flush()
    return 0
