"""Lazy rows and binary column values (backends/postgres/replies.py, row_values.py) as the
pipelined connection's reader uses them: a lazy parser fed streams split everywhere,
then each binary type read from bytes built here independently of the code under test."""
from __future__ import absolute_import, division, print_function

import datetime
import struct
import uuid

import psycopg2.tz
import pytest

import os

from gloaddriver.backends.postgres import row_values
from gloaddriver.backends.postgres.replies import ProtocolError, ReplyParser, Rows
from gloaddriver.py23 import PY2
from tests.unit.test_pg_replies import BOUND, READY, done, msg, row

INT4, INT8, TEXT = 23, 20, 25
UTC = psycopg2.tz.FixedOffsetTimezone(offset=0)
READERS = [('python', row_values.decode_rows_python),
           ('compiled', row_values.decode_rows_compiled)]


@pytest.fixture(autouse=True, params=[name for name, _f in READERS])
def reader(request, monkeypatch):
    """Every test here runs through both readers, as the connections would call them."""
    decode = dict(READERS)[request.param]
    if decode is None:
        pytest.fail('the compiled reader is not built in this environment (setup.py builds '
                    'it; GLOADDRIVER_PURE_PYTHON turns it off)'
                    if not os.environ.get('GLOADDRIVER_PURE_PYTHON') else
                    'GLOADDRIVER_PURE_PYTHON is set: no compiled reader to test')
    monkeypatch.setattr(row_values, 'decode_rows', decode)
    return request.param


def i4(v):
    return struct.pack('!i', v)


# Two queries' rows (binary int4 and text, a NULL, one long row) around a DML count.
LAZY_STREAM = b''.join([
    BOUND, row(i4(1), b'one'), row(i4(2), None), row(i4(3), b'x' * 300),
    done(b'SELECT 3'), READY,
    BOUND, done(b'UPDATE 2'), READY,
    BOUND, msg(b'n'), done(b'SELECT 0'), READY,
    BOUND, row(i4(-7), u'caf\xe9'.encode('utf-8')), done(b'SELECT 1'), READY,
])
_, COLUMNS = row_values.formats([INT4, TEXT])
LAZY_EXPECTED = [[(1, u'one'), (2, None), (3, u'x' * 300)], 2, [], [(-7, u'caf\xe9')]]


def lazy_parse(pieces):
    parser = ReplyParser('test', lazy=True)
    out = []
    for piece in pieces:
        out += parser.feed(piece)
    got = []
    for r in out:
        if isinstance(r, Rows):
            assert len(r) == r.count and bool(r) == (r.count > 0)
            sizes = (r.count, r.size)
            r.decoders = COLUMNS
            got.append((sizes, list(r)))
        else:
            got.append(r)
    return got


def test_lazy_rows_are_counted_and_measured_without_decoding_then_decode_when_read():
    got = lazy_parse([LAZY_STREAM])
    rows3 = len(row(i4(1), b'one') + row(i4(2), None) + row(i4(3), b'x' * 300))
    assert got == [((3, rows3), LAZY_EXPECTED[0]), 2, ((0, 0), []),
                   ((1, len(row(i4(-7), u'caf\xe9'.encode('utf-8')))), LAZY_EXPECTED[3])]


def test_lazy_rows_split_at_every_offset_and_byte_by_byte_are_the_same():
    whole = lazy_parse([LAZY_STREAM])
    for cut in range(len(LAZY_STREAM) + 1):
        assert lazy_parse([LAZY_STREAM[:cut], LAZY_STREAM[cut:]]) == whole, cut
    assert lazy_parse([LAZY_STREAM[i:i + 1] for i in range(len(LAZY_STREAM))]) == whole


def test_lazy_rows_read_twice_are_decoded_once():
    r = ReplyParser(lazy=True).feed(LAZY_STREAM)[0]
    assert r[0] == (b'\x00\x00\x00\x01'.decode('utf-8'), u'one')   # no decoders: text
    assert r.decoded() is r.decoded()


def test_a_bad_length_in_a_run_of_lazy_rows_fails_the_parser():
    bad = row(i4(1), b'a') + b'D\x00\x00\x00\x02' + READY
    for cut in range(len(bad) + 1):
        parser = ReplyParser('test', lazy=True)
        with pytest.raises(ProtocolError):
            parser.feed(bad[:cut])
            parser.feed(bad[cut:])


def array(oid, dims, items, has_null=None):
    """int32 ndim, has-null flag, element oid, (size, lower bound) per dim, elements."""
    body = struct.pack('!iii', len(dims), 1 if has_null or None in items else 0, oid)
    body += b''.join(struct.pack('!ii', d, 1) for d in dims)
    code = {21: '!h', 23: '!i', 20: '!q', 701: '!d', 26: '!I'}[oid]
    for v in items:
        if v is None:
            body += struct.pack('!i', -1)
        else:
            value = struct.pack(code, v)
            body += struct.pack('!i', len(value)) + value
    return body


def micros(dt):
    return ((dt - datetime.datetime(2000, 1, 1)).days * 86400 * 10 ** 6 +
            (dt - datetime.datetime(2000, 1, 1)).seconds * 10 ** 6 +
            (dt - datetime.datetime(2000, 1, 1)).microseconds)


U = uuid.UUID('12345678-1234-5678-1234-567812345678')
WHEN = datetime.datetime(2026, 11, 26, 10, 11, 12, 345678)
BINARY_CASES = [
    (16, b'\x01', True), (16, b'\x00', False),
    (21, struct.pack('!h', -2), -2), (23, struct.pack('!i', 2 ** 31 - 1), 2 ** 31 - 1),
    (20, struct.pack('!q', -2 ** 63), -2 ** 63), (26, struct.pack('!I', 2 ** 32 - 1), 2 ** 32 - 1),
    (701, struct.pack('!d', 0.1), 0.1),
    (2950, U.bytes, str(U)),
    (1082, struct.pack('!i', -1), datetime.date(1999, 12, 31)),
    (1114, struct.pack('!q', micros(WHEN)), WHEN),
    (1114, struct.pack('!q', 2 ** 63 - 1), datetime.datetime.max),
    (1184, struct.pack('!q', micros(WHEN)), WHEN.replace(tzinfo=UTC)),
    (1007, array(23, [3], [1, None, 3]), [1, None, 3]),
    (1007, array(23, [2, 3], [1, 2, 3, 4, 5, 6]), [[1, 2, 3], [4, 5, 6]]),
    (1007, struct.pack('!iii', 0, 0, 23), []),
    (1016, array(20, [2], [2 ** 40, -1]), [2 ** 40, -1]),
    (1005, array(21, [1], [7]), [7]),
    (1022, array(701, [2], [1.5, None]), [1.5, None]),
    (1022, array(701, [3], [1.5, -0.0, 1e300]), [1.5, -0.0, 1e300]),
    (1028, array(26, [2], [2 ** 32 - 1, 0]), [2 ** 32 - 1, 0]),
    (1005, array(21, [2], [-2 ** 15, 2 ** 15 - 1]), [-2 ** 15, 2 ** 15 - 1]),
    (1016, array(20, [1], [-2 ** 63]), [-2 ** 63]),
    (1007, array(23, [0], []), []),
]


@pytest.mark.parametrize('oid,data,value', BINARY_CASES)
def test_each_binary_type_reads_as_psycopg2_gives_it(oid, data, value):
    fmt, columns = row_values.formats([oid])
    assert fmt == struct.pack('!HH', 1, 1)     # asked binary
    assert row_values.decode_rows(row(None), columns) == [(None,)]
    [(v,)] = row_values.decode_rows(row(data), columns)
    assert v == value
    # (on 2.7 an int8 may be an int or a long, as psycopg2's; equal values either way)
    assert type(v) is type(value) or isinstance(v, (int, type(2 ** 64)))


def test_bytea_is_psycopg2s_buffer_type():
    _, columns = row_values.formats([17])
    [(v,)] = row_values.decode_rows(row(b'\x00\xffab'), columns)
    assert type(v).__name__ == ('buffer' if PY2 else 'memoryview')
    assert bytes(v) == b'\x00\xffab'


@pytest.mark.parametrize('oid,text,value', [
    (700, b'1.1', 1.1),                        # float4: text, as psycopg2 reads it
    (1700, b'2.50', __import__('decimal').Decimal('2.50')),
    (25, u'caf\xe9'.encode('utf-8'), u'caf\xe9'),
    (19, b'pg_type', u'pg_type'),
    (1009, b'{a,"b c"}', [u'a', u'b c']),
    (1186, b'1 day 02:00:00', datetime.timedelta(days=1, hours=2)),
])
def test_text_columns_go_through_psycopg2s_casters(oid, text, value):
    fmt, columns = row_values.formats([oid])
    assert fmt == struct.pack('!HH', 1, 0)     # asked as text
    [(v,)] = row_values.decode_rows(row(text), columns)
    assert v == value


def test_rows_of_fixed_columns_read_whole_or_one_by_one_alike():
    oids = [INT4, INT8, 16, 701, 21, 26]
    _, columns = row_values.formats(oids)
    values = [(i, -i * 2 ** 33, i % 2 == 0, i / 4.0, -i, i * 7) for i in range(50)]
    codes = '!iq?dhI'
    data = b''.join(row(*[struct.pack('!' + c, v) for c, v in zip(codes[1:], vs)])
                    for vs in values)
    assert row_values.decode_rows(data, columns) == values
    assert row_values.decode_rows_python(data, columns, whole=False) == values   # one by one
    # A NULL shortens its row: the whole-row struct is not used and the NULL reads None.
    with_null = data + row(None, *[struct.pack('!' + c, 1) for c in codes[2:]])
    got = row_values.decode_rows(with_null, columns)
    assert got[:50] == values and got[50] == (None, 1, True, 1.0, 1, 1)


# Long runs of rows of one length (crossed many at a time), broken by a shorter row (a
# NULL), by a message of another type but the same length, and by the end of a feed.
SAME = [row(i4(i)) for i in range(60)]
OTHER_TYPE = msg(b'N', b'x' * (len(SAME[0]) - 5))    # a notice as long as a row
RUNS_STREAM = b''.join([BOUND] + SAME[:40] + [row(None)] + SAME[40:] + [OTHER_TYPE] + SAME +
                       [done(b'SELECT 181'), READY])
RUNS_ROWS = [(i,) for i in range(40)] + [(None,)] + [(i,) for i in range(40, 60)] + \
    [(i,) for i in range(60)]


def test_runs_of_same_length_rows_count_as_the_eager_parser_does_however_split():
    _, columns = row_values.formats([INT4])
    eager = ReplyParser('test').feed(RUNS_STREAM)[0]
    assert len(eager) == len(RUNS_ROWS) == 121
    size = sum(len(m) for m in SAME) * 2 + len(row(None))
    for cut in list(range(0, len(RUNS_STREAM) + 1, 7)) + [len(RUNS_STREAM) - 1]:
        for pieces in ([RUNS_STREAM[:cut], RUNS_STREAM[cut:]],
                       [RUNS_STREAM[i:i + cut + 1] for i in range(0, len(RUNS_STREAM),
                                                                  cut + 1)]):
            parser = ReplyParser('test', lazy=True)
            out = []
            for piece in pieces:
                out += parser.feed(piece)
            [r] = out
            assert (r.count, r.size) == (121, size), cut
            r.decoders = columns
            assert list(r) == RUNS_ROWS, cut


def test_random_runs_of_rows_and_same_length_notices_count_as_the_eager_parser():
    import random
    rnd = random.Random(5)
    _, columns = row_values.formats([INT4])
    for trial in range(200):
        parts, want = [BOUND], []
        for _m in range(rnd.randrange(1, 120)):
            pick = rnd.random()
            if pick < 0.05:
                parts.append(OTHER_TYPE)
            elif pick < 0.1:
                parts.append(row(None))
                want.append((None,))
            else:
                v = rnd.randrange(-5, 5)
                parts.append(row(i4(v)))
                want.append((v,))
        parts += [done(b'SELECT %d' % len(want)), READY]
        stream = b''.join(parts)
        cuts = sorted(rnd.randrange(len(stream) + 1) for _c in range(rnd.randrange(4)))
        pieces = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])]
        parser = ReplyParser('test', lazy=True)
        out = []
        for piece in pieces:
            out += parser.feed(piece)
        [r] = out
        assert r.count == len(want), (trial, cuts)
        r.decoders = columns
        assert list(r) == want, (trial, cuts)


def whole_or_one_by_one(oids, messages):
    """The reader's rows, equal to the Python reader's read one by one (not a whole row
    per struct call)."""
    _, columns = row_values.formats(oids)
    data = b''.join(messages)
    whole = row_values.decode_rows(data, columns)
    assert whole == row_values.decode_rows_python(data, columns, whole=False)
    return whole


def test_rows_of_one_layout_read_whole_or_one_by_one_alike():
    text_bytea = [row(b'abc', b'\x00\x01', i4(i)) for i in range(30)]
    got = whole_or_one_by_one([TEXT, 17, INT4], text_bytea)
    assert [(a, bytes(b), c) for a, b, c in got] == [(u'abc', b'\x00\x01', i) for i in range(30)]
    arrays = [row(array(23, [3], [i, i + 1, i + 2]), i4(i)) for i in range(30)]
    assert whole_or_one_by_one([1007, INT4], arrays) == [([i, i + 1, i + 2], i)
                                                         for i in range(30)]


@pytest.mark.parametrize('last,value', [
    (row(b'ab', b'cde'), (u'ab', u'cde')),      # one length, split otherwise in columns
    (row(b'abcd', b'e'), (u'abcd', u'e')),
    (row(b'abcdef', None), (u'abcdef', None)),  # a NULL, and still the same length
])
def test_rows_of_one_length_but_another_layout_are_read_one_by_one(last, value):
    rows = [row(b'abc', b'de')] * 20 + [last]
    assert whole_or_one_by_one([TEXT, TEXT], rows) == [(u'abc', u'de')] * 20 + [value]


def test_arrays_of_one_length_but_other_headers_are_read_one_by_one():
    # [1, 2] against a NULL and 2 (same length? no: a NULL is 4 bytes shorter) and a 2-D
    # array of 2 elements (a longer header): each read as it is.
    rows = [row(array(23, [2], [1, 2]))] * 20 + [row(array(23, [1, 2], [3, 4]))]
    got = whole_or_one_by_one([1007], rows)
    assert got == [([1, 2],)] * 20 + [([[3, 4]],)]
    flagged = [row(array(23, [2], [1, 2]))] * 20 + [row(array(23, [2], [5, 6], has_null=True))]
    assert whole_or_one_by_one([1007], flagged) == [([1, 2],)] * 20 + [([5, 6],)]


def test_rows_of_many_layouts_decode_to_their_values():
    """Names of a few lengths, NULLs here and there, a few rows of one length split
    otherwise between two text columns: read by the layout of their length or column by
    column, each row comes out as it was made."""
    import random
    rnd = random.Random(7)
    oids = [TEXT, INT4, 16, TEXT, 1007]
    _, columns = row_values.formats(oids)
    for trial in range(30):
        want, messages = [], []
        for _r in range(rnd.randrange(1, 300)):
            a = u'n' * rnd.randrange(0, 6) if rnd.random() > 0.05 else None
            b = rnd.randrange(-9, 9) if rnd.random() > 0.05 else None
            c = rnd.random() > 0.5
            d = u'x' * (5 - len(a)) if a is not None and rnd.random() > 0.5 else u'y'
            e = [rnd.randrange(9) for _i in range(rnd.randrange(3))]
            want.append((a, b, c, d, e))
            messages.append(row(None if a is None else a.encode('utf-8'),
                                None if b is None else i4(b), b'\x01' if c else b'\x00',
                                d.encode('utf-8'),
                                array(23, [len(e)], e) if e else struct.pack('!iii', 0, 0, 23)))
        data = b''.join(messages)
        assert row_values.decode_rows(data, columns) == want, trial


def test_both_readers_give_the_same_rows_for_random_rows_of_every_kind():
    """Random rows of every column kind the readers tell apart, NULLs anywhere: the
    compiled and the Python reader agree value for value (and in type)."""
    import random
    rnd = random.Random(11)
    oids = [TEXT, INT4, 16, 17, 20, 21, 26, 701, 1007, 1022, 2950, 1082, 1114, 1700, 1009]
    _, columns = row_values.formats(oids)
    gens = {
        TEXT: lambda: u'\xe9t\xe9' * rnd.randrange(3), INT4: lambda: rnd.randrange(-9, 9),
        16: lambda: rnd.random() > 0.5, 17: lambda: os.urandom(rnd.randrange(4)),
        20: lambda: rnd.randrange(-2 ** 63, 2 ** 63), 21: lambda: rnd.randrange(-99, 99),
        26: lambda: rnd.randrange(2 ** 32), 701: lambda: rnd.random(),
        1007: lambda: [rnd.randrange(9) for _i in range(rnd.randrange(3))],
        1022: lambda: [rnd.random() if rnd.random() > 0.1 else None for _i in range(2)],
        2950: lambda: uuid.UUID(int=rnd.getrandbits(128)), 1082: lambda: rnd.randrange(-9, 9),
        1114: lambda: rnd.randrange(-2 ** 40, 2 ** 40), 1700: lambda: rnd.randrange(99),
        1009: lambda: rnd.randrange(3),
    }
    enc = {
        TEXT: lambda v: v.encode('utf-8'), INT4: i4, 16: lambda v: b'\x01' if v else b'\x00',
        17: lambda v: v, 20: lambda v: struct.pack('!q', v), 21: lambda v: struct.pack('!h', v),
        26: lambda v: struct.pack('!I', v), 701: lambda v: struct.pack('!d', v),
        1007: lambda v: array(23, [len(v)], v) if v else struct.pack('!iii', 0, 0, 23),
        1022: lambda v: array(701, [2], v), 2950: lambda v: v.bytes,
        1082: lambda v: struct.pack('!i', v), 1114: lambda v: struct.pack('!q', v),
        1700: lambda v: str(v).encode('ascii'), 1009: lambda v: ('{%s}' % ','.join(
            ['a'] * v)).encode('ascii'),
    }
    messages = []
    for _r in range(300):
        messages.append(row(*[None if rnd.random() < 0.1 else enc[o](gens[o]())
                              for o in oids]))
    data = b''.join(messages)
    py = row_values.decode_rows_python(data, columns)
    c = row_values.decode_rows_compiled(data, columns)
    assert len(py) == 300
    for a, b in zip(py, c):
        assert [bytes(v) if oid == 17 and v is not None else v for oid, v in zip(oids, a)] == \
            [bytes(v) if oid == 17 and v is not None else v for oid, v in zip(oids, b)]
        assert [type(v) for v in a] == [type(v) for v in b]


@pytest.mark.parametrize('bad', [
    row(i4(1))[:-1],                           # cut short
    row(i4(1)) + b'D',                         # a stray byte
    msg(b'N', b'xxxxxx'),                      # not a DataRow
    row(i4(1), i4(2)),                         # more columns than the statement
    row(b'abc'),                               # an int4 of 3 bytes
    b'D' + struct.pack('!IH', 10, 1) + struct.pack('!i', 9) + b'ab',   # a value past its row
])
def test_the_compiled_reader_refuses_bytes_that_are_not_the_rows(bad):
    _, columns = row_values.formats([INT4])
    with pytest.raises(ValueError):
        row_values.decode_rows_compiled(bad, columns)


def test_rows_read_in_place_from_runs_of_a_larger_buffer():
    """Rows.decoded reads each run where the parser kept it: (bytes, start, end)."""
    _, columns = row_values.formats([INT4, TEXT])
    runs = [row(i4(i), b'r%d' % i) for i in range(6)]
    data = b'junk' + b''.join(runs[:4]) + b'more junk' + b''.join(runs[4:])
    a = 4 + sum(map(len, runs[:4]))
    parts = [(data, 4, a), (data, a + 9, len(data))]
    assert row_values.decode_parts(parts, columns) == [(i, u'r%d' % i) for i in range(6)]
    assert row_values.decode_parts(parts[:1], columns) == [(i, u'r%d' % i) for i in range(4)]
