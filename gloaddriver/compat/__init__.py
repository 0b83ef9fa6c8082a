"""``gloaddriver compat``: the same seeded run on two interpreters, compared check by
check (``check``), the interpreters it takes and proves able to run gloaddriver
(``interpreters``), and what each interpreter reports about itself (``probe``). Each
server kind's side of it (its server, digest and probe) is its ``crosscheck`` module."""
from __future__ import absolute_import, division, print_function
