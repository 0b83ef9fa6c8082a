"""Value types for flags (argparse ``type=``), shared by the common flags and the
flag groups of each backend."""
from __future__ import absolute_import, division, print_function

import argparse


def _number(text, cast, what, minimum, rule):
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not %s' % (text, what))
    if value < minimum:
        raise argparse.ArgumentTypeError('%s, got %s' % (rule, text))
    return value


def positive_int(text):
    return _number(text, int, 'a whole number', 1, 'must be at least 1')


def count(text):
    return _number(text, int, 'a whole number', 0, 'must not be negative')


def seconds(text):
    return _number(text, float, 'a number of seconds', 0, 'must not be negative')
