# A shim: pip 20 on Python 2.7 needs setup.py for an editable install.
# Everything is declared in setup.cfg.
from setuptools import setup

setup()
