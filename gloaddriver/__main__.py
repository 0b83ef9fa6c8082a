"""``python -m gloaddriver``: monkey-patch FIRST, then hand over to the CLI.

Patching must precede every import that could touch socket, ssl, select or
threading (tarantool-python and psycopg2 among them), or those modules keep
references to the blocking originals.
"""
from __future__ import absolute_import, division, print_function

from gevent import monkey

monkey.patch_all()

import sys  # noqa: E402

from gloaddriver.cli import main  # noqa: E402


def console_main():
    sys.exit(main())


if __name__ == '__main__':
    console_main()
