"""A pgbench script file (its text) into the commands a client runs.

pgbench reads a script with psql's lexer, and so does this module, in the parts that
matter to where a command ends:

* An SQL command ends at a ``;`` outside quotes (``'...'`` with ``''``, ``E'...'`` with
  backslash escapes, ``"..."``, ``$tag$...$tag$``), comments (``--`` to the end of the
  line, nested ``/* */``) and parentheses; it may span lines, and one line may hold
  several. ``\\;`` joins queries into one compound command, sent as one query string.
  A backslash meta-command also ends it: ``\\gset``/``\\aset`` take the ``;``'s place,
  any other ends the statement first and then runs.
* Blank lines and ``--`` comments between commands are skipped; a statement of only
  comments or an empty one (``;;``) is dropped (pgbench sends those as empty queries).
* A meta-command starts with ``\\`` where a command may start and ends at the end of
  the line, or the next line's end when the line ends with a backslash.

``parse_text`` raises ``errors.ConfigError('script PATH, line N: ...')`` for anything
wrong that can be known before the run: an unknown meta-command, a bad expression or
argument, an unmatched \\if/\\elif/\\else/\\endif, a pipeline not closed or nested or
holding a \\gset, an unterminated quote or comment.
"""
from __future__ import absolute_import, division, print_function

import bisect
import io
import os
import re
from collections import namedtuple

from gloaddriver import errors
from gloaddriver.workload.script.expr import compile_expression
from gloaddriver.workload.script.functions import EvalError, from_text, to_text

Script = namedtuple('Script', 'name path weight commands')
Query = namedtuple('Query', 'sql names simple params param_sql')
Sql = namedtuple('Sql', 'kind line text queries gset aset')
Set = namedtuple('Set', 'kind line text name expr')
Sleep = namedtuple('Sleep', 'kind line text seconds')
Shell = namedtuple('Shell', 'kind line text name argv')
Branch = namedtuple('Branch', 'kind line text expr jump')
Goto = namedtuple('Goto', 'kind line text jump')
Pipeline = namedtuple('Pipeline', 'kind line text')

META = ('set', 'setshell', 'shell', 'sleep', 'if', 'elif', 'else', 'endif', 'gset', 'aset',
        'startpipeline', 'syncpipeline', 'endpipeline')
MAX_WEIGHT = 2147483647   # pgbench's bound on a script's weight

_NAME = re.compile(r'^[^\W\d]\w*\Z', re.UNICODE)
_SQL_VARIABLE = re.compile(r'::|:([^\W\d]\w*)', re.UNICODE)
# The characters that can change the lexer's state; runs of anything else are skipped
# in one step.
_ORDINARY = re.compile(r'''[^'"$\-/();\\]+''')
_DOLLAR = re.compile(r'\$(?:[^\W\d]\w*)?\$', re.UNICODE)
_SLEEP_NUMBER = re.compile(r'^([-+]?\d+)(.*)\Z')
_UNITS = {'us': 1e-6, 'ms': 1e-3, 's': 1.0}
_LEADING_INT = re.compile(r'^\s*([-+]?\d+)')
_COMMENT_EDGE = re.compile(r'/\*|\*/')


def _collapse(text):
    return ' '.join(text.split())


# -- SQL: variables --------------------------------------------------------------------

def make_query(sql, where):
    """A Query of one SQL text: the pieces between its :variables cut once here, so
    each run is one join (simple) or one list (params). As pgbench numbers them, each
    use of a variable is a parameter of its own ($1, $2... in order of use), so that
    the server infers each one's type from its own place: ``SELECT :a, 2 * :a``."""
    pairs, tail = sql_pieces(sql)
    names = []
    for _lit, name in pairs:
        if name not in names:
            names.append(name)
    names = tuple(names)
    param_sql = ''.join(lit + '$%d' % (i + 1) for i, (lit, _n) in enumerate(pairs)) + tail
    if not pairs:
        return Query(sql, (), lambda v: sql, lambda v: [], sql)
    tt = to_text
    pairs = tuple(pairs)
    uses = tuple(n for _lit, n in pairs)

    def simple(v):
        # pgbench's simple protocol: a name that is not a variable stays as written
        return ''.join([lit + (tt(v[n]) if n in v else ':' + n) for lit, n in pairs]) + tail

    def params(v):
        try:
            return [tt(v[n]) for n in uses]
        except KeyError as e:
            raise errors.ScriptError('%s: undefined variable "%s"' % (where, e.args[0]))
    return Query(sql, names, simple, params, param_sql)


def sql_pieces(sql):
    """([(text before a variable, its name)...], the text after the last) of an SQL text:
    the pieces a run puts the variables' text between."""
    pairs, start = [], 0
    for m in _SQL_VARIABLE.finditer(sql):
        name = m.group(1)
        if name is None:       # a :: cast
            continue
        pairs.append((sql[start:m.start()], name))
        start = m.end()
    return tuple(pairs), sql[start:]


def _only_comments(sql):
    """True when an SQL text holds nothing but whitespace and comments."""
    i, n = 0, len(sql)
    while i < n:
        if sql[i].isspace():
            i += 1
        elif sql.startswith('--', i):
            nl = sql.find('\n', i)
            i = n if nl < 0 else nl + 1
        elif sql.startswith('/*', i):
            i = _comment_end(sql, i)
            if i < 0:
                return False
        else:
            return False
    return True


def _comment_end(text, i):
    """The end of the nested /* comment at i, or -1 when it never ends."""
    depth, j = 0, i
    while True:
        m = _COMMENT_EDGE.search(text, j)
        if m is None:
            return -1
        depth += 1 if m.group() == '/*' else -1
        j = m.end()
        if depth == 0:
            return j


# -- meta-command arguments --------------------------------------------------------------

def _variable_name(word, where, command):
    if not _NAME.match(word):
        raise errors.ConfigError('%s: \\%s: invalid variable name "%s" (letters, digits and '
                                 '_, not starting with a digit)' % (where, command, word))
    return word


def _integer_of(value, name, where):
    """\\sleep's number from a variable: pgbench reads its text's leading integer."""
    if type(value) is int:
        return value
    m = _LEADING_INT.match(value if isinstance(value, (str, type(u''))) else to_text(value))
    if value is None or type(value) is bool or m is None:
        raise errors.ScriptError('%s: \\sleep: invalid sleep time "%s" for variable "%s"'
                                 % (where, to_text(value), name))
    return int(m.group(1))


def _sleep(words, where):
    """seconds(v) of \\sleep N [us|ms|s], N an integer or a :variable."""
    if not words:
        raise errors.ConfigError('%s: \\sleep needs a duration: \\sleep N [us|ms|s]' % where)
    if len(words) > 2:
        raise errors.ConfigError('%s: \\sleep: too many arguments' % where)
    first, unit = words[0], (words[1] if len(words) == 2 else '')
    m = _SLEEP_NUMBER.match(first)
    if m and m.group(2):
        if unit:
            raise errors.ConfigError('%s: \\sleep: too many arguments' % where)
        unit = m.group(2)
    if not first.startswith(':') and not m:
        raise errors.ConfigError('%s: \\sleep: invalid sleep time "%s": an integer or a '
                                 ':variable' % (where, first))
    scale = _UNITS.get((unit or 's').lower())
    if scale is None:
        raise errors.ConfigError('%s: \\sleep: unrecognized time unit "%s" (us, ms or s)'
                                 % (where, unit))
    if m:
        seconds = max(0, int(m.group(1))) * scale
        return lambda v: seconds
    name = _variable_name(first[1:], where, 'sleep')

    def seconds(v):
        try:
            value = v[name]
        except KeyError:
            raise errors.ScriptError('%s: \\sleep: undefined variable "%s"' % (where, name))
        return max(0, _integer_of(value, name, where)) * scale
    return seconds


def _argv(words, where):
    """argv(v) of \\shell/\\setshell: ``:name`` is the variable's text, ``::x`` is ``:x``."""
    parts = []
    for w in words:
        if w.startswith('::'):
            parts.append((w[1:], None))
        elif w.startswith(':') and _NAME.match(w[1:]):
            parts.append((None, w[1:]))
        else:
            parts.append((w, None))
    parts = tuple(parts)
    tt = to_text

    def argv(v):
        try:
            return [tt(v[n]) if n is not None else lit for lit, n in parts]
        except KeyError as e:
            raise errors.ScriptError('%s: undefined variable "%s"' % (where, e.args[0]))
    return argv


# -- the script lexer --------------------------------------------------------------------

class _Builder(object):
    """One pass over a script's text, appending commands; \\if blocks and pipelines
    are followed as they open and close."""

    def __init__(self, text, path):
        self.text = text.replace('\r\n', '\n')
        self.path = path
        self.line_starts = [0] + [m.end() for m in re.finditer('\n', self.text)]
        self.commands = []
        self.ifs = []            # open \if blocks: [line, branch index, gotos, else seen]
        self.pipeline = None     # line of the open \startpipeline
        self.last_sql = None     # index of the SQL command a \gset on its own would end

    def line(self, pos):
        return bisect.bisect_right(self.line_starts, pos)

    def where(self, pos):
        return 'script %s, line %d' % (self.path, self.line(pos))

    def fail(self, pos, message):
        raise errors.ConfigError('%s: %s' % (self.where(pos), message))

    def build(self):
        text, i, n = self.text, 0, len(self.text)
        while i < n:
            if text[i].isspace():
                i += 1
            elif text.startswith('--', i):
                nl = text.find('\n', i)
                i = n if nl < 0 else nl
            elif text[i] == '\\':
                i = self.meta(i)
            else:
                i = self.statement(i)
        if self.ifs:
            raise errors.ConfigError('script %s, line %d: \\if without a matching \\endif'
                                     % (self.path, self.ifs[-1][0]))
        if self.pipeline is not None:
            raise errors.ConfigError('script %s, line %d: \\startpipeline without a matching '
                                     '\\endpipeline' % (self.path, self.pipeline))
        if not self.commands:
            raise errors.ConfigError('script %s: no commands in it (an empty script)'
                                     % self.path)
        return tuple(self.commands)

    # SQL statements

    def statement(self, start):
        """Scan one SQL command from start; returns where scanning goes on."""
        text, n = self.text, len(self.text)
        i, depth, qstart, parts = start, 0, start, []
        while i < n:
            m = _ORDINARY.match(text, i)
            if m:
                i = m.end()
                continue
            c = text[i]
            if c == "'":
                i = self.quoted(i, "'", i > 0 and text[i - 1] in 'eE' and
                                not (i > 1 and (text[i - 2].isalnum() or text[i - 2] == '_')))
            elif c == '"':
                i = self.quoted(i, '"', False)
            elif c == '$':
                i = self.dollar(i)
            elif text.startswith('--', i):
                nl = text.find('\n', i)
                i = n if nl < 0 else nl
            elif text.startswith('/*', i):
                i = _comment_end(text, i)
                if i < 0:
                    self.fail(start, 'unterminated /* comment')
            elif c in '()':
                depth = depth + 1 if c == '(' else max(0, depth - 1)
                i += 1
            elif c == ';' and depth == 0:
                parts.append((qstart, i))
                self.sql(start, i + 1, parts)
                return i + 1
            elif c == '\\':
                if text.startswith('\\;', i):
                    parts.append((qstart, i))
                    i = qstart = i + 2
                    continue
                parts.append((qstart, i))
                return self.sql_ended_by_meta(start, i, parts)
            else:
                i += 1
        parts.append((qstart, n))
        self.sql(start, n, parts)
        return n

    def sql_ended_by_meta(self, start, i, parts):
        """A backslash in a statement: \\gset/\\aset end it, any other meta-command
        ends it and then runs."""
        end, name, words = self.meta_words(i)
        if name in ('gset', 'aset'):
            self.sql(start, end, parts, (name, self.prefix(i, name, words)))
            return end
        self.sql(start, i, parts)
        return i

    def quoted(self, i, quote, escapes):
        text, j = self.text, i + 1
        while True:
            k = text.find(quote, j)
            if escapes:
                b = text.find('\\', j)
                if 0 <= b < k or (k < 0 <= b):
                    j = b + 2
                    continue
            if k < 0:
                self.fail(i, 'unterminated quoted string (%s...)' % quote)
            if text.startswith(quote * 2, k):
                j = k + 2
                continue
            return k + 1

    def dollar(self, i):
        text = self.text
        m = _DOLLAR.match(text, i)
        if m is None or (i > 0 and (text[i - 1].isalnum() or text[i - 1] in '_$')):
            return i + 1   # $1, or a $ inside a name
        end = text.find(m.group(), m.end())
        if end < 0:
            self.fail(i, 'unterminated dollar-quoted string (%s...)' % m.group())
        return end + len(m.group())

    def sql(self, start, end, parts, result=None):
        """Append one Sql command of its queries' spans (empty ones dropped)."""
        where = self.where(start)
        queries = []
        for b, e in parts:
            sql = self.text[b:e].strip()
            if sql and not _only_comments(sql):
                queries.append(make_query(sql, where))
        if not queries:
            if result is not None:
                self.fail(start, '\\%s must follow an SQL command' % result[0])
            return
        gset = aset = None
        if result is not None:
            self.check_result(start, result[0])
            gset, aset = (result[1], None) if result[0] == 'gset' else (None, result[1])
        self.commands.append(Sql('sql', self.line(start), _collapse(self.text[start:end]),
                                 tuple(queries), gset, aset))
        self.last_sql = len(self.commands) - 1 if result is None else None

    def check_result(self, pos, name):
        if self.pipeline is not None:
            self.fail(pos, '\\%s is not allowed in a pipeline (its results come only at '
                           '\\endpipeline; pgbench refuses it too)' % name)

    def prefix(self, pos, name, words):
        if len(words) > 1:
            self.fail(pos, '\\%s takes at most one argument, a prefix' % name)
        return words[0] if words else ''

    # meta-commands

    def meta_words(self, i):
        """(end, name, words) of the meta-command at i; end is past its last line."""
        end, raw = self.meta_text(i)
        words = raw[1:].split()
        name = words[0].lower() if words else ''
        return end, name, words[1:]

    def meta_text(self, i):
        """(end, text) of the meta-command at i, continuation lines joined."""
        text, n, pieces = self.text, len(self.text), []
        while True:
            nl = text.find('\n', i)
            line = text[i:n if nl < 0 else nl]
            if line.endswith('\\') and nl >= 0:
                pieces.append(line[:-1])
                i = nl + 1
                continue
            pieces.append(line)
            return (n if nl < 0 else nl + 1), ' '.join(pieces)

    def meta(self, i):
        """Handle the meta-command at i (not inside a statement); returns its end."""
        end, raw = self.meta_text(i)
        words = raw[1:].split()
        name = words[0].lower() if words else ''
        args = raw[1:].strip()[len(words[0]):].strip() if words else ''
        if name not in META:
            self.fail(i, 'unknown meta-command \\%s' % (words[0] if words else ''))
        where, text, line = self.where(i), _collapse(raw), self.line(i)
        if name in ('gset', 'aset'):
            self.result_of_last(i, name, words[1:])
            return end
        self.last_sql = None
        if name in ('set', 'setshell', 'shell', 'sleep'):
            self.commands.append(self.simple_meta(name, args, words[1:], where, text, line))
        elif name in ('if', 'elif', 'else', 'endif'):
            self.conditional(name, args, where, text, line)
        else:
            self.pipeline_command(name, words[1:], i, text, line)
        return end

    def result_of_last(self, i, name, words):
        """\\gset/\\aset on a line of their own: they end the SQL command just before."""
        last = self.last_sql
        if last is None or last != len(self.commands) - 1:
            self.fail(i, '\\%s must follow an SQL command' % name)
        self.check_result(i, name)
        prefix = self.prefix(i, name, words)
        cmd = self.commands[last]
        self.commands[last] = cmd._replace(
            text='%s \\%s%s' % (cmd.text, name, ' ' + prefix if prefix else ''),
            **{name: prefix})
        self.last_sql = None

    def simple_meta(self, name, args, words, where, text, line):
        if name == 'set':
            parts = args.split(None, 1)
            if len(parts) < 2:
                raise errors.ConfigError('%s: \\set needs a variable name and an expression'
                                         % where)
            var = _variable_name(parts[0], where, 'set')
            return Set('set', line, text, var,
                       compile_expression(parts[1], where, '\\set %s' % var))
        if name == 'sleep':
            return Sleep('sleep', line, text, _sleep(words, where))
        if name == 'shell':
            if not words:
                raise errors.ConfigError('%s: \\shell needs a command' % where)
            return Shell('shell', line, text, None, _argv(words, where))
        if len(words) < 2:
            raise errors.ConfigError('%s: \\setshell needs a variable name and a command'
                                     % where)
        var = _variable_name(words[0], where, 'setshell')
        return Shell('setshell', line, text, var, _argv(words[1:], where))

    def conditional(self, name, args, where, text, line):
        """\\if/\\elif/\\else/\\endif as Branch and Goto commands (see the package doc)."""
        cmds = self.commands
        if name in ('if', 'elif'):
            if not args:
                raise errors.ConfigError('%s: \\%s needs a condition' % (where, name))
            expr = compile_expression(args, where, '\\' + name)
        elif args:
            raise errors.ConfigError('%s: \\%s takes no argument' % (where, name))
        if name == 'if':
            self.ifs.append([line, len(cmds), [], False])
            cmds.append(Branch('branch', line, text, expr, None))
            return
        if not self.ifs:
            raise errors.ConfigError('%s: \\%s without a matching \\if' % (where, name))
        block = self.ifs[-1]
        if name in ('elif', 'else') and block[3]:
            raise errors.ConfigError('%s: \\%s after \\else' % (where, name))
        if name == 'endif':
            self.ifs.pop()
            self.patch(block[1], len(cmds))
            for g in block[2]:
                self.patch(g, len(cmds))
            return
        block[2].append(len(cmds))           # the branch above jumps over the rest
        cmds.append(Goto('goto', line, text, None))
        self.patch(block[1], len(cmds))      # ... and when false, comes here
        if name == 'elif':
            block[1] = len(cmds)
            cmds.append(Branch('branch', line, text, expr, None))
        else:
            block[1], block[3] = None, True

    def patch(self, index, jump):
        if index is not None:
            self.commands[index] = self.commands[index]._replace(jump=jump)

    def pipeline_command(self, name, words, i, text, line):
        if words:
            self.fail(i, '\\%s takes no argument' % name)
        if name == 'startpipeline':
            if self.pipeline is not None:
                self.fail(i, '\\startpipeline inside a pipeline (opened at line %d)'
                          % self.pipeline)
            self.pipeline = line
        elif self.pipeline is None:
            self.fail(i, '\\%s outside a pipeline' % name)
        elif name == 'endpipeline':
            self.pipeline = None
        self.commands.append(Pipeline(name, line, text))


# -- public ------------------------------------------------------------------------------

def parse_text(text, path, name, weight):
    """A Script of a script's text; ``path`` names it in every message."""
    return Script(name, path, weight, _Builder(text, path).build())


def split_weight(spec, what):
    """('NAME', weight) of 'NAME[@W]': the weight a whole number in pgbench's range,
    1 when not given."""
    if '@' not in spec:
        return spec, 1
    base, _, w = spec.rpartition('@')
    if not re.match(r'^\d+\Z', w.strip()) or int(w) > MAX_WEIGHT:
        raise errors.ConfigError('%s %s: the weight after @ must be a whole number from 0 to '
                                 '%d' % (what, spec, MAX_WEIGHT))
    return base, int(w)


def load(spec):
    """A Script of 'FILE[@W]', named after the file's stem."""
    path, weight = split_weight(spec, '--script')
    try:
        with io.open(path, encoding='utf-8') as f:
            text = f.read()
    except (IOError, OSError) as e:
        raise errors.ConfigError('script %s: cannot read it: %s' % (path, e.strerror or e))
    except UnicodeDecodeError as e:
        raise errors.ConfigError('script %s: not UTF-8 text: %s' % (path, e))
    name = os.path.splitext(os.path.basename(path))[0]
    return parse_text(text, path, name, weight)


def value_of_text(text, name='?'):
    """A variable's text (-D, \\gset, \\setshell) as the value an expression reads;
    ValueError with pgbench's words when it is malformed."""
    try:
        return from_text(text, name)
    except EvalError as e:
        raise ValueError(str(e))
