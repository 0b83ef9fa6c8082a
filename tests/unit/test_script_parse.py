"""pgbench script files (gloaddriver.workload.script): the built-in scripts against
pgbench 15's own (``pgbench --show-script``, when the binary is here), where commands
end (``;`` outside quotes and comments, ``\\;`` compounds, meta-commands), \\if chains as
jumps, \\gset/\\aset, \\sleep, \\shell/\\setshell, pipelines, the SQL of a query with its
variables, and every parse error naming its file and line."""
from __future__ import absolute_import, division, print_function

import io
import os
import random
import subprocess

import pytest

from gloaddriver import errors
from gloaddriver.workload import script
from gloaddriver.workload.script.builtin import DESCRIPTIONS, NAMES, TEXTS, find

PGBENCH = '/usr/lib/postgresql/15/bin/pgbench'


def parse(text, path='t.sql'):
    return script.parse_text(text, path, 't', 1)


def cmds(text):
    return parse(text).commands


def refused(text, line, path='t.sql'):
    """The ConfigError message of parsing text; it names the file and the line."""
    with pytest.raises(errors.ConfigError) as info:
        parse(text, path)
    message = str(info.value)
    assert message.startswith('script %s, line %d: ' % (path, line)), message
    return message


def sqls(text):
    """[[query sql, ...], ...] of the SQL commands of a script."""
    return [[q.sql for q in c.queries] for c in cmds(text) if c.kind == 'sql']


def run(s, v, rnd=None):
    """Walk a script's commands as an executor would: the SQL texts it would send."""
    out, i, commands = [], 0, s.commands
    while i < len(commands):
        c = commands[i]
        if c.kind == 'branch':
            i = i + 1 if script.truthy(c.expr(v, rnd)) else c.jump
            continue
        if c.kind == 'goto':
            i = c.jump
            continue
        if c.kind == 'set':
            v[c.name] = c.expr(v, rnd)
        elif c.kind == 'sql':
            out.extend(q.simple(v) for q in c.queries)
        i += 1
    return out


# -- the built-in scripts --------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists(PGBENCH), reason='no pgbench 15 binary here')
@pytest.mark.parametrize('name', NAMES)
def test_pgbench_15s_own_builtin_scripts_parse_and_equal_ours(name):
    shown = subprocess.Popen([PGBENCH, '--show-script=%s' % name], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT).communicate()[0].decode('utf-8')
    header, _, body = shown.partition('\n')
    assert header == '-- %s: %s' % (name, DESCRIPTIONS[name])
    theirs = script.parse_text(shown, 'pgbench', name, 1)
    ours = script.builtin(name)
    assert body.strip() == TEXTS[name].strip()
    assert [(c.kind, c.text) for c in theirs.commands] == [
        (c.kind, c.text) for c in ours.commands]


def test_the_builtin_scripts():
    s = script.builtin('tpcb-like@5')
    assert (s.name, s.path, s.weight) == ('tpcb-like', '<builtin: tpcb-like>', 5)
    assert [c.kind for c in s.commands] == ['set'] * 4 + ['sql'] * 7
    assert [c.line for c in s.commands] == list(range(1, 12))
    assert s.commands[0].text == '\\set aid random(1, 100000 * :scale)'
    assert s.commands[10].text == 'END;'
    update = s.commands[5].queries[0]
    assert update.names == ('delta', 'aid')
    assert update.param_sql == ('UPDATE pgbench_accounts SET abalance = abalance + $1 '
                                'WHERE aid = $2')
    v = {'scale': 10}
    sent = run(s, v, random.Random(1))
    assert len(sent) == 7 and 1 <= v['aid'] <= 1000000 and 1 <= v['bid'] <= 10
    assert 1 <= v['tid'] <= 100 and -5000 <= v['delta'] <= 5000
    assert sent[1] == 'UPDATE pgbench_accounts SET abalance = abalance + %d WHERE aid = %d' % (
        v['delta'], v['aid'])
    assert [len(script.builtin(n).commands) for n in NAMES] == [11, 9, 2]


@pytest.mark.parametrize('given,name', [
    ('tpcb-like', 'tpcb-like'), ('t', 'tpcb-like'), ('tpcb', 'tpcb-like'),
    ('si', 'simple-update'), ('simple-update', 'simple-update'), ('se', 'select-only'),
    ('select', 'select-only'),
])
def test_a_builtin_is_found_by_an_unambiguous_prefix(given, name):
    assert find(given) == name and script.builtin(given).name == name
    assert script.builtin(given + '@3').weight == 3


@pytest.mark.parametrize('given,words', [
    ('s', 'ambiguous: it starts simple-update and select-only'), ('x', 'no such built-in'),
    ('', 'no such built-in'), ('tpcb-likes', 'no such'), ('T', 'no such'),
])
def test_an_ambiguous_or_unknown_builtin_lists_the_names(given, words):
    with pytest.raises(errors.ConfigError) as info:
        script.builtin(given)
    assert words in str(info.value)
    assert 'tpcb-like, simple-update, select-only' in str(info.value)


@pytest.mark.parametrize('spec', ['tpcb-like@', 'tpcb-like@x', 'tpcb-like@-1',
                                  'tpcb-like@2147483648', 'tpcb-like@1.5'])
def test_a_bad_weight_is_refused(spec):
    with pytest.raises(errors.ConfigError) as info:
        script.builtin(spec)
    assert 'weight' in str(info.value)


# -- where SQL commands end ------------------------------------------------------------

def test_statements_end_at_semicolons_outside_quotes_comments_and_parentheses():
    text = (u"-- a comment line\n\nSELECT 1; SELECT 2;\n"
            u"SELECT 'a;b', \"x;y\" FROM (SELECT 1 AS \"x;y\") t -- trailing; comment\n"
            u"  WHERE 1 = 1;\n"
            u"SELECT $$dollar;quoted$$, $t$tag;$t$, $1, a$b$c;\n"
            u"SELECT /* block; /* nested; */ comment */ 3;\n"
            u"SELECT (SELECT 4; );\n"
            u"SELECT E'esc\\'; still', 'it''s; ok', 5;\n"
            u"SELECT \"a\"\";b\";\n"
            u"SELECT 13   ;   SELECT 14\n;\n")
    assert sqls(text) == [
        ['SELECT 1'], ['SELECT 2'],
        ['SELECT \'a;b\', "x;y" FROM (SELECT 1 AS "x;y") t -- trailing; comment\n'
         '  WHERE 1 = 1'],
        ['SELECT $$dollar;quoted$$, $t$tag;$t$, $1, a$b$c'],
        ['SELECT /* block; /* nested; */ comment */ 3'], ['SELECT (SELECT 4; )'],
        ["SELECT E'esc\\'; still', 'it''s; ok', 5"], ['SELECT "a"";b"'],
        ['SELECT 13'], ['SELECT 14']]
    lines = [c.line for c in cmds(text)]
    assert lines == [3, 3, 4, 6, 7, 8, 9, 10, 11, 11]
    assert cmds(text)[2].text == ('SELECT \'a;b\', "x;y" FROM (SELECT 1 AS "x;y") t -- '
                                  'trailing; comment WHERE 1 = 1;')


def test_a_statement_spans_lines_and_ends_at_a_meta_command_or_the_end():
    assert sqls('SELECT\n  1\n  + 2;\n') == [['SELECT\n  1\n  + 2']]
    c = cmds('SELECT 7\n\\set v 1\nSELECT 8 \\set w 2\nSELECT 9')
    assert [(x.kind, x.line, x.text) for x in c] == [
        ('sql', 1, 'SELECT 7'), ('set', 2, '\\set v 1'), ('sql', 3, 'SELECT 8'),
        ('set', 3, '\\set w 2'), ('sql', 4, 'SELECT 9')]


def test_empty_and_comment_only_statements_are_dropped():
    assert sqls('SELECT 1;;\n;\n  -- indented comment\n\tSELECT 2;\n/* only */;\n') == [
        ['SELECT 1'], ['SELECT 2']]
    assert sqls('SELECT 1; -- c\n-- d\nSELECT 2 -- e\n;\n') == [
        ['SELECT 1'], ['SELECT 2 -- e']]


def test_compounds_join_queries_into_one_command():
    c = cmds('SELECT 5 \\; SELECT 6;\nSELECT 1 \\;\n  SELECT 2 \\; SELECT 3\n;\n'
             'SELECT 7 \\;\n')
    assert [[q.sql for q in x.queries] for x in c] == [
        ['SELECT 5', 'SELECT 6'], ['SELECT 1', 'SELECT 2', 'SELECT 3'], ['SELECT 7']]
    assert [x.text for x in c] == ['SELECT 5 \\; SELECT 6;',
                                   'SELECT 1 \\; SELECT 2 \\; SELECT 3 ;', 'SELECT 7 \\;']
    assert sqls("SELECT ';' \\; SELECT '\\;'") == [["SELECT ';'", "SELECT '\\;'"]]


def test_windows_line_ends():
    c = cmds('\\set x 1\r\nSELECT :x;\r\n')
    assert [(x.kind, x.line, x.text) for x in c] == [('set', 1, '\\set x 1'),
                                                     ('sql', 2, 'SELECT :x;')]


# -- \gset and \aset ---------------------------------------------------------------------

def test_gset_and_aset_end_a_statement_with_or_without_a_prefix():
    text = ('UPDATE pgbench_accounts\n  SET abalance = abalance + :delta\n  WHERE aid = :aid\n'
            '  RETURNING abalance \\gset\n'
            '-- compound of two queries\n'
            'SELECT 1 \\;\nSELECT 2 AS two, 3 AS three \\gset p_\n'
            'SELECT 4 AS four \\; SELECT 5 AS five \\aset\n'
            'SELECT 6 AS six \\aset q_\n'
            'SELECT 1 AS a;\n\\gset\n'
            'SELECT 1 AS b; \\aset z\n')
    c = cmds(text)
    assert [(x.line, x.gset, x.aset, len(x.queries)) for x in c] == [
        (1, '', None, 1), (6, 'p_', None, 2), (8, None, '', 2), (9, None, 'q_', 1),
        (10, '', None, 1), (12, None, 'z', 1)]
    assert c[0].queries[0].sql == ('UPDATE pgbench_accounts\n  SET abalance = abalance + '
                                   ':delta\n  WHERE aid = :aid\n  RETURNING abalance')
    assert c[1].text == 'SELECT 1 \\; SELECT 2 AS two, 3 AS three \\gset p_'
    assert c[4].text == 'SELECT 1 AS a; \\gset' and c[5].text == 'SELECT 1 AS b; \\aset z'


@pytest.mark.parametrize('text,line,words', [
    ('\\gset\n', 1, '\\gset must follow an SQL command'),
    ('\\set x 1\n\\gset\n', 2, '\\gset must follow an SQL command'),
    ('SELECT 1 AS a \\gset\n\\gset\n', 2, '\\gset must follow'),
    ('SELECT 1;\n\\if true\n\\endif\n\\aset\n', 4, '\\aset must follow'),
    ('SELECT 1 \\gset p q\n', 1, '\\gset takes at most one argument'),
    ('SELECT 1;\n\\aset p q\n', 2, '\\aset takes at most one argument'),
    ('/* c */ \\gset\n', 1, '\\gset must follow an SQL command'),
    ('\\startpipeline\nSELECT 1 \\gset\n\\endpipeline\n', 2, '\\gset is not allowed in a '
                                                             'pipeline'),
    ('\\startpipeline\nSELECT 1;\n\\aset\n\\endpipeline\n', 3, '\\aset is not allowed'),
])
def test_gset_and_aset_errors(text, line, words):
    assert words in refused(text, line)


# -- \if chains ---------------------------------------------------------------------------

CHAIN = ('\\if :a = 1\nSELECT 1;\n'
         '\\elif :a = 2\nSELECT 2;\n'
         '  \\if :b\n  SELECT 21;\n  \\else\n  SELECT 22;\n  \\endif\n'
         '\\elif :a = 3\nSELECT 3;\n'
         '\\else\nSELECT 4;\n'
         '\\endif\nSELECT 5;\n')


def test_if_elif_else_endif_compile_to_branches_and_gotos():
    c = cmds(CHAIN)
    assert [(x.kind, x.line, getattr(x, 'jump', None)) for x in c] == [
        ('branch', 1, 3), ('sql', 2, None), ('goto', 3, 14), ('branch', 3, 10),
        ('sql', 4, None), ('branch', 5, 8), ('sql', 6, None), ('goto', 7, 9),
        ('sql', 8, None), ('goto', 10, 14), ('branch', 10, 13), ('sql', 11, None),
        ('goto', 12, 14), ('sql', 13, None), ('sql', 15, None)]
    assert c[3].text == '\\elif :a = 2' and c[12].text == '\\else'


@pytest.mark.parametrize('a,b,sent', [
    (1, 0, ['SELECT 1', 'SELECT 5']), (2, 1, ['SELECT 2', 'SELECT 21', 'SELECT 5']),
    (2, 0, ['SELECT 2', 'SELECT 22', 'SELECT 5']), (2, None, ['SELECT 2', 'SELECT 22',
                                                              'SELECT 5']),
    (3, 1, ['SELECT 3', 'SELECT 5']), (9, 1, ['SELECT 4', 'SELECT 5']),
    ('2', '1.5', ['SELECT 2', 'SELECT 21', 'SELECT 5']),
])
def test_an_if_chain_runs_one_branch(a, b, sent):
    assert run(parse(CHAIN), {'a': a, 'b': b}) == sent


def test_if_without_else_and_jumps_to_the_end():
    s = parse('\\if :x\nSELECT 1;\n\\endif\n')
    assert [(x.kind, getattr(x, 'jump', None)) for x in s.commands] == [
        ('branch', 2), ('sql', None)]
    assert run(s, {'x': 0}) == [] and run(s, {'x': 1}) == ['SELECT 1']
    empty = parse('\\if :x\n\\elif :y\n\\else\n\\endif\n')
    assert [(x.kind, x.jump) for x in empty.commands] == [
        ('branch', 2), ('goto', 4), ('branch', 4), ('goto', 4)]


@pytest.mark.parametrize('text,line,words', [
    ('\\if true\nSELECT 1;\n', 1, '\\if without a matching \\endif'),
    ('\\if 1\n\\if 2\n\\endif\n', 1, '\\if without a matching \\endif'),
    ('\\endif\n', 1, '\\endif without a matching \\if'),
    ('SELECT 1;\n\\else\n', 2, '\\else without a matching \\if'),
    ('\\elif 1\n', 1, '\\elif without a matching \\if'),
    ('\\if 1\n\\else\n\\else\n\\endif\n', 3, '\\else after \\else'),
    ('\\if 1\n\\else\n\\elif 2\n\\endif\n', 3, '\\elif after \\else'),
    ('\\if\n\\endif\n', 1, '\\if needs a condition'),
    ('\\if 1\n\\elif\n\\endif\n', 2, '\\elif needs a condition'),
    ('\\if 1\n\\endif extra\n', 2, '\\endif takes no argument'),
    ('\\if 1\n\\else extra\n\\endif\n', 2, '\\else takes no argument'),
    ('\\if 1 +\n\\endif\n', 1, '\\if: syntax error at the end'),
    ('\\if 1\n\\elif nofunc()\n\\endif\n', 2, '\\elif: unknown function "nofunc"'),
])
def test_if_errors(text, line, words):
    assert words in refused(text, line)


# -- meta-commands ------------------------------------------------------------------------

def test_set_with_continuation_lines_and_case_insensitive_names():
    c = cmds('\\set aid (1021 * random(1, 100000 * :scale)) % \\\n'
             '           (100000 * :scale) + 1\n'
             '\\SET x 1 + \\\n\\\n 2\n')
    assert [(x.kind, x.line, x.name) for x in c] == [('set', 1, 'aid'), ('set', 3, 'x')]
    assert c[0].text == '\\set aid (1021 * random(1, 100000 * :scale)) % (100000 * :scale) + 1'
    assert c[1].expr({}, None) == 3
    assert 1 <= c[0].expr({'scale': 1}, random.Random(1)) <= 100000


def test_set_errors_name_the_line_even_at_run_time():
    s = parse('SELECT 1;\n\n\\set x :y / 0\n')
    with pytest.raises(errors.ScriptError) as info:
        s.commands[1].expr({'y': 5}, None)
    assert str(info.value) == 'script t.sql, line 3: division by zero'


@pytest.mark.parametrize('text,v,seconds', [
    ('\\sleep 10 ms', {}, 0.01), ('\\sleep 10ms', {}, 0.01), ('\\sleep 2', {}, 2.0),
    ('\\sleep 2 s', {}, 2.0), ('\\sleep 5 us', {}, 5e-6), ('\\sleep 1 US', {}, 1e-6),
    ('\\sleep 3 MS', {}, 0.003), ('\\sleep -5 ms', {}, 0.0), ('\\sleep :t ms', {'t': 7}, 0.007),
    ('\\sleep :t', {'t': '3'}, 3.0), ('\\sleep :t us', {'t': 1.9}, 1e-6),
    ('\\sleep :t s', {'t': '4 apples'}, 4.0),
])
def test_sleep_units_and_variables(text, v, seconds):
    (c,) = cmds(text + '\n')
    assert c.kind == 'sleep' and abs(c.seconds(v) - seconds) < 1e-12


@pytest.mark.parametrize('v,words', [
    ({}, 'undefined variable "t"'), ({'t': 'abc'}, 'invalid sleep time "abc" for variable "t"'),
    ({'t': True}, 'invalid sleep time "true"'), ({'t': None}, 'invalid sleep time "NULL"'),
])
def test_sleep_on_a_bad_variable_fails_at_run_time(v, words):
    (c,) = cmds('SELECT 1;\n\\sleep :t ms\n')[1:]
    with pytest.raises(errors.ScriptError) as info:
        c.seconds(v)
    assert str(info.value).startswith('script t.sql, line 2: ') and words in str(info.value)


def test_shell_and_setshell_substitute_variables():
    c = cmds('\\setshell n  echo literal :x ::starts_with_colon :nope: a:b\n'
             '\\shell :cmd :x\n')
    assert (c[0].kind, c[0].name, c[1].kind, c[1].name) == ('setshell', 'n', 'shell', None)
    v = {'x': 1.5, 'cmd': 'touch'}
    assert c[0].argv(v) == ['echo', 'literal', '1.5', ':starts_with_colon', ':nope:', 'a:b']
    assert c[1].argv(v) == ['touch', '1.5']
    with pytest.raises(errors.ScriptError) as info:
        c[1].argv({'x': 1})
    assert str(info.value) == 'script t.sql, line 2: undefined variable "cmd"'


def test_pipelines():
    c = cmds('\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline\n'
             '\\if 1\n\\startpipeline\n\\endif\n\\endpipeline\n')
    assert [(x.kind, x.line) for x in c] == [
        ('startpipeline', 1), ('sql', 2), ('syncpipeline', 3), ('sql', 4), ('endpipeline', 5),
        ('branch', 6), ('startpipeline', 7), ('endpipeline', 9)]


@pytest.mark.parametrize('text,line,words', [
    ('\\startpipeline\n\\startpipeline\n\\endpipeline\n\\endpipeline\n', 2,
     '\\startpipeline inside a pipeline (opened at line 1)'),
    ('SELECT 1;\n\\endpipeline\n', 2, '\\endpipeline outside a pipeline'),
    ('\\syncpipeline\n', 1, '\\syncpipeline outside a pipeline'),
    ('SELECT 0;\n\\startpipeline\nSELECT 1;\n', 2, '\\startpipeline without a matching '
                                                 '\\endpipeline'),
    ('\\startpipeline extra\n', 1, '\\startpipeline takes no argument'),
])
def test_pipeline_errors(text, line, words):
    assert words in refused(text, line)


@pytest.mark.parametrize('text,line,words', [
    ('SELECT 1;\n\\foo bar\n', 2, 'unknown meta-command \\foo'),
    ('SELECT 1;\n\n  \\\n', 3, 'unknown meta-command \\'),
    ('\\;\n', 1, 'unknown meta-command \\;'),
    ('\\set\n', 1, '\\set needs a variable name and an expression'),
    ('\\set x\n', 1, '\\set needs a variable name and an expression'),
    ('\\set 1x 2\n', 1, '\\set: invalid variable name "1x"'),
    ('\\set x-y 2\n', 1, 'invalid variable name "x-y"'),
    ('\\set x 1 +\n', 1, '\\set x: syntax error at the end'),
    ('\n\\set x random(1)\n', 2, 'random() takes 2 arguments, not 1'),
    ('\\set x nofunc(1)\n', 1, 'unknown function "nofunc"'),
    ('\\set x 1 \\set y 2\n', 1, 'unexpected character "\\"'),
    ('\\set x 1 -- note\n', 1, '-- starts no comment in an expression'),
    ('\\sleep\n', 1, '\\sleep needs a duration'),
    ('\\sleep 1 hours\n', 1, 'unrecognized time unit "hours"'),
    ('\\sleep x\n', 1, 'invalid sleep time "x"'),
    ('\\sleep 1.5\n', 1, 'unrecognized time unit ".5"'),
    ('\\sleep 1 ms extra\n', 1, '\\sleep: too many arguments'),
    ('\\sleep 1ms s\n', 1, '\\sleep: too many arguments'),
    ('\\sleep :1x\n', 1, 'invalid variable name "1x"'),
    ('\\setshell\n', 1, '\\setshell needs a variable name and a command'),
    ('\\setshell x\n', 1, '\\setshell needs a variable name and a command'),
    ('\\setshell 1x echo 1\n', 1, '\\setshell: invalid variable name "1x"'),
    ('\\shell\n', 1, '\\shell needs a command'),
    ("SELECT 1;\nSELECT 'abc;\n", 2, 'unterminated quoted string'),
    ('SELECT "abc;\n', 1, 'unterminated quoted string'),
    ("SELECT E'abc\\';\n", 1, 'unterminated quoted string'),
    ('\n/* open comment\nSELECT 1;\n', 2, 'unterminated /* comment'),
    ('SELECT $x$ a;\n', 1, 'unterminated dollar-quoted string ($x$...)'),
])
def test_every_parse_error_names_the_file_and_the_line(text, line, words):
    assert words in refused(text, line, path='dir/my script.sql')


def test_an_empty_script_is_refused():
    for text in ('', '\n-- only a comment\n', ';;\n'):
        with pytest.raises(errors.ConfigError) as info:
            parse(text, 'e.sql')
        assert str(info.value) == 'script e.sql: no commands in it (an empty script)'


# -- queries and their variables ----------------------------------------------------------

def test_a_query_with_variables():
    (c,) = cmds("SELECT :a, :b::int, ':a', :a + :undefined_one, 'x::y', :\"a\", :'a', ::int;")
    (q,) = c.queries
    assert q.names == ('a', 'b', 'undefined_one')
    # a parameter per use, as pgbench numbers them
    assert q.param_sql == "SELECT $1, $2::int, '$3', $4 + $5, 'x::y', :\"a\", :'a', ::int"
    v = {'a': 1.5, 'b': None}
    # the simple protocol: pgbench substitutes inside quotes too, and leaves unknown names
    assert q.simple(v) == ("SELECT 1.5, NULL::int, '1.5', 1.5 + :undefined_one, 'x::y', "
                           ":\"a\", :'a', ::int")
    v['undefined_one'] = True
    assert q.params(v) == ['1.5', 'NULL', '1.5', '1.5', 'true']
    with pytest.raises(errors.ScriptError) as info:
        q.params({'a': 1})
    assert str(info.value) == 'script t.sql, line 1: undefined variable "b"'


def test_a_query_without_variables_and_unicode_names():
    (q,) = cmds('SELECT 1 AS "xy", 12:30;')[0].queries
    assert (q.names, q.simple({}), q.params({}), q.param_sql) == (
        (), 'SELECT 1 AS "xy", 12:30', [], 'SELECT 1 AS "xy", 12:30')
    (q,) = cmds(u'SELECT :\u0438\u043c\u044f;')[0].queries
    assert q.names == (u'\u0438\u043c\u044f',) and q.simple({u'\u0438\u043c\u044f': 7}) == \
        u'SELECT 7'


# -- files --------------------------------------------------------------------------------

def test_load_reads_a_file_named_by_its_stem(tmpdir):
    path = str(tmpdir.join('my-bench.sql'))
    with io.open(path, 'w', encoding='utf-8') as f:
        f.write(u'\\set aid random(1, 10)\nSELECT :aid;\n')
    s = script.load(path + '@7')
    assert (s.name, s.path, s.weight, len(s.commands)) == ('my-bench', path, 7, 2)
    assert script.load(path).weight == 1
    with pytest.raises(errors.ConfigError) as info:
        script.load(path + '@x')
    assert 'weight' in str(info.value)
    with pytest.raises(errors.ConfigError) as info:
        script.load(str(tmpdir.join('missing.sql')))
    assert 'missing.sql: cannot read it' in str(info.value)
    bad = str(tmpdir.join('bad.sql'))
    with io.open(bad, 'w', encoding='utf-8') as f:
        f.write(u'SELECT 1;\n\\oops\n')
    with pytest.raises(errors.ConfigError) as info:
        script.load(bad + '@2')
    assert str(info.value) == 'script %s, line 2: unknown meta-command \\oops' % bad
