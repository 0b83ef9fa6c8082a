"""One run: the session (spawn, open, phases, outputs), the runner's worker loops and
ticker, and ``--processes``."""
from __future__ import absolute_import, division, print_function
