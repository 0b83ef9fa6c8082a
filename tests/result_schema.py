"""Every result the suite makes is checked against the shipped JSON Schema.

``load(path)`` reads a result file and validates it; ``validate(result)`` checks one
already read. Both raise AssertionError naming the path inside the result and what is
wrong, so a change of the result's shape shows up in whichever test made it.
"""
from __future__ import absolute_import, division, print_function

import io
import json

import jsonschema

from gloaddriver.report import schema

_validator = []


def validator():
    if not _validator:
        s = schema.load()
        cls = jsonschema.validators.validator_for(s)
        cls.check_schema(s)
        _validator.append(cls(s))
    return _validator[0]


def problems(result):
    """Every way ``result`` breaks the schema, as 'path: message' lines."""
    return ['%s: %s' % ('/'.join(str(p) for p in e.absolute_path) or '(top)', e.message)
            for e in sorted(validator().iter_errors(result), key=lambda e: list(e.path))]


def validate(result):
    found = problems(result)
    assert not found, 'result does not match result.schema.json:\n' + '\n'.join(found[:20])
    return result


def load(path):
    with io.open(path, encoding='utf-8') as f:
        return validate(json.load(f))


def read(f):
    """From an open result file."""
    return validate(json.load(f))
