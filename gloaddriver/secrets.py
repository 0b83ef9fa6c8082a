"""Passwords kept out of what the driver prints and stores: a DSN's or a URL's password
replaced by ``***``. One place for both forms, for the manifest's argv, a run's scenario
in the history store and the store's own URL."""
from __future__ import absolute_import, division, print_function

import re

_DSN_SECRETS = (re.compile(r'(password\s*=\s*)(\'(?:[^\'\\\\]|\\\\.)*\'|\S+)'),
                re.compile(r'(://[^:/@\s]*:)([^@\s]*)(@)'))


def mask_dsn(dsn):
    """A DSN (keyword or URI form) with its password replaced by ***."""
    dsn = _DSN_SECRETS[0].sub(lambda m: m.group(1) + '***', dsn)
    return _DSN_SECRETS[1].sub(lambda m: m.group(1) + '***' + m.group(3), dsn)
