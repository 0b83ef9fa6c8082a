"""pgbench's expression language (gloaddriver.workload.script): the examples of the
PostgreSQL 15 pgbench reference's operator and function tables with their documented
results, every operator and function, precedence, NULL/boolean/double/int semantics,
the errors, variables read from text, and seeded draws that are the same on 2.7 and 3.x
(this file passing on both proves it)."""
from __future__ import absolute_import, division, print_function

import math
import random

import pytest

from gloaddriver import errors
from gloaddriver.workload import script
from gloaddriver.workload.script import codegen, functions
from gloaddriver.workload.script.expr import compile_expression, parse

WHERE = 'script t.sql, line 7'
INT_MIN, INT_MAX = int(-2 ** 63), int(2 ** 63 - 1)   # int, not 2.7's long


def ev(text, v=None, rnd=None):
    """The value of text, evaluated by its closures and by the Python codegen writes of
    it (what a script's run executes): the same value, the same draws, the same error."""
    evaluate = compile_expression(text, WHERE, '\\set x')
    rnd = rnd or random.Random(1)
    state = rnd.getstate()
    closures = _outcome(evaluate, v, rnd)
    if 'debug' in text:     # (it would print twice)
        written = closures
    else:
        after = rnd.getstate()
        rnd.setstate(state)
        written = _outcome(codegen.evaluator(evaluate), v, rnd)
        assert rnd.getstate() == after, text   # the same draws
    if isinstance(closures, Exception):
        assert type(written) is type(closures) and str(written) == str(closures), (
            text, written, closures)
        raise closures
    assert same(written, closures), (text, written, closures)
    return closures


def _outcome(evaluate, v, rnd):
    try:
        return evaluate({} if v is None else dict(v), rnd)
    except errors.ScriptError as e:
        return e


def fails(text, v=None):
    """The ScriptError message of evaluating text, its place checked."""
    with pytest.raises(errors.ScriptError) as info:
        ev(text, v)
    message = str(info.value)
    assert message.startswith(WHERE + ': '), message
    return message[len(WHERE) + 2:]


def refused(text):
    with pytest.raises(errors.ConfigError) as info:
        compile_expression(text, WHERE, '\\set x')
    message = str(info.value)
    assert message.startswith(WHERE + ': \\set x: '), message
    return message


def same(value, expected):
    """Equal and of the same type (1 is not 1.0 is not True)."""
    if isinstance(expected, float) and math.isnan(expected):
        return type(value) is float and math.isnan(value)
    return type(value) is type(expected) and value == expected


# -- the reference's tables, with their documented results ----------------------------

DOC_OPERATORS = [
    ('5 or 0', True), ('3 and 0', False), ('not false', True), ('1 is null', False),
    ('1 notnull', True), ('5 = 4', False), ('5 <> 4', True), ('5 != 5', False),
    ('5 < 4', False), ('5 <= 4', False), ('5 > 4', True), ('5 >= 4', True),
    ('1 | 2', 3), ('1 # 3', 2), ('1 & 3', 1), ('~ 1', -2), ('1 << 2', 4), ('8 >> 2', 2),
    ('5 + 4', 9), ('3 - 2.0', 1.0), ('5 * 4', 20), ('5 / 3', 1), ('3 % 2', 1),
    ('- 2.0', -2.0),
]

DOC_FUNCTIONS = [
    ('abs(-17)', 17), ('debug(5432.1)', 5432.1), ('double(5432)', 5432.0),
    ('exp(1.0)', 2.718281828459045), ('greatest(5, 4, 3, 2)', 5),
    ('hash(10, 5432)', -5817877081768721676), ('hash_fnv1a(10, 5432)', -7793829335365542153),
    ('hash_murmur2(10, 5432)', -5817877081768721676), ('int(5.4 + 3.8)', 9),
    ('least(5, 4, 3, 2.1)', 2.1), ('ln(2.718281828459045)', 1.0), ('mod(54, 32)', 22),
    ('pi()', 3.14159265358979323846), ('pow(2.0, 10)', 1024.0), ('power(2.0, 10)', 1024.0),
]


@pytest.mark.parametrize('text,expected', DOC_OPERATORS + DOC_FUNCTIONS)
def test_the_reference_tables_examples_give_their_documented_results(text, expected):
    assert same(ev(text), expected)


def test_the_reference_examples_of_draws_and_sqrt():
    rnd = random.Random(3)
    for text in ('random(1, 10)', 'random_exponential(1, 10, 3.0)',
                 'random_gaussian(1, 10, 2.5)', 'random_zipfian(1, 10, 1.5)'):
        assert set(ev(text, rnd=rnd) for _ in range(300)) == set(range(1, 11)), text
    assert set(ev('permute(0, 4)', {'default_seed': s}) for s in range(40)) == set(range(4))
    assert '%.9f' % ev('sqrt(2.0)') == '1.414213562'


def test_the_reference_set_examples():
    assert ev('10 * :scale', {'scale': 3}) == 30
    aid = ev('(1021 * random(1, 100000 * :scale)) % \t (100000 * :scale) + 1', {'scale': 2})
    assert 1 <= aid <= 200000
    divx = 'CASE WHEN :x <> 0 THEN :y/:x ELSE NULL END'
    assert ev(divx, {'x': 4, 'y': 9}) == 2 and ev(divx, {'x': 0, 'y': 9}) is None


def test_debug_prints_its_value_and_place_on_stderr(capsys):
    assert ev('debug(2) + debug(1.5) + 0') == 3.5
    assert ev('debug(true) and debug(null)') is None
    err = capsys.readouterr().err.splitlines()
    assert err == ['debug(%s): int 2' % WHERE, 'debug(%s): double 1.5' % WHERE,
                   'debug(%s): boolean true' % WHERE, 'debug(%s): null' % WHERE]
    assert ev('debug(false) and debug(1)') is False   # AND stops at false: one line
    assert capsys.readouterr().err == 'debug(%s): boolean false\n' % WHERE


# -- what pgbench 15 itself gives (each checked with its binary and debug()) ------------

PGBENCH = [
    ('5 / 2', 2), ('-7 / 2', -3), ('-7 % 2', -1), ('7 % -2', 1), ('1.5', 1.5), ('1e3', 1000.0),
    ('.5', 0.5), ('1.e5', 100000.0), ('1e+5', 100000.0), ('.5e1', 5.0), ('5.', 5.0),
    ('007', 7), ('TRUE', True), ('null', None), ('NULL is NULL', True),
    ('true or 0', True), ('false and 5', False), ('not - 1', False),
    ('null and false', None), ('null or true', None), ('null and true', None),
    ('null or false', None), ('false and null', False), ('true and null', None),
    ('true or null', True), ('false or null', None), ('not null', None),
    ('1 is not null', True), ('null is null', True), ('1 isnull', False),
    ('true is true', True), ('1 is true', False), ('1.0 is true', False),
    ('0 is false', False), ('null is true', False), ('null is not true', True),
    ('false is false', True), ('1 is not false', True), ('true is not null', True),
    ('1.0 = 1', True), ('9007199254740993 = 9007199254740992.0', True),
    ('null = null', None), ('null + 1', None), ('1 + null', None), ('null < 1', None),
    ('abs(null)', None), ('greatest(1, null)', None), ('least(null, 1)', None),
    ('int(null)', None), ('random(null, 5)', None), ('sqrt(null)', None),
    ('permute(null, 5, 0)', None), ('hash(null, 1)', None),
    ('case when null then 1 else 2 end', 2), ('case when 0 then 1 else 2 end', 2),
    ('case when 2.5 then 1 end', 1), ('case when 0 then 1 end', None),
    ('case when 0.0 then 1 else 2 end', 2), ('case when 1 then 2 when 1 then 3 end', 2),
    ('case when true then 1 when false then 2 else 3 end', 1),
    ('case when 1 = 1 then 5 else 6 end + 1', 6),
    ('int(2.9)', 3), ('int(-2.9)', -3), ('int(2.5)', 2), ('int(3.5)', 4), ('int(-2.5)', -2),
    ('int(0.5)', 0), ('abs(-2.5)', 2.5), ('abs(-9223372036854775807)', INT_MAX),
    ('1 | 2.0', 3), ('1.5 & 1', 0), ('~ 1.5', -3), ('1 << 64', 1), ('-8 >> 1', -4),
    ('5.5 % 2', 0), ('mod(-7, 2)', -1), ('mod(7.5, 2)', 0),
    ('-9223372036854775807 - 1', INT_MIN), ('-9223372036854775808', INT_MIN),
    ('- 9223372036854775808', INT_MIN), ('(-9223372036854775807 - 1) % -1', 0),
    ('5.0 / 0', float('inf')), ('5 / 0.0', float('inf')), ('-5 / 0.0', float('-inf')),
    ('0.0 / 0', float('nan')), ('1e308 * 10', float('inf')), ('- 0.0', 0.0),
    ('exp(1000)', float('inf')), ('exp(1)', math.e), ('ln(0)', float('-inf')),
    ('ln(-1)', float('nan')), ('sqrt(-1)', float('nan')), ('sqrt(4)', 2.0),
    ('power(2, 10)', 1024.0), ('pow(10, 400)', float('inf')),
    ('pow(-8, 1.0/3)', float('nan')), ('pow(0, -1)', float('inf')),
    ('pow(-10, 401)', float('-inf')), ('greatest(1, 2.0)', 2.0), ('greatest(3, 2.0)', 3.0),
    ('least(1)', 1), ('hash(10.7, 5432)', -3352588262606043674),
    ('hash(11, 5432)', -3352588262606043674), ('hash(-1, 0)', 4219408603045787357),
    ('hash_fnv1a(-1, 0)', -8289690350564177859), ('hash(0, 0)', 8217090173679840641),
    ('hash_fnv1a(0,0)', -6284781860667377211), ('hash(123456789, -5)', 220358297541090074),
    ('hash_fnv1a(123456789, -5)', 5306528128403006158),
    ('hash_fnv1a(11, 5432)', 8420599331376420054), ('random(1, 1)', 1),
    ('random(1.5, 1.5)', 2), ('random_gaussian(1, 1, 2)', 1),
    ('random_exponential(7, 7, 1)', 7), ('random_zipfian(7, 7, 2)', 7),
    ('RANDOM(1,1)', 1), ('Abs(-1)', 1), ('CaSe WhEn TrUe ThEn 1 EnD', 1),
]


@pytest.mark.parametrize('text,expected', PGBENCH)
def test_values_are_those_pgbench_15_gives(text, expected):
    assert same(ev(text), expected)


# -- precedence ----------------------------------------------------------------------

@pytest.mark.parametrize('text,expected', [
    ('1 | 2 & 0', 0), ('1 & 2 | 1', 1), ('6 # 3 & 1', 1),        # one bitwise level, left
    ('2 << 1 << 1', 8), ('1 << 1 + 1', 4), ('1 + 1 << 1', 4),    # + binds tighter than <<
    ('~ 1 + 1', -3), ('~1 * 2', -3), ('~ 1 << 1', -4), ('~ 1 | 2', -2),  # ~ at bitwise
    ('- 2 * 3', -6), ('- 2 + 3', 1), ('-(2) * -3', 6), ('2 * - 3', -6), ('2 - - 3', 5),
    ('--2', 2), ('- - 2', 2), ('+ 2', 2), ('2 + 3 * 4', 14), ('(2 + 3) * 4', 20),
    ('7 - 2 - 1', 4), ('64 / 4 / 2', 8), ('10 % 3 * 2', 2), ('2 * 10 % 3', 2),
    ('not 1 = 2', True), ('not true is null', True), ('true is null is null', False),
    ('1 = 1 is true', True), ('1 isnull is null', False), ('1 + 2 isnull', False),
    ('1 notnull and true', True), ('true or false and false', True),
    ('false and true or true', True), ('not false and false', False),
    ('not not true', True), ('1 > 0 and 2 > 1', True), ('false or true and not false', True),
    ('1 < 2 + 3', True), ('3 * 2 > 5 and 1 | 2 = 3', True),
])
def test_precedence_and_associativity(text, expected):
    assert same(ev(text), expected)


def test_the_tree_shows_the_grouping():
    assert parse('1 + 2 * 3') == ('op', '+', ('const', 1),
                                  ('op', '*', ('const', 2), ('const', 3)))
    assert parse('true or false and null') == (
        'or', ('const', True), ('and', ('const', False), ('const', None)))
    assert parse('-:x') == ('op', '-', ('const', 0), ('var', 'x'))
    assert parse('~:x') == ('op', '#', ('var', 'x'), ('const', -1))
    assert parse(':x is not true') == ('is', ('var', 'x'), True, True)
    assert parse(':x notnull') == ('is', ('var', 'x'), None, True)
    assert parse('case when :a then 1 end') == (
        'case', ((('var', 'a'), ('const', 1)),), None)


# -- errors --------------------------------------------------------------------------

@pytest.mark.parametrize('text,words', [
    ('5 / 0', 'division by zero'), ('5 % 0', 'division by zero'),
    ('mod(5, 0)', 'division by zero'), ('9223372036854775807 + 1', 'bigint out of range'),
    ('-9223372036854775807 - 2', 'bigint out of range'),
    ('9223372036854775807 * 2', 'bigint out of range'),
    ('(-9223372036854775807 - 1) / -1', 'bigint out of range'),
    ('- (-9223372036854775807 - 1)', 'bigint out of range'),
    ('abs(-9223372036854775807 - 1)', 'bigint out of range'),
    ('1 << 63', 'bigint out of range'), ('int(1e30)', 'bigint out of range'),
    ('int(0.0 / 0)', 'bigint out of range'), ('greatest(9223372036854775807, 1) + 1',
                                              'bigint out of range'),
    ('1 = true', 'cannot coerce boolean to int'), ('true = true', 'cannot coerce boolean'),
    ('true < false', 'cannot coerce boolean'), ('true + 1', 'cannot coerce boolean to int'),
    ('1.5 * false', 'cannot coerce boolean to double'), ('null isnull = true', 'boolean'),
    ('double(true)', 'cannot coerce boolean to double'), ('int(true)', 'cannot coerce boolean'),
    ('greatest(true, 1)', 'cannot coerce boolean'), ('abs(true)', 'cannot coerce boolean'),
    ('random(true, 2)', 'cannot coerce boolean to int'), ('exp(true)', 'boolean to double'),
    ('true | 1', 'cannot coerce boolean to int'),
    ('random(5, 1)', 'empty range given to random'),
    ('random_gaussian(5, 1, 2)', 'empty range'), ('random_exponential(5, 1, 1)', 'empty range'),
    ('random_zipfian(5, 1, 2)', 'empty range'),
    ('random(-9223372036854775807 - 1, 9223372036854775807)', 'random range is too large'),
    ('random(-1, 9223372036854775806)', 'random range is too large'),
    ('random_gaussian(1, 10, 1.9)', 'gaussian parameter must be at least 2.0 (not 1.9)'),
    ('random_exponential(1, 10, 0)', 'exponential parameter must be greater than zero'),
    ('random_exponential(1, 10, -1.5)', 'greater than zero (not -1.5)'),
    ('random_zipfian(1, 10, 1.0001)', 'zipfian parameter must be in range [1.001, 1000]'),
    ('random_zipfian(1, 10, 1001)', 'range [1.001, 1000] (not 1001)'),
    ('permute(1, 0, 0)', 'permute size must be greater than zero'),
    ('permute(1, -5, 3)', 'greater than zero (not -5)'),
    (':nope + 1', 'undefined variable "nope"'), ('hash(1)', 'undefined variable "default_seed"'),
    ('permute(1, 10)', 'undefined variable "default_seed"'),
])
def test_run_time_errors_name_the_script_and_line(text, words):
    # Through a variable, the error comes as the expression runs (pgbench's run-time
    # error); written as a constant, it is refused before the run, naming the line.
    assert words in fails('CASE WHEN :go THEN %s END' % text, {'go': True})
    if 'undefined variable' not in words:
        message = refused(text)
        assert words in message and 'whatever the variables hold' in message


def test_a_failing_constant_fails_only_when_reached():
    f = compile_expression('CASE WHEN :x THEN 1 / 0 ELSE 2 END', WHERE)
    assert f({'x': 0}, None) == 2
    with pytest.raises(errors.ScriptError):
        f({'x': 1}, None)
    with pytest.raises(errors.ConfigError):   # fails before it reads any variable: always
        compile_expression('1 / 0', WHERE)


@pytest.mark.parametrize('text,words', [
    ('', 'syntax error at the end'), ('1 +', 'syntax error at the end'),
    ('()', 'syntax error at ")"'), ('(1', 'expected )'), ('1)', 'syntax error at ")"'),
    ('1 2', 'syntax error at 2'), ('1 < 2 < 3', 'comparisons do not chain'),
    ('1 = 1 = true', 'do not chain'), ('1 < 2 = true', 'do not chain'),
    ('1 .5', 'syntax error at 0.5'), ('1.5.5', 'syntax error'), ('1e5e5', 'syntax error'),
    ('0x10', 'syntax error at "x10"'), ('true(1)', 'syntax error'), ('isnull', 'syntax'),
    ('1 is', 'syntax error at the end'), ('1 is 2', 'IS takes NULL, TRUE or FALSE'),
    ('case end', 'CASE needs WHEN'), ('case when true then 1 else 2 else 3 end', 'ELSE'),
    ('5 + case 1 when 1 then 2 end', 'CASE needs WHEN'), ('case when 1 then 2', 'expected END'),
    ('9223372036854775808', 'integer constant out of range'),
    ('-(9223372036854775808)', 'integer constant out of range'),
    ('1e400', 'double constant out of range (1e400)'), ('1e-400', 'double constant out'),
    ('@', 'unexpected character "@"'), ('1 \\set y 2', 'unexpected character "\\"'),
    ('nofunc(1)', 'unknown function "nofunc"'), ('random', 'expected ('),
    ('1 -- comment', '-- starts no comment in an expression'),
    ('greatest()', 'greatest() takes 1 or more arguments, not 0'),
    ('least()', 'least() takes 1 or more'), ('pi(1)', 'pi() takes 0 arguments, not 1'),
    ('abs(1, 2)', 'abs() takes 1 argument, not 2'), ('random(1)', 'random() takes 2 arg'),
    ('random(1, 2, 3)', 'random() takes 2 arguments, not 3'),
    ('random_gaussian(1, 2)', 'takes 3 arguments'), ('random_zipfian(1)', 'takes 3'),
    ('random_exponential()', 'takes 3'), ('hash()', 'hash() takes 1 to 2 arguments, not 0'),
    ('hash(1, 2, 3)', 'hash() takes 1 to 2 arguments, not 3'), ('hash_fnv1a(1,2,3)', '1 to 2'),
    ('hash_murmur2()', '1 to 2'), ('permute(1)', 'permute() takes 2 to 3 arguments, not 1'),
    ('mod(1)', 'mod() takes 2 arguments'), ('pow(1)', 'takes 2'), ('power(1, 2, 3)', '2'),
    ('exp()', 'exp() takes 1'), ('ln(1, 2)', 'ln() takes 1'), ('sqrt()', 'sqrt() takes 1'),
    ('int()', 'int() takes 1'), ('double(1, 2)', 'double() takes 1'), ('debug()', 'takes 1'),
])
def test_parse_errors_are_config_errors_naming_the_line_and_column(text, words):
    message = refused(text)
    assert words in message and 'column' in message


# -- NULL, booleans and numbers --------------------------------------------------------

def test_int_and_double_arithmetic():
    assert same(ev('1 + 2'), 3) and same(ev('1 + 2.0'), 3.0) and same(ev('7 / 2.0'), 3.5)
    assert same(ev('-7 / 2'), -3) and same(ev('7 / -2'), -3) and same(ev('-7 / -2'), 3)
    assert same(ev('-7 % -2'), -1) and same(ev('mod(-7, -2)'), -1)
    assert same(ev('0.1 + 0.2'), 0.1 + 0.2) and same(ev('2 * 1.5'), 3.0)
    assert same(ev('3 - 1.5'), 1.5) and same(ev('3 - 4'), -1)
    assert same(ev('4611686018427387903 * 2 + 1'), INT_MAX)
    assert same(ev('-4611686018427387904 * 2'), INT_MIN)


def test_comparisons_of_every_kind():
    for text, expected in [('2 = 2', True), ('2 <> 2', False), ('2 != 3', True),
                           ('2 < 3', True), ('3 <= 3', True), ('2 > 3', False),
                           ('3 >= 4', False), ('2.5 > 2', True), ('2 < 2.5', True),
                           ('2.0 = 2', True), ('0.0 / 0 = 0.0 / 0', False)]:
        assert same(ev(text), expected), text


def test_bitwise_operators_take_ints_and_round_doubles():
    assert same(ev('5 | 2'), 7) and same(ev('6 & 3'), 2) and same(ev('6 # 3'), 5)
    assert same(ev('~0'), -1) and same(ev('~ -1'), 0) and same(ev('1 << 62'), 2 ** 62)
    assert same(ev('-1 >> 63'), -1) and same(ev('2.5 | 0'), 2) and same(ev('1 >> 64'), 1)
    assert same(ev('null | 1'), None) and same(ev('1 << null'), None)


def test_functions_every_one():
    assert same(ev('abs(-2)'), 2) and same(ev('abs(2.5)'), 2.5) and same(ev('abs(0)'), 0)
    assert same(ev('double(2)'), 2.0) and same(ev('double(2.5)'), 2.5)
    assert same(ev('int(7)'), 7) and same(ev('int(-0.4)'), 0)
    assert same(ev('exp(0)'), 1.0) and same(ev('ln(1)'), 0.0) and same(ev('sqrt(9)'), 3.0)
    assert same(ev('pow(2, 0.5)'), math.sqrt(2)) and same(ev('pow(-2, 3)'), -8.0)
    assert same(ev('greatest(1, 7, 3)'), 7) and same(ev('least(4, -2, 3)'), -2)
    assert same(ev('greatest(1, 2.5, 2)'), 2.5) and same(ev('least(1, 2.5)'), 1.0)
    assert same(ev('mod(10, 3)'), 1) and same(ev('pi()'), math.pi)
    v = {'default_seed': 5432}
    assert ev('hash(10)', v) == ev('hash(10, 5432)') == ev('hash_murmur2(10)', v)
    assert ev('hash_fnv1a(10)', v) == -7793829335365542153
    assert ev('hash(:x, :s)', {'x': '10', 's': '5432'}) == -5817877081768721676
    assert ev('permute(3, 10)', v) == ev('permute(3, 10, 5432)')
    assert ev('permute(13, 10, 5432)') == ev('permute(3, 10, 5432)')   # modulo size
    assert ev('permute(-7, 10, 5432)') == ev('permute(3, 10, 5432)')
    assert ev('permute(123, 1, 9)') == 0


def test_logic_reads_numbers_as_conditions():
    assert same(ev('2.5 and -1'), True) and same(ev('0.0 or 0'), False)
    assert same(ev('not 0'), True) and same(ev('not 0.0'), True) and same(ev('not 2'), False)
    assert same(ev('1 and 2.5'), True) and same(ev('0 and null'), False)


def test_truthy_and_to_text():
    assert [script.truthy(x) for x in (None, 0, 0.0, 1, -1, 0.5, True, False)] == [
        False, False, False, True, True, True, True, False]
    assert [script.truthy(x) for x in ('0', '1', 'off', 'yes', 'null', '2.5')] == [
        False, True, False, True, False, True]
    assert [script.to_text(x) for x in (5, -5, INT_MIN, True, False, None, u'x:y')] == [
        '5', '-5', '-9223372036854775808', 'true', 'false', 'NULL', u'x:y']


@pytest.mark.parametrize('value,text', [
    # as pgbench 15 substitutes each into SQL (its -d output)
    (1.5, '1.5'), (1000.0, '1000'), (math.pi, '3.14159265358979'), (1.0 / 3, '0.333333333333333'),
    (1e20, '1e+20'), (0.1 + 0.2, '0.3'), (1e-5, '1e-05'), (123456789.123456789, '123456789.123457'),
    (float('inf'), 'Infinity'), (float('-inf'), '-Infinity'), (float('nan'), 'NaN'), (0.0, '0'),
    (-2.0, '-2'), (2 ** 70 * 1.0, '1.18059162071741e+21'),
])
def test_a_double_as_text_is_what_pgbench_writes(value, text):
    assert script.to_text(value) == text


# -- variables ---------------------------------------------------------------------------

@pytest.mark.parametrize('text,expected', [
    # each what pgbench 15 made of -D x=TEXT, read as :x (its debug() output)
    ('true', True), ('TRUE', True), ('yes', True), ('on', True), ('off', False), ('no', False),
    ('t', True), ('f', False), ('tr', True), ('y', True), ('n', False), ('of', False),
    ('ye', True), ('fa', False), ('F', False), ('T', True), ('Yes', True), ('1.5', 1.5),
    ('1e3', 1000.0), (' 12', 12), ('0x10', 16.0), ('null', None), ('NULL', None),
    ('Null', None), ('-9223372036854775808', INT_MIN), ('nan', float('nan')),
    ('inf', float('inf')), ('Infinity', float('inf')), ('1.', 1.0), ('.5', 0.5), ('+5', 5),
    ('-5', -5), (' 1.5', 1.5), ('0', 0), ('00012', 12), ('1', 1), ('01', 1), ('-0', 0),
    ('  -3', -3), ('1.5e+2', 150.0), (' nan', float('nan')),
])
def test_a_variables_text_is_read_as_pgbench_reads_it(text, expected):
    assert same(ev(':x', {'x': text}), expected)
    assert same(ev(':x', {'x': u'%s' % text}), expected)
    assert same(script.value_of_text(text, 'x'), expected)


@pytest.mark.parametrize('text,words', [
    ('12 ', 'malformed variable "x" value: "12 "'), ('nul', 'malformed'), ('abc', 'malformed'),
    ('o', 'malformed'), ('1.5 ', 'malformed'), ('1e400', 'malformed'), ('1_000', 'malformed'),
    ('e5', 'malformed'), ('1e', 'malformed'), ('tru e', 'malformed'), ('true ', 'malformed'),
    ('nulls', 'malformed'), ('', 'malformed'), ('1e-400', 'malformed'),
    ('9223372036854775808', 'out of range for type bigint'),
    ('+', 'invalid input syntax for type bigint'), ('-', 'invalid input syntax'),
])
def test_malformed_variable_text_is_a_script_error(text, words):
    assert words in fails(':x + 1', {'x': text})
    with pytest.raises(ValueError):
        script.value_of_text(text)


def test_variables_of_other_types_and_names():
    assert same(ev(':x', {'x': 2 ** 62}), 2 ** 62) and same(ev(':x * 2', {'x': 1.5}), 3.0)
    assert same(ev(':x', {'x': b'42'}), 42)
    assert ev(u':\u0442\u0435\u0441\u0442 + 1', {u'\u0442\u0435\u0441\u0442': 1}) == 2
    assert ev(':_a1 + :B', {'_a1': 1, 'B': 2}) == 3
    assert 'undefined variable "Scale"' in fails(':Scale', {'scale': 1})


# -- random draws ------------------------------------------------------------------------

def draws(text, n, seed=12345, v=None):
    f = compile_expression(text, WHERE)
    rnd = random.Random(seed)
    v = dict(v or {}, default_seed=42)
    return [f(dict(v, i=i), rnd) for i in range(n)]


def test_a_seed_draws_the_same_values_on_every_interpreter():
    # rnd.random() is the same Mersenne Twister on 2.7 and 3.x: so are these
    assert draws('random(1, 1000)', 5) == [417, 11, 826, 299, 369]
    assert draws('random_gaussian(1, 1000, 2.5)', 5) == [708, 388, 567, 637, 406]
    assert draws('random_exponential(1, 1000, 3.0)', 5) == [168, 4, 512, 112, 144]
    assert draws('random_zipfian(1, 1000, 1.07)', 5) == [27, 905, 2, 69, 39]
    assert draws('permute(:i, 1000)', 5) == [373, 482, 371, 533, 950]
    assert draws('random(0, 4611686018427387904)', 3) == [
        2414013666751833279, 4353152631534653012, 4072991928334736894]
    assert all(type(x) is int for x in draws('permute(:i, 1000) + hash(:i)', 5))


def test_uniform_draws_cover_the_range_evenly():
    xs = draws('random(-3, 3)', 7000)
    counts = [xs.count(k) for k in range(-3, 4)]
    assert min(counts) > 850 and max(counts) < 1150 and set(xs) == set(range(-3, 4))
    big = draws('random(9223372036854775000, 9223372036854775807)', 2000)
    assert min(big) >= 9223372036854775000 and len(set(big)) > 500
    huge = draws('random(-4611686018427387904, 4611686018427387902)', 200)
    assert any(x < 0 for x in huge) and any(x > 0 for x in huge)


def test_gaussian_draws_follow_the_doc():
    # parameter 4: ~67 % in the middle quarter, ~95 % in the middle half
    xs = draws('random_gaussian(0, 999, 4.0)', 20000)
    quarter = sum(1 for x in xs if 375 <= x < 625) / len(xs)
    half = sum(1 for x in xs if 250 <= x < 750) / len(xs)
    assert 0.66 < quarter < 0.70 and 0.945 < half < 0.965
    assert min(xs) >= 0 and max(xs) <= 999 and abs(sum(xs) / len(xs) - 499.5) < 5


def test_exponential_draws_follow_the_doc():
    # P(i) = f(i) - f(i+1), f(x) = exp(-p (x - min) / n) / (1 - exp(-p))
    p, n = 3.0, 10
    xs = draws('random_exponential(1, 10, 3.0)', 30000)
    f = lambda x: math.exp(-p * (x - 1) / n) / (1 - math.exp(-p))   # noqa: E731
    for i in range(1, 11):
        assert abs(xs.count(i) / len(xs) - (f(i) - f(i + 1))) < 0.01, i


def test_zipfian_draws_follow_the_doc():
    # "random_zipfian(1, ..., 2.5) produces the value 1 about (2/1)**2.5 = 5.66 times more
    # frequently than 2, which itself is produced (3/2)**2.5 = 2.76 times more frequently
    # than 3"
    xs = draws('random_zipfian(1, 100, 2.5)', 40000)
    assert 5.3 < xs.count(1) / xs.count(2) < 6.0 and 2.5 < xs.count(2) / xs.count(3) < 3.0
    near_one = draws('random_zipfian(1, 1000000, 1.001)', 2000)   # fast even here
    assert min(near_one) >= 1 and max(near_one) <= 1000000 and near_one.count(1) > 20
    assert set(draws('random_zipfian(1, 3, 1000)', 100)) == set([1])


def test_permute_is_a_bijection_chosen_by_its_seed():
    for size in (1, 2, 3, 7, 10, 64, 100, 1000, 4099):
        for seed in (0, 1, -5, 2 ** 63 - 1):
            out = [functions.permute(i, size, seed) for i in range(size)]
            assert sorted(out) == list(range(size)), (size, seed)
    a = [functions.permute(i, 1000, 1) for i in range(1000)]
    b = [functions.permute(i, 1000, 2) for i in range(1000)]
    assert a != b and a != list(range(1000))
    assert sum(1 for x, y in zip(a, b) if x == y) < 20   # unrelated permutations
    big = 2 ** 63 - 1
    xs = set(functions.permute(i, big, 7) for i in range(1000))
    assert len(xs) == 1000 and all(0 <= x < big for x in xs)


def test_the_zipfian_table_is_kept_per_range_and_parameter():
    functions._zipfs.clear()
    draws('random_zipfian(1, 10, 1.5) + random_zipfian(1, 20, 1.5)', 50)
    assert sorted(functions._zipfs) == [(10, 1.5), (20, 1.5)]


def test_hashes_spread_and_depend_on_the_seed():
    hs = set(ev('hash(:i, 1)', {'i': i}) for i in range(1000))
    fs = set(ev('hash_fnv1a(:i, 1)', {'i': i}) for i in range(1000))
    assert len(hs) == len(fs) == 1000
    assert ev('hash(1, 1)') != ev('hash(1, 2)') and ev('hash_fnv1a(1, 1)') != ev(
        'hash_fnv1a(1, 2)')
