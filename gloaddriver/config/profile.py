"""Workload profiles: INI files whose keys are gloaddriver's flags.

``--profile NAME`` reads ``NAME.ini`` of the profiles shipped in the package
(``gloaddriver/profiles/``), ``--profile PATH`` any file. One ``[gloaddriver]`` section; a key is a flag without its
dashes (``greenlets = 100``, ``value-size = 1536``); a flag without a value is
``true`` or ``false``. Flags on the command line win over the file (flags >
environment > profile > defaults). A malformed file gets one line naming the
file, the line and the key.
"""
from __future__ import absolute_import, division, print_function

import io
import os
import re

try:
    import configparser
except ImportError:  # pragma: no cover - Python 2
    import ConfigParser as configparser

from gloaddriver import errors

SECTION = 'gloaddriver'
# Flags whose value names an input file: a relative path in a profile is relative
# to the profile's folder, so a profile and its files travel together.
FILE_FLAGS = ('--workload-file', '--spawn-init', '--script')
PROFILES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            'profiles')   # package data: there in a checkout and a wheel
TRUE, FALSE = ('true', 'yes', 'on', '1'), ('false', 'no', 'off', '0')


def path_of(name):
    if os.sep in name or name.endswith('.ini'):
        return name
    return os.path.join(PROFILES_DIR, name + '.ini')


def available():
    try:
        return sorted(f[:-4] for f in os.listdir(PROFILES_DIR) if f.endswith('.ini'))
    except OSError:
        return []


def _line_of(text, key):
    for i, line in enumerate(text.splitlines(), 1):
        if re.match(r'\s*%s\s*[=:]' % re.escape(key), line):
            return i
    return '?'


def _beside(profile_path, value):
    """Relative file names in ``value`` (FILE, or FILE@W,FILE@W) made relative to the
    profile's folder."""
    folder = os.path.dirname(os.path.abspath(profile_path))
    out = []
    for part in value.split(','):
        part = part.strip()
        name, at, weight = part.rpartition('@') if '@' in part else (part, '', '')
        if name and not os.path.isabs(name):
            name = os.path.join(folder, name)
        out.append(name + at + weight)
    return ','.join(out)


def to_argv(name, flags, check):
    """The profile as argv, validated: ``flags`` maps a flag to whether it takes a value,
    ``check(argv)`` raises ValueError(message) for a bad value."""
    path = path_of(name)
    try:
        with io.open(path, encoding='utf-8') as f:
            text = f.read()
    except (IOError, OSError):
        raise errors.ConfigError('profile %r not found (%s); available: %s'
                                 % (name, path, ', '.join(available()) or 'none'))
    parser = configparser.RawConfigParser()
    try:
        if hasattr(parser, 'read_string'):
            parser.read_string(text, source=path)
        else:  # pragma: no cover - Python 2
            parser.readfp(io.StringIO(text), path)
    except configparser.Error as e:
        raise errors.ConfigError('profile %s: %s' % (path, ' '.join(str(e).split())))
    if not parser.has_section(SECTION):
        raise errors.ConfigError('profile %s: no [%s] section' % (path, SECTION))
    argv = []
    for key, value in parser.items(SECTION):
        flag = '--' + key.replace('_', '-')
        where = 'profile %s, line %s, key %r' % (path, _line_of(text, key), key)
        if flag not in flags:
            raise errors.ConfigError('%s: not a gloaddriver flag' % where)
        value = value.strip()
        if flag in FILE_FLAGS:
            value = _beside(path, value)
        if flags[flag]:
            part = [flag, value]
        elif value.lower() in TRUE:
            part = [flag]
        elif value.lower() in FALSE:
            part = []
        else:
            raise errors.ConfigError('%s: %s takes true or false, got %r' % (where, flag, value))
        try:
            check(part)
        except ValueError as e:
            raise errors.ConfigError('%s: %s' % (where, e))
        argv += part
    return argv
