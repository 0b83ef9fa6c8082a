"""The pipelined connector's ``db`` for workload files, without a server: psycopg2's
placeholders as the protocol's, and Python values as typed text parameters."""
from __future__ import absolute_import, division, print_function

import datetime
import decimal

import pytest

from gloaddriver.backends.postgres.user_pipelined import adapt, numbered


@pytest.mark.parametrize('sql,params,want', [
    ('SELECT %s, %s', (1, 2), ('SELECT $1, $2', None)),
    ("SELECT '%%', %s", (1,), ("SELECT '%', $1", None)),
    ('SELECT %(a)s, %(b)s, %(a)s', {'a': 1, 'b': 2}, ('SELECT $1, $2, $1', ['a', 'b'])),
    ("SELECT '%%s'", None, ("SELECT '%%s'", None)),     # no params: as psycopg2 sends it
    ("SELECT '%%s'", (), ("SELECT '%s'", None)),
])
def test_placeholders_are_numbered_as_the_protocol_wants(sql, params, want):
    assert numbered(sql, params) == want


@pytest.mark.parametrize('sql,params', [
    ('SELECT %(a)s', (1,)),
    ('SELECT %s', {'a': 1}),
])
def test_placeholders_of_the_other_style_are_refused(sql, params):
    with pytest.raises(TypeError):
        numbered(sql, params)


@pytest.mark.parametrize('value,want', [
    (None, (0, None)),
    (True, (16, u'true')), (False, (16, u'false')),
    (-5, (20, u'-5')), (2 ** 70, (20, u'%d' % 2 ** 70)),
    (0.1, (701, u'0.1')),
    (u'caf\xe9', (0, u'caf\xe9')),
    (decimal.Decimal('2.50'), (1700, u'2.50')),
    (bytearray(b'\x00\xff'), (17, u'\\x00ff')),
    (memoryview(b'ab'), (17, u'\\x6162')),
    (datetime.datetime(2026, 11, 26, 10, 11, 12, 5), (1114, u'2026-11-26 10:11:12.000005')),
    (datetime.date(2026, 11, 26), (1082, u'2026-11-26')),
    (datetime.time(10, 11), (1083, u'10:11:00')),
    (datetime.timedelta(days=1, seconds=2), (1186, u'1 days 2 seconds 0 microseconds')),
    ([1, None, [u'a"b', u'c\\d']], (0, u'{"1",NULL,{"a\\"b","c\\\\d"}}')),
])
def test_python_values_are_typed_text_parameters(value, want):
    assert adapt(value) == want
