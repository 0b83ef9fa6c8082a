"""What one interpreter says about itself, for ``gloaddriver compat``.

Run as ``python -m gloaddriver.compat.probe '<json>'`` under each interpreter
being compared; prints one JSON line. Modes: ``self`` (fingerprint, wire
bytes of canonical values, typed-field outcomes, deliberate errors) and
``crossread`` (read what the other interpreter wrote). Values cross as hex
where they are bytes, so the comparing side sees exactly what was sent.
"""
from __future__ import absolute_import, division, print_function

import json
import sys

from gloaddriver import backends
from gloaddriver.measure import manifest


def main(argv):
    a = json.loads(argv[0])
    probe = backends.get(a['backend']).crosscheck.probe()
    out = {}
    conn = probe['connect'](a)
    try:
        if a['mode'] == 'self':
            out['fingerprint'] = manifest.fingerprint()
            out['wire'] = probe['wire'](conn)
            out['typed'] = probe['typed'](conn, a['typed'])
            out['errors'] = probe['errors'](conn, a['space'])
        else:
            out['crossread'] = probe['crossread'](conn, a)
    finally:
        conn.close()
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
