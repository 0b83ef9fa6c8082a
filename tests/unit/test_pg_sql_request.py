"""--sql on PostgreSQL without a server: its placeholders as the protocol's and as
psycopg2's, quoted text left alone."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import errors
from gloaddriver.backends.postgres.sql_request import Statement


@pytest.mark.parametrize('sql,text,psycopg2,order', [
    ('SELECT ?, ?', 'SELECT $1, $2', 'SELECT %s, %s', (1, 2)),
    ('SELECT $2, $1, $2', 'SELECT $2, $1, $2', 'SELECT %s, %s, %s', (2, 1, 2)),
    ("SELECT '?', '$1', \"a?\", ? , 5 % 2", "SELECT '?', '$1', \"a?\", $1 , 5 % 2",
     "SELECT '?', '$1', \"a?\", %s , 5 %% 2", (1,)),
    ("SELECT 'it''s ?', '50%'", "SELECT 'it''s ?', '50%'", "SELECT 'it''s ?', '50%%'", ()),
])
def test_placeholders_in_both_forms(sql, text, psycopg2, order):
    s = Statement(sql)
    assert (s.text, s.psycopg2, s.order) == (text, psycopg2, order)
    assert s.count == max(order or (0,))


def test_mixed_placeholders_are_refused():
    with pytest.raises(errors.ConfigError):
        Statement('SELECT ?, $1')
