"""--verify: after the phases, read back every key the run wrote and judge it.

The run's writes were recorded in a ``measure.ledger.Ledger`` as they were
acknowledged or failed; here the backend's reader (``Backend.verify_reader``) says
what each key holds now, and the ledger says what that means (its OUTCOMES).
The result goes into the run's JSON as ``verify``; an acknowledged write lost makes
the exit code 1.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors
from gloaddriver.py23 import clock
from gloaddriver.measure.ledger import OUTCOMES

BATCH = 5000        # keys per read: bounded memory whatever the run wrote
EXAMPLES = 5


def definite(exc):
    """A failure that surely wrote nothing: the server answered with a plain error, or
    a pooler refused the statement before any server had it (``unsent``). Any other
    (a connection lost, a timeout) leaves the write's outcome unknown."""
    return isinstance(exc, errors.ServerError) and (
        not exc.outage or getattr(exc, 'unsent', False))


def read_back(ledger, backend):
    """The verify block of the result (see docs/outages.md)."""
    started = clock()
    out = dict((name, 0) for name in OUTCOMES)
    out.update(checked=0, outcome_unknown=0, examples=dict((name, []) for name in OUTCOMES if name != 'intact'),
               ledger_bytes=ledger.memory_bytes(), notes=[])
    try:
        read = backend.verify_reader()
    except errors.GloadError as e:
        out['error'] = 'cannot read the keys back: %s' % e
        return out
    if read is None:
        out['error'] = ('this workload writes what the driver cannot predict (--call, --sql, '
                        '--eval, a workload file, a script, a relational table); --verify '
                        'checks the built-in ops')
        return out
    try:
        batch = []
        for key in ledger.keys():
            batch.append(key)
            if len(batch) >= BATCH:
                _judge(ledger, batch, read(batch), out)
                batch = []
        if batch:
            _judge(ledger, batch, read(batch), out)
    except errors.OpError as e:
        out['error'] = 'reading the keys back failed after %d keys: %s' % (out['checked'], e)
    finally:
        read.close()
    out['seconds'] = round(clock() - started, 3)
    if out['outcome_unknown']:
        # Either is correct: a commit whose reply never came may or may not have landed.
        out['notes'].append(
            '%s keys had a write whose outcome is unknown (it failed or timed out without a '
            'plain server error: the connection was lost before the reply); %s of them '
            'landed (unacknowledged_applied), the others did not; either is correct'
            % ('{:,}'.format(out['outcome_unknown']),
               '{:,}'.format(out['unacknowledged_applied'])))
    out['notes'].append('%s keys written by the run read back in %.1f s; the record of what was '
                        'acknowledged took %.1f MB' % ('{:,}'.format(out['checked']),
                                                       out['seconds'],
                                                       out['ledger_bytes'] / 1e6))
    return out


def _judge(ledger, keys, found, out):
    outcome, unsure, examples = ledger.outcome, ledger.unsure, out['examples']
    for key, state in zip(keys, found):
        o = outcome(key, state)
        if unsure(key):
            out['outcome_unknown'] += 1
        out[o] += 1
        if o != 'intact' and len(examples[o]) < EXAMPLES:
            examples[o].append(key)
    out['checked'] += len(keys)

