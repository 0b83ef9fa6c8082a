"""The in-memory backend (tests/fakebackend), registered as a real backend is: one line."""
from __future__ import absolute_import, division, print_function

import gloaddriver.backends

gloaddriver.backends.register('memory', 'tests.fakebackend')
