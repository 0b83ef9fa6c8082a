"""Profile files: parsing, precedence, and one clear line for every malformed one."""
from __future__ import absolute_import, division, print_function

import io
import os

import pytest

from gloaddriver import config as cli
from gloaddriver import errors
from gloaddriver.config import profile


def write(tmp, text):
    path = os.path.join(tmp, 'p.ini')
    with io.open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return path


def test_flags_on_the_command_line_win_over_the_profile(tmpdir):
    tmp = str(tmpdir)
    path = write(tmp, u'[gloaddriver]\ngreenlets = 42\nvalue-size = 64\nspawn = true\n')
    c = cli.parse(['--profile', path, '--greenlets', '7'], environ={})
    assert (c.load.greenlets, c.load.value_size, c.target.spawn, c.profile) == (7, 64, True, path)


def test_every_shipped_profile_parses():
    names = profile.available()
    assert {'tarantool-seed', 'postgres-relational', 'postgres-bulk', 'ycsb-a'} <= set(names)
    for name in names:
        c = cli.parse(['--profile', name], environ={})
        assert c.profile == name


@pytest.mark.parametrize('text,words', [
    (u'[gloaddriver]\ngreenlets = 10\nspeed = fast\n', ["line 3", "'speed'", 'not a gloaddriver flag']),
    (u'[gloaddriver]\n\ngreenlets = many\n', ['line 3', "'greenlets'", 'whole number']),
    (u'[gloaddriver]\nspawn = maybe\n', ['line 2', "'spawn'", 'true or false']),
    (u'greenlets = 10\n', ['p.ini']),
    (u'[other]\ngreenlets = 10\n', ['no [gloaddriver] section']),
])
def test_malformed_profiles_name_file_line_and_key(tmpdir, text, words):
    tmp = str(tmpdir)
    path = write(tmp, text)
    with pytest.raises(errors.ConfigError) as e:
        cli.parse(['--profile', path], environ={})
    message = str(e.value)
    assert path in message and '\n' not in message
    for w in words:
        assert w in message, message


def test_unknown_profile_lists_the_available_ones():
    with pytest.raises(errors.ConfigError) as e:
        cli.parse(['--profile', 'no-such-profile'], environ={})
    assert 'tarantool-seed' in str(e.value)


def test_load_needs_a_mix():
    with pytest.raises(errors.ConfigError):
        cli.parse(['--load'], environ={})
