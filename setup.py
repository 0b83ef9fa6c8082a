# A shim: pip 20 on Python 2.7 needs setup.py for an editable install, and setup.cfg
# cannot declare a C extension. Everything else is declared in setup.cfg.
#
# The two extensions are optional: the compiled DataRow reader
# (gloaddriver/backends/postgres/_rowdecode.c) and the IPROTO reply cutter
# (gloaddriver/backends/tarantool/_replycut.c). Without a C compiler or the
# interpreter's headers the install goes on, and the pure-Python readers are used.
from setuptools import Extension, setup

setup(ext_modules=[Extension('gloaddriver.backends.postgres._rowdecode',
                             ['gloaddriver/backends/postgres/_rowdecode.c'],
                             optional=True),
                   Extension('gloaddriver.backends.tarantool._replycut',
                             ['gloaddriver/backends/tarantool/_replycut.c'],
                             optional=True)])
