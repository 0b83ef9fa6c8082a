"""``python -m gloaddriver``: monkey-patch FIRST, then hand over to the CLI.

Patching must precede every import that could touch socket, ssl, select or
threading (tarantool-python and psycopg2 among them), or those modules keep
references to the blocking originals.
"""
from __future__ import absolute_import, division, print_function

from gevent import monkey

monkey.patch_all()

import sys  # noqa: E402

from gloaddriver import errors  # noqa: E402
from gloaddriver.cli import main  # noqa: E402


def _event_loop_or_exit():
    """Make gevent's hub now: a loop gevent cannot build (GEVENT_LOOP naming one whose
    parts are missing) is a setup problem, said in one line, not a traceback later."""
    import os
    import gevent
    try:
        gevent.get_hub()
    except Exception as e:
        sys.stderr.write('gloaddriver: gevent cannot create its event loop%s: %s: %s\n' % (
            ' (GEVENT_LOOP=%s)' % os.environ['GEVENT_LOOP'] if os.environ.get('GEVENT_LOOP')
            else '', e.__class__.__name__, e))
        sys.stderr.flush()
        # Not sys.exit: gevent's patched threading shutdown would ask for the hub again
        # and print the same failure as a traceback. Nothing is open yet to clean up.
        os._exit(errors.EXIT_SETUP)


def console_main():
    _event_loop_or_exit()
    sys.exit(main())


if __name__ == '__main__':
    console_main()
