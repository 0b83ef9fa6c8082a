"""``gloaddriver compat``: the same seeded run on two interpreters, compared check by
check (``check``), the interpreter environments it runs in (``envs``), and what each
interpreter reports about itself (``probe``)."""
from __future__ import absolute_import, division, print_function
