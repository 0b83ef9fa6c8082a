"""What the server acknowledged for each key the run wrote, kept small, for --verify.

The built-in writes put a value that tells them apart (``workload``): insert writes
the key's value shifted by 0, update by 1, read-modify-write by 2, and delete leaves
nothing. So the state of a key is one of four codes (INSERTED, UPDATED, RMW, GONE)
and a read tells which of them is there, or that the bytes are none of them.

Per key, two bytes in chunks of 65,536 keys (a run's keys are dense ranges; a
mix's inserts start far above them, one range per shard, hence chunks rather than
one array): 2 MB for a million keys.

* byte 0: the state last acknowledged (low 3 bits), and the states of writes that
  were in flight beside it (bits 3-6): those may land in either order;
* byte 1: the states of writes that failed or timed out since the last
  acknowledged one (bits 0-3), and every state ever written or tried (bits 4-7).

A write acknowledged after a failed one supersedes it (on one connection the
server applies them in order). A write that failed with a plain server error
(duplicate key, say) did nothing and is not recorded; a miss (update of a key
that is not there) changes nothing either.

``outcome`` classifies what a read found:

* intact: the acknowledged state, one of the writes in flight beside it, or, for a
  key with nothing acknowledged, anything (the run promised nothing about it);
* unacknowledged_applied: a failed or timed-out write that landed after all;
* acknowledged_lost: the acknowledged write is gone or older data is there;
* corrupt: bytes no write of the run would leave;
* unexpected: a value the run never wrote or tried to write to that key.
"""
from __future__ import absolute_import, division, print_function

INSERTED, UPDATED, RMW, GONE = 1, 2, 3, 4
CORRUPT = 5
# The state each built-in write leaves.
WRITES = {'insert': INSERTED, 'update': UPDATED, 'rmw': RMW, 'delete': GONE}
OUTCOMES = ('intact', 'unacknowledged_applied', 'acknowledged_lost', 'corrupt', 'unexpected')

_BITS = 16
_MASK = (1 << _BITS) - 1


def _bit(code):
    return 1 << (code - 1)


class Ledger(object):
    def __init__(self):
        self._chunks = {}
        self._inflight = {}    # key -> [writes in flight, their state bits, overlapped]

    def _slot(self, key):
        c = self._chunks.get(key >> _BITS)
        if c is None:
            c = self._chunks[key >> _BITS] = bytearray(2 << _BITS)
        return c, (key & _MASK) << 1

    def begin(self, key, code):
        e = self._inflight.get(key)
        if e is None:
            self._inflight[key] = [1, _bit(code), False]
        else:
            e[0] += 1
            e[1] |= _bit(code)
            e[2] = True

    def _end(self, key):
        e = self._inflight[key]
        e[0] -= 1
        if not e[0]:
            del self._inflight[key]
        return e

    def acked(self, key, code):
        e = self._end(key)
        c, i = self._slot(key)
        beside = (e[1] & ~_bit(code)) if e[2] else 0
        c[i] = code | (beside << 3)
        c[i + 1] = (c[i + 1] & 0xf0) | (_bit(code) << 4)

    def missed(self, key):
        self._end(key)

    def failed(self, key, code):
        self._end(key)
        c, i = self._slot(key)
        c[i + 1] |= _bit(code) | (_bit(code) << 4)

    def unsure(self, key):
        """Whether a write to ``key`` failed or timed out, since the last one
        acknowledged, with no plain server error: its outcome is unknown (the connection
        was lost before the reply: it may have committed or not)."""
        c, i = self._slot(key)
        return bool(c[i + 1] & 0xf)

    def keys(self):
        """Every key with something recorded, in order."""
        for chunk in sorted(self._chunks):
            c = self._chunks[chunk]
            base = chunk << _BITS
            for j in range(0, len(c), 2):
                if c[j] or c[j + 1]:
                    yield base + (j >> 1)

    def outcome(self, key, found):
        """The outcome (one of OUTCOMES) of reading state ``found`` for ``key``."""
        c, i = self._slot(key)
        acked, beside = c[i] & 7, (c[i] >> 3) & 0xf
        failed, ever = c[i + 1] & 0xf, c[i + 1] >> 4
        if found == CORRUPT:
            return 'corrupt'
        b = _bit(found)
        if found == acked or b & beside:
            return 'intact'
        if b & failed:
            return 'unacknowledged_applied'
        if not acked:
            return 'intact'
        if found == GONE or b & ever:
            return 'acknowledged_lost'
        return 'unexpected'

    def memory_bytes(self):
        return len(self._chunks) * (2 << _BITS)

    def track(self, fns, writes=WRITES, definite=None):
        """The op functions with their writes recorded. ``writes`` maps an op name to the
        state it leaves; ``definite(exc)`` tells a failure that surely did nothing."""
        out = dict(fns)
        for name, code in writes.items():
            if name in fns:
                out[name] = self._tracked(fns[name], code, definite)
        return out

    def _tracked(self, fn, code, definite):
        begin, acked, missed, failed = self.begin, self.acked, self.missed, self.failed

        def op(key):
            begin(key, code)
            try:
                r = fn(key)
            except Exception as e:
                if definite is not None and definite(e):
                    missed(key)
                else:
                    failed(key, code)
                raise
            if not r and r is not None:
                missed(key)     # no row for the key: nothing was written
            else:
                acked(key, code)
            return r
        return op
