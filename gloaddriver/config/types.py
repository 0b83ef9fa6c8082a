"""Value types for flags (argparse ``type=``), shared by the common flags and the
flag groups of each backend."""
from __future__ import absolute_import, division, print_function

import argparse


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a whole number' % text)
    if value < 1:
        raise argparse.ArgumentTypeError('must be at least 1, got %s' % text)
    return value


def count(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a whole number' % text)
    if value < 0:
        raise argparse.ArgumentTypeError('must not be negative, got %s' % text)
    return value


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a number of seconds' % text)
    if value < 0:
        raise argparse.ArgumentTypeError('must not be negative, got %s' % text)
    return value
