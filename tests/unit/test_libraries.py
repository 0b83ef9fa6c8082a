"""measure/libraries: which library a profiled function is, from its file as yappi and
py-spy give it, or from the type a C method belongs to."""
from __future__ import absolute_import, division, print_function

import os
import json

import gevent

from gloaddriver.measure import libraries
from gloaddriver.measure.libraries import OWN, PYTHON, USER, library


def test_installed_packages_are_named_by_their_top_folder():
    assert library(gevent.hub.__file__) == 'gevent'
    assert library('/x/lib/python3.11/site-packages/sqlalchemy/orm/session.py') == 'sqlalchemy'
    assert library('/usr/lib/python3/dist-packages/psycopg2/extras.py') == 'psycopg2'


def test_py_spys_relative_paths():
    assert library(os.path.join('gloaddriver', 'run', 'runner.py')) == OWN
    assert library(os.path.join('gevent', 'hub.py')) == 'gevent'
    assert library('threading.py') == PYTHON
    assert library(os.path.join('json', 'decoder.py')) == PYTHON


def test_the_standard_library_gloaddriver_and_the_users_own_file():
    assert library(json.__file__) == PYTHON
    assert library(libraries.__file__) == OWN
    assert library('/home/me/service/models.py') == USER


def test_c_functions_by_the_type_they_are_a_method_of():
    assert library('~', "<method 'execute' of 'psycopg2.extensions.cursor' objects>") == \
        'psycopg2'
    assert library('~', "<method 'switch' of 'greenlet.greenlet' objects>") == 'greenlet'
    assert library('builtins', 'len') == PYTHON
    assert library('~', "<method 'popleft' of 'collections.deque' objects>") == PYTHON
    assert library('<string>', 'commit') == PYTHON


def test_a_split_adds_up_by_library_largest_first():
    rows = libraries.split([('sqlalchemy', 3.0), ('python', 1.0), ('sqlalchemy', 2.0)], 6.0)
    assert rows == [{'library': 'sqlalchemy', 'own': 5.0, 'own_share': 0.8333},
                    {'library': 'python', 'own': 1.0, 'own_share': 0.1667}]
    assert libraries.line(rows) == 'sqlalchemy 83.3%, python 16.7%'
