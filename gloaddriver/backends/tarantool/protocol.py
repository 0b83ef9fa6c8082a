"""Tarantool IPROTO: codes, greeting, chap-sha1 auth, request frames, reply bodies.

Pure: no sockets, no greenlets, no clocks. The connection module moves bytes;
this module turns requests into bytes, and ``replies`` (the reply stream's
parser) turns bytes into replies with the pieces kept here (the unpacker, Rows,
server_error), so framing, partial reads and error replies are unit tested
without a server.

Wire format of one message: ``0xce`` + uint32 length, then a msgpack header
map and a msgpack body map. The length prefix is itself a valid msgpack uint32,
so a stream of replies is a plain msgpack stream ``len, header, body, len, ...``
and one ``msgpack.Unpacker`` does all the buffering of partial frames.
"""
from __future__ import absolute_import, division, print_function

import base64
import codecs
import hashlib
import struct

import msgpack

from gloaddriver import errors
from gloaddriver.backends.compiled import optional
from gloaddriver.py23 import PY2

# Request and reply codes (header key REQUEST_TYPE).
OK = 0x00
SELECT = 0x01
INSERT = 0x02
REPLACE = 0x03
UPDATE = 0x04
DELETE = 0x05
AUTH = 0x07
EVAL = 0x08
UPSERT = 0x09
CALL = 0x0a
EXECUTE = 0x0b        # SQL: a statement's text, or a prepared statement's id
PREPARE = 0x0d
PING = 0x40
CHUNK = 0x80          # box.session.push() out-of-band message
ERROR_FLAG = 0x8000   # reply code = ERROR_FLAG | box error code

# Header keys.
REQUEST_TYPE = 0x00
SYNC = 0x01
SCHEMA_VERSION = 0x05

# Body keys.
SPACE_ID = 0x10
INDEX_ID = 0x11
LIMIT = 0x12
OFFSET = 0x13
ITERATOR = 0x14
KEY = 0x20
TUPLE = 0x21
FUNCTION_NAME = 0x22
USER_NAME = 0x23
EXPR = 0x27
OPS = 0x28
DATA = 0x30
ERROR_24 = 0x31       # error message (all versions)
SQL_TEXT = 0x40
SQL_BIND = 0x41
SQL_INFO = 0x42       # {SQL_INFO_ROW_COUNT: n, ...} in the reply to DML
STMT_ID = 0x43
OPTIONS = 0x2b
SQL_INFO_ROW_COUNT = 0x00

# System views used to resolve names to ids; index 2 of each is "name".
VSPACE_ID = 281
VINDEX_ID = 289
NAME_INDEX = 2

ITERATOR_EQ = 0
ITERATOR_ALL = 2
ITERATOR_GE = 5   # box.index.GE

GREETING_SIZE = 128
MAX_SELECT = 0xffffffff

# The fixed part of every request, packed in one struct call:
# 0xce len32 | fixmap(2) REQUEST_TYPE code SYNC 0xcf sync64.
# A uint64 sync never wraps, so request ids stay unique for the life of a
# connection and ordering by sync is ordering by send time.
_HEAD = struct.Struct('>BIBBBBBQ')
_HEAD_AFTER_LEN = _HEAD.size - 5
_pack_head = _HEAD.pack


def frame(buf, code, sync, parts):
    """Append to the bytearray ``buf`` the request of type ``code`` and ``sync`` whose
    body is the bytes objects of the tuple ``parts``, joined: the built-in ops' framing
    (connection.Connection.rows_frame), where the compiled one is not built."""
    body = b''.join(parts)
    buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(body), 0x82, REQUEST_TYPE, code, SYNC, 0xcf,
                      sync)
    buf += body


# ``frame`` as rows_frame calls it: _replycut.frame, its compiled twin (the same bytes,
# with one resize of ``buf`` and no joined body), where it is built; else frame.
FRAME = optional('gloaddriver.backends.tarantool._replycut', 'frame') or frame


class ProtocolError(errors.NetworkError):
    """The byte stream is not IPROTO: the connection cannot be trusted."""


def parse_greeting(data):
    """Return (server version line, salt bytes) from the 128-byte greeting."""
    if len(data) != GREETING_SIZE:
        raise ProtocolError('short greeting: %d of %d bytes' % (len(data), GREETING_SIZE))
    first = bytes(data[:64]).decode('ascii', 'replace').strip()
    if not first.startswith('Tarantool'):
        raise ProtocolError('not a Tarantool server (greeting %r)' % first[:40])
    salt = base64.b64decode(bytes(data[64:108]))
    return first, salt


def scramble(salt, password):
    """chap-sha1: sha1(password) XOR sha1(salt[:20] + sha1(sha1(password)))."""
    password = password.encode('utf-8') if not isinstance(password, bytes) else password
    hash1 = hashlib.sha1(password).digest()
    hash2 = hashlib.sha1(hash1).digest()
    salted = hashlib.sha1(bytes(salt[:20]) + hash2).digest()
    return bytes(bytearray(a ^ b for a, b in zip(bytearray(hash1), bytearray(salted))))


def _surrogateescape(exc):
    # Python 2 has no 'surrogateescape'; this is the same mapping (each bad
    # byte b becomes U+DC00+b), so no byte is lost on either interpreter.
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    bad = bytearray(exc.object[exc.start:exc.end])
    return u''.join(unichr(0xdc00 + b) for b in bad), exc.end  # noqa: F821


if PY2:  # pragma: no cover - 2.7 only
    UNICODE_ERRORS = 'gloaddriver.surrogateescape'
    codecs.register_error(UNICODE_ERRORS, _surrogateescape)
else:
    UNICODE_ERRORS = 'surrogateescape'


def new_unpacker():
    """The reply stream's unpacker: text as text, integer map keys allowed."""
    # A Tarantool string may hold any bytes (Lua strings are not UTF-8
    # checked): decoding with surrogateescape keeps every byte instead of
    # failing the whole stream. IPROTO maps have integer keys, which msgpack
    # >= 1.0 refuses unless strict_map_key=False.
    try:
        return msgpack.Unpacker(raw=False, strict_map_key=False, unicode_errors=UNICODE_ERRORS)
    except TypeError:  # msgpack < 1.0 has no strict_map_key and allows int keys
        return msgpack.Unpacker(raw=False, unicode_errors=UNICODE_ERRORS)


try:
    msgpack.unpackb(b'\x80', raw=False, strict_map_key=False)
    _UNPACK_ARGS = {'raw': False, 'strict_map_key': False, 'unicode_errors': UNICODE_ERRORS}
except TypeError:  # msgpack < 1.0
    _UNPACK_ARGS = {'raw': False, 'unicode_errors': UNICODE_ERRORS}


def decode_body(raw):
    """A reply body's bytes as the reply stream's unpacker would decode them."""
    return msgpack.unpackb(raw, **_UNPACK_ARGS)


# The body of a reply with no rows, {DATA: []}, as Tarantool writes it: a one-key map
# whose array header is an array32 (its length is patched in after the rows are
# written, so it always takes 5 bytes), or a fixarray. Recognised without decoding.
EMPTY_BODIES = frozenset((b'\x81\x30\xdd\x00\x00\x00\x00', b'\x81\x30\x90'))
EMPTY_BODY_MAX = 7


class Rows(bytes):
    """A reply body as received, decoded only when read.

    The connection hands these to the built-in ops instead of decoded rows: the
    runner only needs to know whether there were any (an empty result comes as
    an empty list, a Rows is always true), so a 1.5 KB text value is not turned
    into a unicode object (6 KB on a UCS4 2.7) and back for nothing. Iterating
    gives the rows, decoded exactly as the public methods return them, so
    ``--checksum`` sums the same results on 2.7 and 3.x.
    """

    __slots__ = ()

    def data(self):
        """The decoded rows (DATA), or the whole body when it has none (SQL)."""
        body = decode_body(self)
        return body.get(DATA, body) if body.__class__ is dict else body

    def __iter__(self):
        return iter(self.data())


class Encoder(object):
    """Appends request frames to a caller's bytearray.

    Text is packed as msgpack str and bytes as msgpack bin on both Python 2 and
    3 (one explicit model: ``unicode``/``str`` is text, py2 ``str``/py3
    ``bytes`` is binary), so both interpreters put the same bytes on the wire.

    One method per request type: the body shape lives here, and each method
    packs its own frame, so a request costs its caller one Python call (the
    data-path ones are the hot path of every op).
    """

    def __init__(self):
        self._pack = msgpack.Packer(use_bin_type=True).pack

    def request(self, buf, code, sync, body):
        payload = self._pack(body)
        buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(payload), 0x82, REQUEST_TYPE, code,
                          SYNC, 0xcf, sync)
        buf += payload

    def select(self, buf, sync, space_id, index_id, key, limit=MAX_SELECT,
               offset=0, iterator=ITERATOR_EQ):
        payload = self._pack({SPACE_ID: space_id, INDEX_ID: index_id, LIMIT: limit,
                              OFFSET: offset, ITERATOR: iterator, KEY: key})
        buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(payload), 0x82, REQUEST_TYPE, SELECT,
                          SYNC, 0xcf, sync)
        buf += payload

    def insert(self, buf, sync, space_id, values):
        payload = self._pack({SPACE_ID: space_id, TUPLE: values})
        buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(payload), 0x82, REQUEST_TYPE, INSERT,
                          SYNC, 0xcf, sync)
        buf += payload

    def replace(self, buf, sync, space_id, values):
        payload = self._pack({SPACE_ID: space_id, TUPLE: values})
        buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(payload), 0x82, REQUEST_TYPE, REPLACE,
                          SYNC, 0xcf, sync)
        buf += payload

    def update(self, buf, sync, space_id, index_id, key, ops):
        payload = self._pack({SPACE_ID: space_id, INDEX_ID: index_id, KEY: key, TUPLE: ops})
        buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(payload), 0x82, REQUEST_TYPE, UPDATE,
                          SYNC, 0xcf, sync)
        buf += payload

    def delete(self, buf, sync, space_id, index_id, key):
        payload = self._pack({SPACE_ID: space_id, INDEX_ID: index_id, KEY: key})
        buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(payload), 0x82, REQUEST_TYPE, DELETE,
                          SYNC, 0xcf, sync)
        buf += payload

    # Control-path requests share the generic packer.

    def upsert(self, buf, sync, space_id, values, ops):
        self.request(buf, UPSERT, sync, {SPACE_ID: space_id, TUPLE: values, OPS: ops})

    def call(self, buf, sync, name, args):
        self.request(buf, CALL, sync, {FUNCTION_NAME: name, TUPLE: list(args)})

    def eval(self, buf, sync, expr, args):
        self.request(buf, EVAL, sync, {EXPR: expr, TUPLE: list(args)})

    def execute(self, buf, sync, sql, args):
        """SQL by text (``sql`` is text) or by prepared statement id (an int)."""
        self.request(buf, EXECUTE, sync, {STMT_ID if sql.__class__ is int else SQL_TEXT: sql,
                                          SQL_BIND: args, OPTIONS: []})

    def prepare(self, buf, sync, sql):
        self.request(buf, PREPARE, sync, {SQL_TEXT: sql})

    def ping(self, buf, sync):
        self.request(buf, PING, sync, {})

    def auth(self, buf, sync, user, salt, password):
        # The scramble must travel as msgpack str, not bin: a packer without
        # bin types does that for bytes on both interpreters.
        payload = msgpack.packb({USER_NAME: user, TUPLE: [u'chap-sha1', scramble(salt, password)]},
                                use_bin_type=False)
        buf += _pack_head(0xce, _HEAD_AFTER_LEN + len(payload), 0x82, REQUEST_TYPE, AUTH,
                          SYNC, 0xcf, sync)
        buf += payload


# Box errors that mean the instance cannot serve writes now: an outage, not an answer.
# ER_LOADING (still recovering), ER_READONLY (read-only, as an instance is while box.cfg
# recovers after a restart, and a replica always: writes to one are an outage too).
ER_READONLY = 7
OUTAGE_CODES = frozenset((116, ER_READONLY))


def server_error(code, body):
    """Build the ServerError for an error reply (code has ERROR_FLAG set)."""
    message = body.get(ERROR_24) if isinstance(body, dict) else None
    if not isinstance(message, type(u'')):
        message = u'%r' % (message,)
    code &= 0x7fff
    return errors.ServerError(code, message, code in OUTAGE_CODES)
