# A shim: pip 20 on Python 2.7 needs setup.py for an editable install, and setup.cfg
# cannot declare a C extension. Everything else is declared in setup.cfg.
#
# The one extension is optional: the compiled DataRow reader
# (gloaddriver/backends/postgres/_rowdecode.c). Without a C compiler or the
# interpreter's headers the install goes on, and the pure-Python reader is used.
from setuptools import Extension, setup

setup(ext_modules=[Extension('gloaddriver.backends.postgres._rowdecode',
                             ['gloaddriver/backends/postgres/_rowdecode.c'],
                             optional=True)])
